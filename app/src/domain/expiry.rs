//! When a question stops waiting (SPEC §3): precedence of the deadline sources, and the clamp every deadline
//! obeys, in one place.

use chrono::{DateTime, Duration, Utc};

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

impl ExpiryPolicy {
    /// The instance's default window: the operator's setting, else the shipped default.
    pub fn default_window(&self) -> Duration {
        self.operator_minutes
            .map(|minutes| Duration::minutes(i64::from(minutes)))
            .unwrap_or(DEFAULT_WINDOW)
    }

    /// The deadline of a round created at `now`: the producer's own deadline if it named one, else the
    /// instance default; either way clamped to `[now + 1 minute, now + 7 days]`.
    pub fn deadline(&self, now: DateTime<Utc>, producer: Option<DateTime<Utc>>) -> DateTime<Utc> {
        let wanted = producer.unwrap_or_else(|| now + self.default_window());
        wanted.clamp(now + MIN_WINDOW, now + MAX_WINDOW)
    }
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
