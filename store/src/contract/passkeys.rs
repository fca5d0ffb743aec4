//! Passkeys: the WebAuthn credentials a person adds on their profile to sign in with one touch.

use chrono::{DateTime, Utc};

use crate::StoreResult;

/// The most passkeys one person may have (a phone, a laptop, a security key or two, with room to spare).
pub const PASSKEYS_PER_PERSON_MAX: i64 = 20;

/// A passkey as its person's profile lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    /// The credential id, base64url.
    pub id: String,
    /// What the person called it when they added it.
    pub name: String,
    pub added_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

/// A passkey being added: who it signs in, and what the WebAuthn library needs to check its signatures later.
#[derive(Debug, Clone, Copy)]
pub struct NewPasskey<'a> {
    /// The credential id, base64url.
    pub id: &'a str,
    pub user_id: &'a str,
    pub name: &'a str,
    /// The library's encoding of the registered public key (never changes), base64url.
    pub public_key: &'a str,
    /// The library's encoding of what changes at each use (the signature counter, backup state), base64url.
    pub counters: &'a str,
}

/// Whether a passkey was added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasskeyAdded {
    Added,
    /// Another passkey (anyone's) already has this credential id.
    Taken,
    /// The person already has [`PASSKEYS_PER_PERSON_MAX`].
    TooMany,
    /// The person no longer exists.
    NoSuchPerson,
}

/// What checking a sign-in with a passkey needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyForSignIn {
    pub user_id: String,
    pub user_handle: String,
    pub public_key: String,
    pub counters: String,
}

/// People's passkeys; adding and removing one is recorded in the audit log.
#[async_trait::async_trait]
pub trait PasskeyStore: Send + Sync {
    /// The random WebAuthn user handle all of the person's passkeys share (base64url): `candidate` when they had
    /// none yet, made theirs for good; `None` when the person does not exist.
    async fn passkey_user_handle(
        &self,
        user_id: &str,
        candidate: &str,
    ) -> StoreResult<Option<String>>;

    /// The person's passkeys, newest first.
    async fn passkeys(&self, user_id: &str) -> StoreResult<Vec<Passkey>>;

    /// Adds a passkey, held to [`PASSKEYS_PER_PERSON_MAX`] even when two are added at once.
    async fn add_passkey(&self, passkey: &NewPasskey<'_>) -> StoreResult<PasskeyAdded>;

    /// The passkey with this credential id, for checking a sign-in with it.
    async fn passkey_for_sign_in(&self, id: &str) -> StoreResult<Option<PasskeyForSignIn>>;

    /// Notes a sign-in with the passkey and its new counters, only over the counters it was checked against:
    /// false when another sign-in with it changed them meanwhile (then this one must be refused).
    async fn passkey_used(&self, id: &str, checked: &str, counters: &str) -> StoreResult<bool>;

    /// Removes one of the person's passkeys; false when they have none by that id.
    async fn remove_passkey(&self, user_id: &str, id: &str) -> StoreResult<bool>;

    /// Removes all of the person's passkeys (an admin's `anteroom user sign-out`); how many there were.
    async fn remove_every_passkey(&self, user_id: &str) -> StoreResult<u64>;
}
