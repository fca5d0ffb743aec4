//! When each asker last polled: kept in memory on every poll, written to the database at most every
//! [`PERSIST_EVERY`], so a page can say "checked 3 s ago · every ~5 s" without a database write per poll.
//! The writes due are gathered and written together, at most once per [`WRITE_EVERY`] (10,000 askers
//! polling every 5 s make 1,000 writes due a second: one statement, not 1,000).
//!
//! Another instance sees the persisted value, so there it may lag by up to [`PERSIST_EVERY`] and
//! [`WRITE_EVERY`]; a write gathered just before the instance falls quiet waits for its next poll.

use std::sync::{
    Mutex,
    atomic::{AtomicI64, AtomicUsize, Ordering},
};

use chrono::{DateTime, Duration, Utc};
use dashmap::DashMap;

use crate::domain::{
    ids::RoundId,
    round::{AskerSeen, Round},
};

/// How often an asker's latest poll is written to the database.
pub const PERSIST_EVERY: Duration = Duration::seconds(10);
/// Polls closer together than this are one check (a retry, or two tabs of the same client).
const SAME_CHECK: Duration = Duration::milliseconds(250);
/// Rounds remembered at once; beyond it, entries not seen for [`FORGET_AFTER`] are dropped first, and a poll
/// that still finds no room is neither kept nor persisted.
const CAPACITY: usize = 100_000;
const FORGET_AFTER: Duration = Duration::minutes(10);
/// How often a full log may be swept for forgotten rounds.
const SWEEP_EVERY: Duration = Duration::seconds(10);
/// Gathered writes go out at most this often, or as soon as this many wait.
pub const WRITE_EVERY: Duration = Duration::seconds(1);
pub const WRITE_BATCH: usize = 500;

#[derive(Debug, Clone, Copy)]
struct Seen {
    last: DateTime<Utc>,
    interval_ms: Option<i64>,
    persisted: Option<DateTime<Utc>>,
}

/// The latest poll of each round's asker, as this instance saw it.
#[derive(Default)]
pub struct AskerLog {
    seen: DashMap<RoundId, Seen>,
    /// When a full log was last swept (epoch milliseconds).
    swept_at_ms: AtomicI64,
    /// Writes due but not yet made, and when writes last went out (epoch milliseconds).
    unwritten: Mutex<Vec<(RoundId, AskerSeen)>>,
    /// How many writes wait (read without the lock).
    waiting: AtomicUsize,
    written_at_ms: AtomicI64,
}

impl AskerLog {
    /// Notes a poll of `round` at `now`; returns what to persist when the last write is old enough.
    pub fn record(&self, round: RoundId, now: DateTime<Utc>) -> Option<AskerSeen> {
        if self.seen.len() >= CAPACITY && !self.seen.contains_key(&round) {
            // A full log is swept at most once per `SWEEP_EVERY`: a flood of new rounds' polls must not make
            // every poll scan the whole map.
            let last = self.swept_at_ms.load(Ordering::Relaxed);
            if now.timestamp_millis() - last >= SWEEP_EVERY.num_milliseconds()
                && self
                    .swept_at_ms
                    .compare_exchange(
                        last,
                        now.timestamp_millis(),
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                self.seen.retain(|_, seen| now - seen.last < FORGET_AFTER);
            }
        }
        if self.seen.len() >= CAPACITY && !self.seen.contains_key(&round) {
            // No room: this round's presence is not kept, and not written on every poll either.
            return None;
        }
        let previous = self.seen.get(&round).map(|seen| *seen);
        let mut next = match previous {
            Some(seen) if now - seen.last < SAME_CHECK => return None,
            Some(seen) => Seen {
                last: now,
                interval_ms: Some(smoothed(
                    seen.interval_ms,
                    (now - seen.last).num_milliseconds(),
                )),
                persisted: seen.persisted,
            },
            None => Seen {
                last: now,
                interval_ms: None,
                persisted: None,
            },
        };
        let due = next.persisted.is_none_or(|at| now - at >= PERSIST_EVERY);
        if due {
            next.persisted = Some(now);
        }
        self.seen.insert(round, next);
        due.then_some(AskerSeen {
            last_poll_at: next.last,
            interval_ms: next.interval_ms,
        })
    }

    /// Notes a poll of `round` at `now` (as [`Self::record`]); returns the writes to make now: those due since
    /// the last ones went out, once [`WRITE_EVERY`] has passed (whichever poll comes next) or [`WRITE_BATCH`]
    /// wait.
    pub fn record_for_writing(
        &self,
        round: RoundId,
        now: DateTime<Utc>,
    ) -> Vec<(RoundId, AskerSeen)> {
        let due = self.record(round, now);
        // Most polls have nothing to write and find nothing waiting: they never take the lock.
        if due.is_none() && self.waiting.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        let mut unwritten = self
            .unwritten
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        unwritten.extend(due.map(|seen| (round, seen)));
        let now_ms = now.timestamp_millis();
        let last = self.written_at_ms.load(Ordering::Relaxed);
        let taken = if unwritten.is_empty()
            || (unwritten.len() < WRITE_BATCH && now_ms - last < WRITE_EVERY.num_milliseconds())
        {
            Vec::new()
        } else {
            self.written_at_ms.store(now_ms, Ordering::Relaxed);
            std::mem::take(&mut *unwritten)
        };
        self.waiting.store(unwritten.len(), Ordering::Relaxed);
        taken
    }

    /// Replaces what the database says with this instance's fresher memory, if it has any.
    pub fn overlay(&self, round: &mut Round) {
        if let Some(seen) = self.seen.get(&round.round_id)
            && round
                .asker_seen
                .is_none_or(|stored| stored.last_poll_at < seen.last)
        {
            round.asker_seen = Some(AskerSeen {
                last_poll_at: seen.last,
                interval_ms: seen
                    .interval_ms
                    .or(round.asker_seen.and_then(|s| s.interval_ms)),
            });
        }
    }

    /// Forgets a round that no longer waits for its asker.
    pub fn forget(&self, round: &RoundId) {
        self.seen.remove(round);
    }
}

/// The observed interval: the new gap weighed in at one third, so one late poll does not swing it.
fn smoothed(previous: Option<i64>, gap_ms: i64) -> i64 {
    match previous {
        Some(previous) => (previous * 2 + gap_ms) / 3,
        None => gap_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).expect("valid")
    }

    #[test]
    fn polls_are_persisted_at_most_every_ten_seconds_with_the_observed_interval() {
        let log = AskerLog::default();
        let round = crate::new_round_id();
        let first = log.record(round, at(0)).expect("first poll is persisted");
        assert_eq!(first.interval_ms, None);
        for second in [5, 9] {
            assert_eq!(log.record(round, at(second)), None, "{second}");
        }
        let later = log.record(round, at(10)).expect("ten seconds on");
        assert_eq!(later.last_poll_at, at(10));
        assert!(
            (3_000..=5_000).contains(&later.interval_ms.expect("interval")),
            "{later:?}"
        );
    }

    #[test]
    fn a_full_log_keeps_and_writes_nothing_more_until_old_rounds_are_forgotten() {
        let log = AskerLog::default();
        for n in 0..CAPACITY {
            log.seen.insert(
                RoundId(uuid::Uuid::from_u128(n as u128)),
                Seen {
                    last: at(0),
                    interval_ms: None,
                    persisted: Some(at(0)),
                },
            );
        }
        let newcomer = crate::new_round_id();
        assert_eq!(log.record(newcomer, at(1)), None, "no room, no write");
        assert_eq!(log.seen.len(), CAPACITY);
        let later = at(0) + FORGET_AFTER + Duration::seconds(1);
        assert!(
            log.record(newcomer, later).is_some(),
            "old rounds forgotten"
        );
        assert_eq!(log.seen.len(), 1);
    }

    #[test]
    fn writes_due_within_a_second_go_out_together() {
        let log = AskerLog::default();
        let rounds: Vec<RoundId> = (0..3).map(|_| crate::new_round_id()).collect();
        let ids = |writes: Vec<(RoundId, AskerSeen)>| -> Vec<RoundId> {
            writes.into_iter().map(|(round, _)| round).collect()
        };
        assert_eq!(
            ids(log.record_for_writing(rounds[0], at(0))),
            [rounds[0]],
            "the first write goes out at once"
        );
        assert!(log.record_for_writing(rounds[1], at(0)).is_empty());
        assert!(log.record_for_writing(rounds[2], at(0)).is_empty());
        // A second on, the next poll takes all that waited, though it has nothing due itself.
        assert_eq!(
            ids(log.record_for_writing(rounds[0], at(1))),
            rounds[1..].to_vec()
        );
        assert!(
            log.record_for_writing(rounds[1], at(2)).is_empty(),
            "nothing due, nothing waiting"
        );
        let soon = at(1) + Duration::milliseconds(500);
        let full: usize = (0..WRITE_BATCH)
            .map(|_| log.record_for_writing(crate::new_round_id(), soon).len())
            .sum();
        assert_eq!(full, WRITE_BATCH, "a full batch goes out without waiting");
    }

    #[test]
    fn overlay_prefers_the_fresher_memory() {
        let log = AskerLog::default();
        let round_id = crate::new_round_id();
        log.record(round_id, at(0));
        log.record(round_id, at(5));
        let seen = log.seen.get(&round_id).map(|seen| *seen).expect("kept");
        assert_eq!(seen.last, at(5));
        assert_eq!(seen.interval_ms, Some(5_000));
        log.forget(&round_id);
        assert!(log.seen.get(&round_id).is_none());
    }
}
