//! Times as the pages say them: countdowns, clock times and relative times in the reader's time zone (the
//! browser's own on the client), and minutes of the day as a time input reads and writes them.

/// How long until `deadline_ms`, for a countdown: "4 min 05 s", "2 h 10 min", or "due now".
pub fn countdown(deadline_ms: i64, now_ms: i64) -> String {
    let left = (deadline_ms - now_ms) / 1000;
    if left <= 0 {
        return "due now".to_owned();
    }
    let (hours, minutes, seconds) = (left / 3600, (left % 3600) / 60, left % 60);
    if hours >= 24 {
        format!("{} d {} h", hours / 24, hours % 24)
    } else if hours > 0 {
        format!("{hours} h {minutes:02} min")
    } else {
        format!("{minutes} min {seconds:02} s")
    }
}

/// A UTC time a person can read: "2026-03-01 09:30 UTC".
pub fn clock_time(at_ms: i64) -> String {
    use chrono::{Datelike, Timelike};
    // Written by hand: chrono's format strings would add weight to the browser bundle.
    chrono::DateTime::from_timestamp_millis(at_ms)
        .map(|at| {
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02} UTC",
                at.year(),
                at.month(),
                at.day(),
                at.hour(),
                at.minute()
            )
        })
        .unwrap_or_default()
}

/// How long ago (or how soon) `at_ms` is at `now_ms`, as a person says it: "just now", "4 min ago", "in 9 min",
/// "3 h ago", "2 d ago".
pub fn relative_time(at_ms: i64, now_ms: i64) -> String {
    let seconds = now_ms.saturating_sub(at_ms) / 1000;
    let span = seconds.unsigned_abs();
    if span < 45 {
        return "just now".to_owned();
    }
    let minutes = (span + 30) / 60;
    let amount = if minutes < 60 {
        format!("{minutes} min")
    } else if minutes < 24 * 60 {
        format!("{} h", (minutes + 30) / 60)
    } else {
        format!("{} d", (minutes + 12 * 60) / (24 * 60))
    };
    if seconds >= 0 {
        format!("{amount} ago")
    } else {
        format!("in {amount}")
    }
}

/// `at_ms` in the time zone `zone` (an IANA name): "2026-03-01 18:30 Asia/Tokyo"; in UTC, as
/// [`clock_time`], without a zone or with one this side does not know. The server (jiff) and the browser
/// (`Intl`) write it the same way, so a page hydrates without a difference.
pub fn zoned_time(at_ms: i64, zone: Option<&str>) -> String {
    match zone.and_then(|zone| local_parts(at_ms, zone).map(|parts| (zone, parts))) {
        Some((zone, [year, month, day, hour, minute])) => {
            format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} {zone}")
        }
        None => clock_time(at_ms),
    }
}

/// Year, month, day, hour and minute of `at_ms` in `zone`.
#[cfg(feature = "ssr")]
fn local_parts(at_ms: i64, zone: &str) -> Option<[i64; 5]> {
    let zone = jiff::tz::TimeZone::get(zone).ok()?;
    let at = jiff::Timestamp::from_millisecond(at_ms)
        .ok()?
        .to_zoned(zone);
    Some([
        i64::from(at.year()),
        i64::from(at.month()),
        i64::from(at.day()),
        i64::from(at.hour()),
        i64::from(at.minute()),
    ])
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn local_parts(at_ms: i64, zone: &str) -> Option<[i64; 5]> {
    browser_zone::local_parts(at_ms, zone)
}

#[cfg(not(any(feature = "ssr", feature = "hydrate")))]
fn local_parts(_at_ms: i64, _zone: &str) -> Option<[i64; 5]> {
    None
}

/// The browser's own time zone (`None` on the server, which cannot know it).
pub fn browser_time_zone() -> Option<String> {
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        browser_zone::own()
    }
    #[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
    {
        None
    }
}

/// The browser's `Intl`: a zone it does not know throws, which is caught rather than left to panic.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod browser_zone {
    use wasm_bindgen::{JsCast, JsValue, prelude::wasm_bindgen};

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(catch, js_namespace = Intl, js_name = DateTimeFormat)]
        fn date_time_format(locales: &JsValue, options: &JsValue) -> Result<JsValue, JsValue>;
    }

    fn format(options: &[(&str, &str)]) -> Option<js_sys::Intl::DateTimeFormat> {
        let object = js_sys::Object::new();
        for (key, value) in options {
            js_sys::Reflect::set(&object, &JsValue::from_str(key), &JsValue::from_str(value))
                .ok()?;
        }
        let locales = js_sys::Array::of1(&JsValue::from_str("en-US"));
        date_time_format(&locales, &object)
            .ok()
            .map(JsCast::unchecked_into)
    }

    pub(super) fn local_parts(at_ms: i64, zone: &str) -> Option<[i64; 5]> {
        let format = format(&[
            ("timeZone", zone),
            ("year", "numeric"),
            ("month", "numeric"),
            ("day", "numeric"),
            ("hour", "numeric"),
            ("minute", "numeric"),
            ("hourCycle", "h23"),
        ])?;
        let date = js_sys::Date::new(&JsValue::from_f64(at_ms as f64));
        let mut parts = [0_i64; 5];
        for part in format.format_to_parts(&date).iter() {
            let kind = js_sys::Reflect::get(&part, &JsValue::from_str("type"))
                .ok()?
                .as_string()?;
            let value = js_sys::Reflect::get(&part, &JsValue::from_str("value"))
                .ok()?
                .as_string()?;
            let slot = match kind.as_str() {
                "year" => 0,
                "month" => 1,
                "day" => 2,
                "hour" => 3,
                "minute" => 4,
                _ => continue,
            };
            parts[slot] = value.parse().ok()?;
        }
        Some(parts)
    }

    pub(super) fn own() -> Option<String> {
        let options = format(&[])?.resolved_options();
        js_sys::Reflect::get(&options, &JsValue::from_str("timeZone"))
            .ok()?
            .as_string()
    }
}

/// `HH:MM` for a minute of the day.
pub fn clock_minute(minute: u16) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// A minute of the day from `HH:MM` (what `<input type="time">` posts).
pub fn parse_clock_minute(text: &str) -> Option<u16> {
    let (hours, minutes) = text.trim().split_once(':')?;
    let (hours, minutes): (u16, u16) = (
        hours.parse().ok()?,
        minutes.get(..2).unwrap_or(minutes).parse().ok()?,
    );
    (hours < 24 && minutes < 60).then_some(hours * 60 + minutes)
}

#[cfg(test)]
mod clock_minute_tests {
    use super::*;

    #[test]
    fn times_of_day_read_and_print_as_a_time_input_does() {
        assert_eq!(parse_clock_minute("22:30"), Some(22 * 60 + 30));
        assert_eq!(
            parse_clock_minute("07:05:00"),
            Some(7 * 60 + 5),
            "seconds are ignored"
        );
        assert_eq!(clock_minute(7 * 60 + 5), "07:05");
        for bad in ["", "24:00", "12:60", "noon", "-1:00"] {
            assert_eq!(parse_clock_minute(bad), None, "{bad}");
        }
    }
}
