//! Per-key rate limits (`governor`'s GCRA) for the routes anyone holding a URL or reaching the host can call,
//! so a runaway producer or a stranger cannot flood an instance. Generous enough that a producer polling each
//! question once a second is never throttled.
//!
//! Keys are hashed (with a per-process random seed) into a fixed number of buckets, so what an attacker
//! sends as a key — a 16 KB request id, a million usernames — costs a bounded amount of memory: at most
//! [`BUCKETS`] small entries per limit.

use std::{
    hash::{BuildHasher, Hash, RandomState},
    num::NonZeroU32,
    sync::Arc,
};

use governor::{Quota, RateLimiter as Gcra, clock::Clock, clock::DefaultClock};

use crate::error::ApiError;

/// Buckets per limit: keys beyond this share buckets (rarely, and only ever more strictly).
pub const BUCKETS: u32 = 1 << 16;

/// A limit's sustained rate and burst.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub per_second: u32,
    pub burst: u32,
}

/// Creating questions: 5 a second sustained, bursts of 30, per session (or per API key or address on the bare
/// route).
pub const CREATES: Rate = Rate {
    per_second: 5,
    burst: 30,
};
/// Polling: 5 a second sustained, bursts of 20, per question (the real client polls at most once a second).
pub const POLLS: Rate = Rate {
    per_second: 5,
    burst: 20,
};
/// Sign-in attempts per username: one a second sustained, bursts of 10.
pub const SIGN_INS_PER_NAME: Rate = Rate {
    per_second: 1,
    burst: 10,
};
/// Sign-in attempts per address: 5 a second sustained, bursts of 30 (a shared office address still signs in).
pub const SIGN_INS_PER_ADDRESS: Rate = Rate {
    per_second: 5,
    burst: 30,
};

/// One limit over hashed keys.
pub struct KeyedLimit {
    gcra: Gcra<u32, governor::state::keyed::DefaultKeyedStateStore<u32>, DefaultClock>,
    seed: RandomState,
    rate: Rate,
}

impl KeyedLimit {
    pub fn new(rate: Rate) -> Self {
        let per_second = NonZeroU32::new(rate.per_second).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(rate.burst).unwrap_or(NonZeroU32::MIN);
        Self {
            gcra: Gcra::keyed(Quota::per_second(per_second).allow_burst(burst)),
            seed: RandomState::new(),
            rate,
        }
    }

    fn bucket<K: Hash + ?Sized>(&self, key: &K) -> u32 {
        let hash = self.seed.hash_one(key);
        // The low bits of a keyed SipHash are uniform; the remainder is below `BUCKETS`, so it fits.
        u32::try_from(hash % u64::from(BUCKETS)).unwrap_or(0)
    }

    /// Takes one cell from `key`'s bucket, or refuses with `rate_limited` and when to try again. A key of
    /// several parts is a tuple, hashed as it is (nothing is joined into a new string per request).
    pub fn check<K: Hash + ?Sized>(&self, key: &K) -> Result<(), ApiError> {
        self.check_seconds(key).map_err(|retry_after| {
            ApiError::rate_limited(
                retry_after,
                format!(
                    "Too many requests; slow down to {} a second.",
                    self.rate.per_second
                ),
            )
        })
    }

    /// Takes one cell from `key`'s bucket, or says in how many whole seconds one is free again.
    pub fn check_seconds<K: Hash + ?Sized>(&self, key: &K) -> Result<(), u64> {
        self.gcra.check_key(&self.bucket(key)).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
    }

    /// Buckets in use (bounded by [`BUCKETS`]).
    pub fn len(&self) -> usize {
        self.gcra.len()
    }

    pub fn is_empty(&self) -> bool {
        self.gcra.is_empty()
    }
}

/// Every limit of an instance.
#[derive(Clone)]
pub struct RateLimiter {
    pub creates: Arc<KeyedLimit>,
    pub polls: Arc<KeyedLimit>,
    pub sign_ins_per_name: Arc<KeyedLimit>,
    pub sign_ins_per_address: Arc<KeyedLimit>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self {
            creates: Arc::new(KeyedLimit::new(CREATES)),
            polls: Arc::new(KeyedLimit::new(POLLS)),
            sign_ins_per_name: Arc::new(KeyedLimit::new(SIGN_INS_PER_NAME)),
            sign_ins_per_address: Arc::new(KeyedLimit::new(SIGN_INS_PER_ADDRESS)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_pass_then_excess_is_refused_per_key_with_a_retry_time() {
        let limit = KeyedLimit::new(Rate {
            per_second: 1,
            burst: 3,
        });
        for _ in 0..3 {
            assert!(limit.check("a").is_ok());
        }
        let refusal = limit.check("a").expect_err("over the burst");
        assert_eq!(refusal.code(), crate::error::ErrorCode::RateLimited);
        assert_eq!(refusal.retry_after(), Some(1));
        // Keys share a bucket one time in 65,536 (the seed is random): take one that does not share "a"'s.
        let other = ["b", "c", "d", "e"]
            .into_iter()
            .find(|key| limit.bucket(*key) != limit.bucket("a"))
            .expect("four keys do not all land in one bucket");
        assert!(limit.check(other).is_ok(), "another key has its own bucket");
    }

    #[test]
    fn rate_limiter_memory_is_bounded_whatever_the_keys() {
        let limit = KeyedLimit::new(POLLS);
        let long = "x".repeat(1024);
        for n in 0..100_000 {
            let _ = limit.check(&format!("{long}{n}"));
        }
        assert!(limit.len() <= BUCKETS as usize, "{} buckets", limit.len());
    }
}
