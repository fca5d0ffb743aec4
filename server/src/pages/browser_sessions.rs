//! Browser sessions (tower-sessions records) kept in Anteroom's own database, through the store.

use std::sync::Arc;

use anteroom_store::{Store, WebSessionOwner};
use chrono::{DateTime, Utc};
use tower_sessions::{
    SessionStore,
    session::{Id, Record},
    session_store,
};

/// A [`SessionStore`] over the same SQLite or PostgreSQL database as everything else.
#[derive(Clone)]
pub struct BrowserSessionStore {
    store: Arc<dyn Store>,
}

impl BrowserSessionStore {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }
}

impl std::fmt::Debug for BrowserSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserSessionStore")
            .finish_non_exhaustive()
    }
}

fn backend(error: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(error.to_string())
}

fn expiry(record: &Record) -> DateTime<Utc> {
    DateTime::from_timestamp(record.expiry_date.unix_timestamp(), 0).unwrap_or_default()
}

fn encode(record: &Record) -> session_store::Result<String> {
    serde_json::to_string(&record.data)
        .map_err(|error| session_store::Error::Encode(error.to_string()))
}

/// Session data keys the owner columns are read from (written by the sign-in and by `attach_viewer`).
pub const DEVICE_KEY: &str = "device";
pub const SEEN_AT_KEY: &str = "seen_at";

/// The name a person's page shows a session by: the start of its id's hash (the one credentials are kept by),
/// never the id itself (the cookie's secret).
pub fn handle(id: &str) -> String {
    crate::credentials::hash(id).chars().take(24).collect()
}

/// Who the record belongs to, from its data.
fn owner(record: &Record) -> WebSessionOwner {
    let text = |key: &str| {
        record
            .data
            .get(key)
            .and_then(|value| value.as_str())
            .map(str::to_owned)
    };
    WebSessionOwner {
        user_id: text(super::USER_KEY),
        handle: handle(&record.id.to_string()),
        device: text(DEVICE_KEY),
        seen_at: record
            .data
            .get(SEEN_AT_KEY)
            .and_then(serde_json::Value::as_i64)
            .and_then(|seconds| DateTime::from_timestamp(seconds, 0)),
    }
}

#[async_trait::async_trait]
impl SessionStore for BrowserSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        let data = encode(record)?;
        // Ids are random 128-bit numbers; a collision is astronomically rare but must not join two people.
        while !self
            .store
            .create_web_session(
                &record.id.to_string(),
                &data,
                expiry(record),
                &owner(record),
            )
            .await
            .map_err(backend)?
        {
            record.id = Id::default();
        }
        Ok(())
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        self.store
            .save_web_session(
                &record.id.to_string(),
                &encode(record)?,
                expiry(record),
                &owner(record),
            )
            .await
            .map_err(backend)
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let Some((data, expires_at)) = self
            .store
            .load_web_session(&id.to_string())
            .await
            .map_err(backend)?
        else {
            return Ok(None);
        };
        let data = serde_json::from_str(&data)
            .map_err(|error| session_store::Error::Decode(error.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expires_at.timestamp())
            .map_err(|error| session_store::Error::Decode(error.to_string()))?;
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        self.store
            .delete_web_session(&id.to_string())
            .await
            .map_err(backend)
    }
}
