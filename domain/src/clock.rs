//! Time, injected: production reads the system clock, tests move a manual one.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};

/// Where "now" comes from. Always timezone-aware UTC.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[expect(
        clippy::disallowed_methods,
        reason = "the real clock is the one place that reads the system time"
    )]
    fn now(&self) -> DateTime<Utc> {
        // Times are kept to the millisecond, so what is acknowledged is what is stored.
        crate::expiry::stored_precision(Utc::now())
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Arc::new(Mutex::new(start)),
        }
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_it() {
        let start = DateTime::from_timestamp(1_700_000_000, 0).expect("valid timestamp");
        let clock = ManualClock::new(start);
        let shared = clock.clone();
        assert_eq!(clock.now(), start);
        shared.advance(Duration::minutes(5));
        assert_eq!(clock.now(), start + Duration::minutes(5));
    }
}
