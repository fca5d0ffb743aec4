//! What a poll of a pending question needs (its session, round, status and deadline), and which session a
//! producer token belongs to, kept in memory so that polling a question nobody has answered yet costs no database
//! round trip, and asking one costs no read before its insert.
//!
//! An entry is only ever a pending round, and it is dropped when anything could have changed that: after every
//! commit of this store that moves a round or a session's token, when another instance's event arrives
//! ([`crate::Store::forget_poll_states`], called by the PostgreSQL relay), and when the database's count of
//! token changes moved (read at most once per [`TOKEN_CHECK_EVERY`]; it counts what the CLI does from another
//! process, which tells nobody). [`FRESH_FOR`] after it was read an entry is read again in any case, which
//! bounds what a writer that bypasses all of these (hand-written SQL, an event lost between instances) can
//! leave behind.
//!
//! A session's token change, or any event about a session from another instance, drops all its entries at once
//! by moving the session to a new epoch (entries of an older epoch are not served), so no drop scans the map.
//!
//! A poll that reads the database while a write commits must not put back what the write just dropped: every
//! drop bumps a generation first, and a fill is kept only if the generation it read before its query is still
//! current after it has read the session's epoch (checked under the entry's shard lock, which a round's drop
//! also takes).

use std::{
    sync::atomic::{AtomicI64, AtomicU64, Ordering},
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use dashmap::DashMap;

use crate::{
    PollProbe,
    domain::{
        ids::{RequestId, SessionId},
        round::RoundStatus,
    },
};

/// How long an entry is trusted without being read again (the backstop; changes drop entries sooner).
pub const FRESH_FOR: Duration = Duration::from_secs(30);
/// How often the database's count of producer-token changes is read: how long a token revoked by the CLI can
/// still be answered from memory.
pub const TOKEN_CHECK_EVERY: Duration = Duration::from_secs(1);
/// Entries at most; beyond it stale ones are swept, and a fill that still finds no room is not kept.
const CAPACITY: usize = 100_000;
/// How often a full map may be swept: a flood of fills for new questions must not make each one scan the map.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

/// The session a producer token was read to belong to.
#[derive(Debug, Clone)]
struct TokenEntry {
    session_id: SessionId,
    session_epoch: u64,
    read_at: Instant,
}

#[derive(Debug, Clone)]
struct Entry {
    token_hash: String,
    probe: PollProbe,
    session_epoch: u64,
    read_at: Instant,
}

/// Pending rounds' poll state, by request id (unique across the store).
pub struct PollStates {
    entries: DashMap<String, Entry>,
    /// Sessions by their producer token's hash (a token change moves the session's epoch, as for `entries`).
    tokens: DashMap<String, TokenEntry>,
    /// Sessions whose entries were dropped at least once; a session not here is at epoch 0.
    session_epochs: DashMap<SessionId, u64>,
    generation: AtomicU64,
    /// When a full map was last swept, in milliseconds since `started`.
    swept_at_ms: AtomicU64,
    /// The database's count of token changes when last read ([`NEVER_READ`] before the first read).
    token_changes: AtomicI64,
    /// When that count was last read (or a read was claimed), by the store's clock, in epoch milliseconds.
    token_checked_at_ms: AtomicI64,
    started: Instant,
}

const NEVER_READ: i64 = i64::MIN;

impl Default for PollStates {
    fn default() -> Self {
        Self {
            entries: DashMap::new(),
            tokens: DashMap::new(),
            session_epochs: DashMap::new(),
            generation: AtomicU64::new(0),
            swept_at_ms: AtomicU64::new(0),
            token_changes: AtomicI64::new(NEVER_READ),
            token_checked_at_ms: AtomicI64::new(NEVER_READ),
            started: Instant::now(),
        }
    }
}

/// Something a write changed, to drop from [`PollStates`] once it commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    /// A round's status, deadline or answer.
    Round(RequestId),
    /// A session's producer token (every entry of the session names it).
    Session(SessionId),
}

impl PollStates {
    /// The generation a fill must still see when it inserts; read it before the query.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The poll state of `request_id` for `token_hash`, when it is known, fresh and was read with that token.
    pub fn get(&self, token_hash: &str, request_id: &str) -> Option<PollProbe> {
        let entry = self.entries.get(request_id)?;
        (entry.token_hash == token_hash
            && entry.read_at.elapsed() < FRESH_FOR
            && entry.session_epoch == self.session_epoch(&entry.probe.session_id))
        .then(|| entry.probe.clone())
    }

    /// Keeps what a poll read at `generation`, if it is a pending round and nothing was dropped since.
    pub fn fill(&self, generation: u64, token_hash: &str, request_id: &str, probe: &PollProbe) {
        if probe.status != RoundStatus::Pending {
            return;
        }
        if self.entries.len() >= CAPACITY && !self.entries.contains_key(request_id) {
            self.sweep_stale();
            if self.entries.len() >= CAPACITY {
                return;
            }
        }
        // The shard stays locked from the generation check to the insert, so a round's drop cannot fall in
        // between; the epoch is read before the check, so a session's drop that moved it bumped the generation.
        let slot = self.entries.entry(request_id.to_owned());
        let session_epoch = self.session_epoch(&probe.session_id);
        if self.generation() != generation {
            return;
        }
        slot.insert(Entry {
            token_hash: token_hash.to_owned(),
            probe: probe.clone(),
            session_epoch,
            read_at: Instant::now(),
        });
    }

    /// The session `token_hash` belongs to, when that was read lately and the session's token has not changed
    /// since.
    pub fn session_of_token(&self, token_hash: &str) -> Option<SessionId> {
        let entry = self.tokens.get(token_hash)?;
        (entry.read_at.elapsed() < FRESH_FOR
            && entry.session_epoch == self.session_epoch(&entry.session_id))
        .then(|| entry.session_id.clone())
    }

    /// Keeps that `token_hash` belongs to `session`, as read at `generation`, if nothing was dropped since.
    pub fn fill_token(&self, generation: u64, token_hash: &str, session: &SessionId) {
        if self.tokens.len() >= CAPACITY && !self.tokens.contains_key(token_hash) {
            self.sweep_stale();
            if self.tokens.len() >= CAPACITY {
                return;
            }
        }
        // As in `fill`: the shard stays locked from the generation check to the insert.
        let slot = self.tokens.entry(token_hash.to_owned());
        let session_epoch = self.session_epoch(session);
        if self.generation() != generation {
            return;
        }
        slot.insert(TokenEntry {
            session_id: session.clone(),
            session_epoch,
            read_at: Instant::now(),
        });
    }

    /// Drops what `changes` may have made stale. Call it after the write commits.
    pub fn forget(&self, changes: &[Changed]) {
        if changes.is_empty() {
            return;
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
        for change in changes {
            match change {
                Changed::Round(request_id) => {
                    self.entries.remove(request_id.as_str());
                }
                Changed::Session(session) => {
                    if self.session_epochs.len() >= CAPACITY {
                        // Epochs of sessions long gone pile up: start again from nothing. Entries first: an
                        // entry outliving its session's epoch would match epoch 0 again.
                        self.entries.clear();
                        self.tokens.clear();
                        self.session_epochs.clear();
                    }
                    *self.session_epochs.entry(session.clone()).or_insert(0) += 1;
                }
            }
        }
    }

    /// Drops entries no longer trusted, at most once per [`SWEEP_EVERY`] (one caller wins the turn).
    fn sweep_stale(&self) {
        let millis = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let now_ms = millis(self.started.elapsed());
        let last = self.swept_at_ms.load(Ordering::Relaxed);
        let due = last == 0 || now_ms.saturating_sub(last) >= millis(SWEEP_EVERY);
        if due
            && self
                .swept_at_ms
                .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.entries
                .retain(|_, entry| entry.read_at.elapsed() < FRESH_FOR);
            self.tokens
                .retain(|_, entry| entry.read_at.elapsed() < FRESH_FOR);
        }
    }

    /// Whether the caller should read the database's count of token changes at `now` (the store's clock, so
    /// tests drive it): at most one caller per [`TOKEN_CHECK_EVERY`] is told yes, and it must pass what it
    /// read (or its failure) to [`Self::token_changes_read`].
    pub fn token_check_due(&self, now: DateTime<Utc>) -> bool {
        let now_ms = now.timestamp_millis();
        let last = self.token_checked_at_ms.load(Ordering::Relaxed);
        let every = i64::try_from(TOKEN_CHECK_EVERY.as_millis()).unwrap_or(i64::MAX);
        // A clock set back (a test, or the host's time corrected) starts the interval again from `now`.
        let due = last == NEVER_READ || now_ms.saturating_sub(last) >= every || now_ms < last;
        due && self
            .token_checked_at_ms
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// What the claimed read of the count of token changes gave. A count that moved means a token changed
    /// where this instance was not told, and a failed read means it cannot know: either way nothing
    /// remembered is served any more.
    pub fn token_changes_read(&self, read: Option<i64>) {
        let Some(changes) = read else {
            self.forget_all();
            // Unknown from now on: the next successful read must not be taken as "unchanged".
            self.token_changes.store(NEVER_READ, Ordering::SeqCst);
            return;
        };
        let before = self.token_changes.swap(changes, Ordering::SeqCst);
        if before != changes {
            self.forget_all();
        }
    }

    fn session_epoch(&self, session: &SessionId) -> u64 {
        self.session_epochs.get(session).map_or(0, |epoch| *epoch)
    }

    /// Drops every entry (a change this instance cannot place, or a relay that lost events).
    pub fn forget_all(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.entries.clear();
        self.tokens.clear();
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::domain::ids::RoundId;

    /// A fixed instant, `seconds` after a readable start.
    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_772_355_600 + seconds, 0).expect("valid timestamp")
    }

    fn probe(session: &str, status: RoundStatus) -> PollProbe {
        PollProbe {
            session_id: SessionId::parse(session).expect("session id"),
            round_id: RoundId(uuid::Uuid::new_v4()),
            status,
            deadline: at(0),
        }
    }

    fn request(id: &str) -> RequestId {
        RequestId::parse(id).expect("request id")
    }

    #[test]
    fn only_pending_rounds_read_with_the_same_token_are_served() {
        let states = PollStates::default();
        let pending = probe("s1", RoundStatus::Pending);
        states.fill(states.generation(), "hash-a", "q1", &pending);
        states.fill(
            states.generation(),
            "hash-a",
            "q2",
            &probe("s1", RoundStatus::ResponseValidated),
        );
        assert_eq!(states.get("hash-a", "q1"), Some(pending));
        assert_eq!(states.get("hash-b", "q1"), None, "another token");
        assert_eq!(states.get("hash-a", "q2"), None, "an answered round");
        assert_eq!(states.get("hash-a", "q3"), None, "never read");
    }

    #[test]
    fn a_change_drops_the_round_or_the_whole_session() {
        let states = PollStates::default();
        states.fill(
            states.generation(),
            "h",
            "q1",
            &probe("s1", RoundStatus::Pending),
        );
        states.fill(
            states.generation(),
            "h",
            "q2",
            &probe("s1", RoundStatus::Pending),
        );
        states.fill(
            states.generation(),
            "g",
            "q3",
            &probe("s2", RoundStatus::Pending),
        );
        states.forget(&[Changed::Round(request("q1"))]);
        assert!(states.get("h", "q1").is_none());
        assert!(states.get("h", "q2").is_some());
        states.forget(&[Changed::Session(SessionId::parse("s1").expect("id"))]);
        assert!(states.get("h", "q2").is_none(), "the token changed");
        assert!(
            states.get("g", "q3").is_some(),
            "another session keeps its own"
        );
        states.forget_all();
        assert!(states.get("g", "q3").is_none());
    }

    #[test]
    fn a_full_map_keeps_no_more_and_is_swept_at_most_once_per_interval() {
        let states = PollStates::default();
        let generation = states.generation();
        for n in 0..CAPACITY {
            states.fill(
                generation,
                "h",
                &format!("q{n}"),
                &probe("s1", RoundStatus::Pending),
            );
        }
        // Every entry is fresh: the sweep frees nothing, the new question is not kept.
        states.fill(
            generation,
            "h",
            "one-more",
            &probe("s1", RoundStatus::Pending),
        );
        assert_eq!(states.entries.len(), CAPACITY);
        assert!(states.get("h", "one-more").is_none());
        let swept = states.swept_at_ms.load(Ordering::Relaxed);
        assert_ne!(swept, 0, "the full map was swept once");
        // Another fill within the interval does not sweep again.
        states.fill(
            generation,
            "h",
            "and-another",
            &probe("s1", RoundStatus::Pending),
        );
        assert_eq!(states.swept_at_ms.load(Ordering::Relaxed), swept);
    }

    #[test]
    fn a_tokens_session_is_kept_until_its_token_changes_or_anything_is_forgotten() {
        let states = PollStates::default();
        let s1 = SessionId::parse("s1").expect("id");
        let s2 = SessionId::parse("s2").expect("id");
        states.fill_token(states.generation(), "h1", &s1);
        states.fill_token(states.generation(), "h2", &s2);
        assert_eq!(states.session_of_token("h1"), Some(s1.clone()));
        assert_eq!(states.session_of_token("h3"), None, "never read");
        states.forget(&[Changed::Round(request("q1"))]);
        assert_eq!(
            states.session_of_token("h1"),
            Some(s1.clone()),
            "a round's change leaves its session's token alone"
        );
        states.forget(&[Changed::Session(s1.clone())]);
        assert_eq!(states.session_of_token("h1"), None, "the token changed");
        assert_eq!(states.session_of_token("h2"), Some(s2.clone()));
        states.token_changes_read(Some(1));
        states.token_changes_read(Some(2));
        assert_eq!(
            states.session_of_token("h2"),
            None,
            "a token changed in another process"
        );
    }

    #[test]
    fn a_tokens_read_that_a_change_overtook_is_not_kept() {
        let states = PollStates::default();
        let s1 = SessionId::parse("s1").expect("id");
        let read_at = states.generation();
        states.forget(&[Changed::Session(s1.clone())]);
        states.fill_token(read_at, "h1", &s1);
        assert_eq!(states.session_of_token("h1"), None);
        states.fill_token(states.generation(), "h1", &s1);
        assert_eq!(states.session_of_token("h1"), Some(s1));
    }

    #[test]
    fn a_moved_count_of_token_changes_or_a_failed_read_drops_everything() {
        let states = PollStates::default();
        let fill = |id: &str| {
            states.fill(
                states.generation(),
                "h",
                id,
                &probe("s1", RoundStatus::Pending),
            );
        };
        states.token_changes_read(Some(3));
        fill("q1");
        states.token_changes_read(Some(3));
        assert!(states.get("h", "q1").is_some(), "the count did not move");
        states.token_changes_read(Some(4));
        assert!(states.get("h", "q1").is_none(), "a token changed elsewhere");
        fill("q1");
        states.token_changes_read(None);
        assert!(
            states.get("h", "q1").is_none(),
            "the count could not be read"
        );
        fill("q1");
        states.token_changes_read(Some(4));
        assert!(
            states.get("h", "q1").is_none(),
            "after a failed read, no count is taken as unchanged"
        );
    }

    #[test]
    fn one_caller_per_interval_reads_the_count_of_token_changes() {
        let states = PollStates::default();
        let start = at(0);
        let every = chrono::Duration::from_std(TOKEN_CHECK_EVERY).expect("interval");
        assert!(states.token_check_due(start), "the first poll reads it");
        assert!(!states.token_check_due(start), "the same instant: no");
        assert!(!states.token_check_due(start + every - chrono::Duration::milliseconds(1)));
        assert!(states.token_check_due(start + every));
        assert!(!states.token_check_due(start + every));
        assert!(
            states.token_check_due(start),
            "a clock set back starts the interval again"
        );
    }

    #[test]
    fn a_fill_read_before_a_change_is_not_kept() {
        let states = PollStates::default();
        let read_at = states.generation();
        // The write commits and drops the round while the poll's query is still out.
        states.forget(&[Changed::Round(request("q1"))]);
        states.fill(read_at, "h", "q1", &probe("s1", RoundStatus::Pending));
        assert!(states.get("h", "q1").is_none());
    }
}
