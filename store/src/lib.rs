//! Persistence: one store contract, implemented for embedded SQLite and for PostgreSQL.
//!
//! The backend is chosen from the database URL's scheme; each backend carries its own migrations
//! (`migrations/sqlite`, `migrations/postgres`). The store decides nothing itself: it loads records, lets the
//! domain's pure functions decide, and writes the result back in one transaction with compare-and-set on the
//! round's status, owner, lease token and version.
//!
//! A crate of its own: it knows the domain and the databases, and nothing of HTTP or the pages. Throwaway test
//! databases ([`testing`]) exist only with the `testing` feature, which the production binary never enables.

/// The domain this store persists, re-exported for the store's callers.
pub use anteroom_domain as domain;

mod askers;
mod contract;
pub mod dialect;
mod engine;
pub mod migrations;
mod poll_states;
pub mod postgres;
mod records;
pub mod schemas;
mod sql;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;
mod wal_checkpoints;

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use contract::{
    AccountStore, AgentSessionStore, AuditStore, BrowserSignIn, COUNT_BATCH, Escalated, GateStore,
    NewPasskey, OutboxStore, PASSKEYS_PER_PERSON_MAX, Passkey, PasskeyAdded, PasskeyForSignIn,
    PasskeyStore, ReachStore, RoundStore, RunStore, StandingAnswerStore, StatsStore, Store,
    SweepStore, TeamStore, WebSessionOwner, WorkerStore,
};
pub use engine::SqlStore;
pub use postgres::{PostgresDialect, PostgresStore};
pub use sqlite::{
    SqliteDialect, SqliteFileReport, SqliteStore, checkpoint_file as checkpoint_sqlite_file,
    copy_file as copy_sqlite_file, inspect_file as inspect_sqlite_file,
};

use crate::domain::{
    ManagedInputError,
    clock::{Clock, SystemClock},
    expiry::{ExpiryPolicy, stored_precision},
    ids::{LeaseToken, RoundId, SessionId},
    limits::Limits,
    round::Round,
    session::Session,
    webhook::WebhookEndpoint,
};

use schemas::SchemaCache;

/// A fresh round id: a UUIDv7, so ids sort by creation time.
pub fn new_round_id() -> RoundId {
    RoundId(uuid::Uuid::now_v7())
}

/// A fresh lease token: two random UUIDs (244 random bits).
fn new_lease_token() -> LeaseToken {
    LeaseToken::from_secret(format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    ))
}

/// Which database engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Picks the backend from a database URL's scheme.
    pub fn from_url(url: &str) -> Result<Self, StoreError> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres)
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// Why a store call did not succeed: the domain refused it, or the database failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The operation was refused with a typed error a caller can show (docs/api.md#errors).
    #[error(transparent)]
    Refused(#[from] ManagedInputError),
    #[error("the database URL must start with sqlite: or postgres://")]
    UnsupportedUrl,
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// A newer Anteroom upgraded the database past the migrations this binary carries (docs/operations.md#upgrades).
    #[error(
        "the database is at schema version {database} ({description}), which {release} applied: this binary \
         (Anteroom {version}) knows up to {binary}. Run the newer Anteroom, or restore the backup taken before the \
         upgrade (docs/operations.md#upgrades)",
        version = migrations::ANTEROOM_VERSION
    )]
    SchemaNewer {
        database: i64,
        description: String,
        /// `Anteroom 0.2.0`, or `a newer Anteroom` when the database does not say.
        release: String,
        binary: i64,
    },
    /// The operation exists for another database engine only; the message says what to do instead.
    #[error("{0}")]
    NotOnThisBackend(&'static str),
    /// A stored record could not be read back (never caused by input).
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether the store found no such session or round.
    pub fn is_not_found(&self) -> bool {
        self.refusal().is_some_and(ManagedInputError::is_not_found)
    }

    /// The typed refusal, if this is one.
    pub fn refusal(&self) -> Option<&ManagedInputError> {
        match self {
            Self::Refused(error) => Some(error),
            _ => None,
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Hears about changes the store makes on its own (lazy expiry on a read, sweeps, a revoked token), so
/// watchers can be told.
pub trait StoreObserver: Send + Sync + 'static {
    /// `rounds` just ended on their own: expired, undelivered or revoked (see each round's failure code).
    /// Called inside the ending transaction: treat it as a hint to re-read.
    fn rounds_ended(&self, rounds: &[Round]);
}

/// What a store is built with: where time comes from and the rules it applies.
#[derive(Clone)]
pub struct StoreOptions {
    pub clock: Arc<dyn Clock>,
    pub expiry: ExpiryPolicy,
    pub limits: Limits,
    pub observer: Option<Arc<dyn StoreObserver>>,
    /// Receivers of outgoing webhooks; every announced event is queued once per endpoint.
    pub webhooks: Vec<WebhookEndpoint>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            expiry: ExpiryPolicy::default(),
            limits: Limits::default(),
            observer: None,
            webhooks: Vec::new(),
        }
    }
}

/// What the store shares between its two backends: options, the compiled-schema cache, the askers' polls and
/// pending rounds' poll state.
pub(crate) struct StoreContext {
    pub options: StoreOptions,
    pub schemas: SchemaCache,
    pub askers: askers::AskerLog,
    pub poll_states: poll_states::PollStates,
    /// Statements, `BEGIN`s and `COMMIT`s sent to the database since start (`/metrics`, the bench).
    pub round_trips: std::sync::atomic::AtomicU64,
    /// Question creates waiting to be committed together.
    pub creates: engine::creates::CreateQueue,
    /// Where standing answers are in force, as last seen.
    pub standing: engine::RecentFact<std::sync::Arc<engine::standing::StandingPlaces>>,
    /// Whether any browser has push on, as last seen.
    pub push_browsers: engine::RecentFact,
    /// Questions this instance counted since it last refreshed PostgreSQL's view of the counts' tables.
    pub counted_since_refresh: std::sync::atomic::AtomicU64,
    /// SQLite's checkpointer, told of every committed transaction and every statement of its own that may write
    /// (none on PostgreSQL).
    pub wal_checkpoints: Option<wal_checkpoints::WalCheckpoints>,
}

impl StoreContext {
    fn new(options: StoreOptions) -> Self {
        Self {
            options,
            schemas: SchemaCache::default(),
            askers: askers::AskerLog::default(),
            poll_states: poll_states::PollStates::default(),
            round_trips: std::sync::atomic::AtomicU64::new(0),
            creates: engine::creates::CreateQueue::default(),
            standing: engine::RecentFact::default(),
            push_browsers: engine::RecentFact::default(),
            counted_since_refresh: std::sync::atomic::AtomicU64::new(0),
            wal_checkpoints: None,
        }
    }

    /// A write was committed (a transaction, or a statement of its own).
    fn wrote(&self) {
        self.wrote_if(true);
    }

    /// [`Self::wrote`] when `writes`, for a statement that may or may not have written.
    fn wrote_if(&self, writes: bool) {
        if let (true, Some(checkpoints)) = (writes, &self.wal_checkpoints) {
            checkpoints.wrote();
        }
    }

    /// Counts one more round trip to the database.
    fn round_trip(&self) {
        self.round_trips
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Now, to the stored precision: every time the store hands out is exactly what it stores.
    fn now(&self) -> DateTime<Utc> {
        stored_precision(self.options.clock.now())
    }
}

/// What a producer's poll needs to answer `pending` without reading the whole round.
#[derive(Debug, Clone, PartialEq)]
pub struct PollProbe {
    pub session_id: SessionId,
    pub round_id: RoundId,
    pub status: crate::domain::round::RoundStatus,
    pub deadline: DateTime<Utc>,
}

/// One session in the attention queue, with what is open in it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueEntry {
    pub session: Session,
    pub open_rounds: u32,
    /// When the oldest open question was asked (the queue's order within needs-input sessions).
    pub oldest_open_at: Option<DateTime<Utc>>,
}

/// One session of the attention queue as the pages show it: the entry and its oldest open question.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionItem {
    pub entry: QueueEntry,
    pub oldest_open: Option<crate::domain::round::Round>,
    /// Who answers the oldest open question (empty: everyone whose role answers, or nothing open).
    pub responders: Vec<crate::domain::responders::Responder>,
    /// Its latest run's state, when `anteroom run` ever ran it (`needs_input` is the session's status).
    pub run_state: Option<crate::domain::run::RunState>,
}

pub async fn connect(url: &str, options: StoreOptions) -> StoreResult<Arc<dyn Store>> {
    Ok(match Backend::from_url(url)? {
        Backend::Sqlite => Arc::new(SqliteStore::connect(url, options).await?),
        Backend::Postgres => Arc::new(PostgresStore::connect(url, options).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_follows_the_url_scheme() {
        assert_eq!(
            Backend::from_url("sqlite://anteroom.db").ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            Backend::from_url("sqlite::memory:").ok(),
            Some(Backend::Sqlite)
        );
        assert_eq!(
            Backend::from_url("postgres://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert_eq!(
            Backend::from_url("postgresql://u@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert!(matches!(
            Backend::from_url("mysql://h/db"),
            Err(StoreError::UnsupportedUrl)
        ));
    }
}
