//! When a question stops waiting (docs/deadlines.md): the deadline sources,
//! how far each asker is trusted with its own, and the bounds every deadline obeys, in one place.

use chrono::{DateTime, Duration, Utc};

use super::ManagedInputError;

/// The shipped default window when neither the producer nor the operator names one.
pub const DEFAULT_WINDOW: Duration = Duration::minutes(60);
/// No deadline may be sooner than this after creation (no born-expired questions).
pub const MIN_WINDOW: Duration = Duration::minutes(1);
/// No deadline may be later than this after creation (nobody pins a session for years).
pub const MAX_WINDOW: Duration = Duration::days(7);

/// The operator's part of the decision: `ELICITATION_EXPIRATION_MINUTES`, already parsed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpiryPolicy {
    pub operator_minutes: Option<u32>,
}

/// How far Anteroom trusts the asker's own deadline: a caller holding the session's token or an API key may
/// end its question as soon as it likes; an anonymous caller may not end a question on someone else's
/// session sooner than [`MIN_WINDOW`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineTrust {
    Trusted,
    Anonymous,
}

/// When a new question stops waiting, and whether that moment is the asker's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// The moment the question ends for people: nobody may answer after it.
    pub ends_at: DateTime<Utc>,
    /// The deadline the asker named for itself, as Anteroom accepted it (`None` when it named none).
    pub asker: Option<DateTime<Utc>>,
}

impl ExpiryPolicy {
    /// The instance's default window: the operator's setting, else the shipped default.
    pub fn default_window(&self) -> Duration {
        self.operator_minutes
            .map(|minutes| Duration::minutes(i64::from(minutes)))
            .unwrap_or(DEFAULT_WINDOW)
    }

    /// The deadline of a round created at `now` when the asker named none (or may not be trusted with one):
    /// the instance default, within `[now + 1 minute, now + 7 days]`.
    pub fn deadline(&self, now: DateTime<Utc>, producer: Option<DateTime<Utc>>) -> DateTime<Utc> {
        let wanted = producer.unwrap_or_else(|| now + self.default_window());
        stored_precision(wanted.clamp(now + MIN_WINDOW, now + MAX_WINDOW))
    }

    /// When a question created at `now` stops waiting (docs/deadlines.md). The asker's own deadline is the
    /// moment it stops polling, so the question ends for people then too: nobody is invited to answer an asker
    /// that has gone. Every deadline is at most seven days away. A trusted asker's deadline that has already
    /// passed is refused; an anonymous asker's is raised to one minute from now, so an anonymous caller
    /// cannot mint a question that is lost before anybody could see it.
    pub fn deadlines(
        &self,
        now: DateTime<Utc>,
        asker: Option<DateTime<Utc>>,
        trust: DeadlineTrust,
    ) -> Result<Deadlines, ManagedInputError> {
        let Some(asked) = asker else {
            return Ok(Deadlines {
                ends_at: self.deadline(now, None),
                asker: None,
            });
        };
        let accepted = match trust {
            DeadlineTrust::Anonymous => self.deadline(now, Some(asked)),
            DeadlineTrust::Trusted if asked <= now => {
                return Err(ManagedInputError::validation(format!(
                    "The question's deadline {} has already passed (it is {} now); send a deadline in the future.",
                    wire_time(asked),
                    wire_time(now)
                )));
            }
            DeadlineTrust::Trusted => stored_precision(asked.min(now + MAX_WINDOW)),
        };
        Ok(Deadlines {
            ends_at: accepted,
            asker: Some(accepted),
        })
    }
}

/// `at` cut to the stored precision (milliseconds), so what a reply reports is exactly what is stored.
pub fn stored_precision(at: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(at.timestamp_millis()).unwrap_or(at)
}

/// The one wire format of a time: RFC 3339 in UTC with milliseconds, `2026-12-01T09:30:00.000Z`.
pub fn wire_time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// What reading `ELICITATION_EXPIRATION_MINUTES` gave: a setting, nothing, or a value to warn about and ignore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorMinutes {
    Set(u32),
    Unset,
    Ignored { raw: String, reason: &'static str },
}

impl OperatorMinutes {
    /// Parses the raw variable. Blank means unset; non-numeric, zero or negative is ignored (never fatal).
    pub fn parse(raw: Option<&str>) -> Self {
        let Some(raw) = raw else { return Self::Unset };
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Self::Unset;
        }
        match trimmed.parse::<i64>() {
            Ok(minutes) if minutes <= 0 => Self::Ignored {
                raw: raw.to_owned(),
                reason: "it is zero or negative",
            },
            Ok(minutes) => match u32::try_from(minutes) {
                Ok(minutes) => Self::Set(minutes),
                Err(_) => Self::Ignored {
                    raw: raw.to_owned(),
                    reason: "it is too large",
                },
            },
            Err(_) => Self::Ignored {
                raw: raw.to_owned(),
                reason: "it is not a whole number of minutes",
            },
        }
    }

    pub fn into_policy(self) -> ExpiryPolicy {
        ExpiryPolicy {
            operator_minutes: match self {
                Self::Set(minutes) => Some(minutes),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).expect("valid timestamp")
    }

    #[test]
    fn producer_deadline_outranks_operator_and_default() {
        let policy = ExpiryPolicy {
            operator_minutes: Some(30),
        };
        let producer = now() + Duration::minutes(10);
        assert_eq!(policy.deadline(now(), Some(producer)), producer);
    }

    #[test]
    fn operator_minutes_outrank_the_shipped_default() {
        let policy = ExpiryPolicy {
            operator_minutes: Some(30),
        };
        assert_eq!(policy.deadline(now(), None), now() + Duration::minutes(30));
    }

    #[test]
    fn shipped_default_is_sixty_minutes() {
        assert_eq!(
            ExpiryPolicy::default().deadline(now(), None),
            now() + Duration::minutes(60)
        );
    }

    #[test]
    fn a_past_deadline_is_clamped_to_one_minute_from_now() {
        let past = now() - Duration::hours(3);
        assert_eq!(
            ExpiryPolicy::default().deadline(now(), Some(past)),
            now() + Duration::minutes(1)
        );
    }

    #[test]
    fn a_deadline_years_out_is_clamped_to_seven_days() {
        let far = now() + Duration::days(3650);
        assert_eq!(
            ExpiryPolicy::default().deadline(now(), Some(far)),
            now() + Duration::days(7)
        );
        let operator = ExpiryPolicy {
            operator_minutes: Some(60 * 24 * 30),
        };
        assert_eq!(operator.deadline(now(), None), now() + Duration::days(7));
    }

    #[test]
    fn a_trusted_askers_short_deadline_is_kept_and_ends_the_question() {
        let soon = now() + Duration::seconds(20);
        let decided = ExpiryPolicy::default()
            .deadlines(now(), Some(soon), DeadlineTrust::Trusted)
            .expect("accepted");
        assert_eq!(decided.ends_at, soon);
        assert_eq!(decided.asker, Some(soon));
    }

    #[test]
    fn a_trusted_askers_past_deadline_is_refused() {
        for past in [now(), now() - Duration::seconds(1)] {
            let refused = ExpiryPolicy::default()
                .deadlines(now(), Some(past), DeadlineTrust::Trusted)
                .expect_err("refused");
            assert_eq!(refused.code(), "validation_error");
        }
    }

    #[test]
    fn an_anonymous_askers_deadline_keeps_the_one_minute_floor() {
        let decided = ExpiryPolicy::default()
            .deadlines(
                now(),
                Some(now() - Duration::hours(1)),
                DeadlineTrust::Anonymous,
            )
            .expect("accepted");
        assert_eq!(decided.ends_at, now() + MIN_WINDOW);
        assert_eq!(decided.asker, Some(now() + MIN_WINDOW));
    }

    #[test]
    fn every_deadline_is_at_most_seven_days_and_stored_to_the_millisecond() {
        let far = now() + Duration::days(3650);
        for trust in [DeadlineTrust::Trusted, DeadlineTrust::Anonymous] {
            let decided = ExpiryPolicy::default()
                .deadlines(now(), Some(far), trust)
                .expect("accepted");
            assert_eq!(decided.ends_at, now() + MAX_WINDOW);
        }
        let fine = now() + Duration::nanoseconds(90_123_456_789);
        let decided = ExpiryPolicy::default()
            .deadlines(now(), Some(fine), DeadlineTrust::Trusted)
            .expect("accepted");
        assert_eq!(decided.ends_at, now() + Duration::milliseconds(90_123));
        assert_eq!(wire_time(decided.ends_at), "2027-01-15T08:01:30.123Z");
        let none = ExpiryPolicy::default()
            .deadlines(now(), None, DeadlineTrust::Trusted)
            .expect("accepted");
        assert_eq!(none.asker, None);
    }

    #[test]
    fn expiration_minutes_blank_is_unset() {
        assert_eq!(OperatorMinutes::parse(None), OperatorMinutes::Unset);
        assert_eq!(OperatorMinutes::parse(Some("")), OperatorMinutes::Unset);
        assert_eq!(OperatorMinutes::parse(Some("   ")), OperatorMinutes::Unset);
    }

    #[test]
    fn expiration_minutes_junk_zero_and_negative_are_ignored() {
        for raw in ["abc", "1.5", "0", "-5", "99999999999"] {
            assert!(
                matches!(
                    OperatorMinutes::parse(Some(raw)),
                    OperatorMinutes::Ignored { .. }
                ),
                "{raw}"
            );
            assert_eq!(
                OperatorMinutes::parse(Some(raw)).into_policy(),
                ExpiryPolicy::default()
            );
        }
    }

    #[test]
    fn expiration_minutes_number_is_set() {
        assert_eq!(
            OperatorMinutes::parse(Some(" 90 ")),
            OperatorMinutes::Set(90)
        );
    }
}
