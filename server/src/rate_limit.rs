//! Per-key token buckets for the routes anyone holding a URL can call, so a runaway producer or a stranger
//! cannot flood an instance. Generous enough that a producer polling each question once a second is never
//! throttled.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use crate::api::error::ApiError;

/// A bucket's refill rate and size.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub per_second: f64,
    pub burst: f64,
}

/// Creating questions: 5 a second sustained, bursts of 30, per session token (or per address when anonymous).
pub const CREATES: Rate = Rate {
    per_second: 5.0,
    burst: 30.0,
};
/// Polling: 5 a second sustained, bursts of 20, per question (the real client polls at most once a second).
pub const POLLS: Rate = Rate {
    per_second: 5.0,
    burst: 20.0,
};

/// Keys beyond which idle buckets are forgotten.
const MAX_KEYS: usize = 100_000;

#[derive(Clone, Default)]
pub struct RateLimiter {
    buckets: Arc<Mutex<HashMap<String, (f64, Instant)>>>,
}

impl RateLimiter {
    /// Takes one token from `key`'s bucket, or refuses with `rate_limited`.
    pub fn check(&self, key: &str, rate: Rate) -> Result<(), ApiError> {
        let now = Instant::now();
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if buckets.len() >= MAX_KEYS {
            // Full buckets are indistinguishable from new ones, so only those are dropped.
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate.per_second < rate.burst
            });
        }
        let (tokens, at) = buckets.entry(key.to_owned()).or_insert((rate.burst, now));
        *tokens =
            (*tokens + now.duration_since(*at).as_secs_f64() * rate.per_second).min(rate.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(ApiError::new(
                "rate_limited",
                format!(
                    "Too many requests; slow down to {} a second.",
                    rate.per_second
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_pass_then_excess_is_refused_per_key() {
        let limiter = RateLimiter::default();
        let rate = Rate {
            per_second: 1.0,
            burst: 3.0,
        };
        for _ in 0..3 {
            assert!(limiter.check("a", rate).is_ok());
        }
        assert_eq!(
            limiter.check("a", rate).map_err(|e| e.code()),
            Err("rate_limited")
        );
        assert!(
            limiter.check("b", rate).is_ok(),
            "another key has its own bucket"
        );
    }
}
