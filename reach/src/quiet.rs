//! When a person's quiet hours end: the moment pushes and mails held for them go out, worked out in their own
//! time zone (daylight-saving changes included) with the system's time zone database.

use anteroom_domain::reach::QuietHours;
use chrono::{DateTime, Utc};

/// `at`, or when the quiet hours around `at` end. A zone this machine does not know holds nothing (the
/// profile page refuses such a zone, so only a database copied from another machine gets here).
pub fn held_until(quiet: &QuietHours, at: DateTime<Utc>) -> DateTime<Utc> {
    let Ok(zone) = jiff::tz::TimeZone::get(&quiet.time_zone) else {
        tracing::warn!(zone = %quiet.time_zone, "quiet hours: unknown time zone; nothing is held");
        return at;
    };
    let Ok(now) = jiff::Timestamp::from_millisecond(at.timestamp_millis()) else {
        return at;
    };
    let local = now.to_zoned(zone.clone());
    let minute =
        u16::try_from(i32::from(local.hour()) * 60 + i32::from(local.minute())).unwrap_or(0);
    if !quiet.is_quiet_at(minute) {
        return at;
    }
    let until = jiff::civil::Time::new(
        i8::try_from(quiet.until_minute / 60).unwrap_or(0),
        i8::try_from(quiet.until_minute % 60).unwrap_or(0),
        0,
        0,
    );
    let day = if quiet.until_minute <= minute {
        local.date().tomorrow()
    } else {
        Ok(local.date())
    };
    let end = day
        .and_then(|day| day.to_datetime(until.unwrap_or_default()).to_zoned(zone))
        .map(|end| end.timestamp().as_millisecond());
    match end.ok().and_then(DateTime::from_timestamp_millis) {
        Some(end) if end > at => end,
        _ => at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("time")
            .with_timezone(&Utc)
    }

    #[test]
    fn a_night_in_paris_holds_until_seven_local() {
        let night = QuietHours::new(22 * 60, 7 * 60, "Europe/Paris").expect("quiet");
        // 23:30 in Paris (UTC+1 in December) is quiet until 07:00 the next morning, 06:00 UTC.
        assert_eq!(
            held_until(&night, utc("2026-12-04T22:30:00Z")),
            utc("2026-12-05T06:00:00Z")
        );
        // 03:00 in Paris: until 07:00 the same day.
        assert_eq!(
            held_until(&night, utc("2026-12-05T02:00:00Z")),
            utc("2026-12-05T06:00:00Z")
        );
        // Noon in Paris is not quiet.
        assert_eq!(
            held_until(&night, utc("2026-12-05T11:00:00Z")),
            utc("2026-12-05T11:00:00Z")
        );
        // In July Paris is UTC+2: 07:00 local is 05:00 UTC.
        assert_eq!(
            held_until(&night, utc("2026-07-01T23:00:00Z")),
            utc("2026-07-02T05:00:00Z")
        );
    }

    #[test]
    fn an_unknown_zone_holds_nothing() {
        let quiet = QuietHours::new(0, 23 * 60, "Mars/Olympus_Mons").expect("syntax is fine");
        let at = utc("2026-12-04T12:00:00Z");
        assert_eq!(held_until(&quiet, at), at);
    }
}
