//! People and how they sign in: API keys, accounts, provider identities, first-run links and browser sessions.

use chrono::{DateTime, Utc};

use crate::{
    StoreResult,
    domain::{
        access::{ApiKey, SignedIn, User},
        provider_people::ProviderPerson,
    },
};

/// Who a browser session belongs to, kept beside its data so a person's sessions can be listed and ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebSessionOwner {
    /// The signed-in person (`None` before sign-in).
    pub user_id: Option<String>,
    /// A name for the session that is not its secret id: a person's page lists and ends sessions by it.
    pub handle: String,
    /// The browser, as its `User-Agent` said at sign-in (cut short).
    pub device: Option<String>,
    /// When the session was last seen using Anteroom (to the minutes it is refreshed in).
    pub seen_at: Option<DateTime<Utc>>,
}

/// One browser a person is signed in on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserSignIn {
    pub handle: String,
    pub device: Option<String>,
    pub seen_at: Option<DateTime<Utc>>,
}

/// API keys, people, first-run sign-in links and browser sessions; credentials only as hashes.
#[async_trait::async_trait]
pub trait AccountStore: Send + Sync {
    async fn create_api_key(&self, key: &ApiKey, key_hash: &str, actor: &str) -> StoreResult<()>;

    /// The live (not revoked) API key with this hash.
    async fn api_key_for_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>>;

    /// Adds a person; a taken username is a `managed_input_conflict`.
    async fn create_user(&self, user: &User, password_hash: &str) -> StoreResult<()>;

    /// The person with this username and their password hash, for signing in.
    async fn user_with_password(&self, username: &str) -> StoreResult<Option<(User, String)>>;

    async fn get_user(&self, id: &str) -> StoreResult<Option<User>>;

    /// A person, the time zone their pages show times in and their groups, in one statement (each signed-in
    /// request needs all three).
    async fn signed_in(&self, id: &str) -> StoreResult<Option<SignedIn>>;

    async fn count_users(&self) -> StoreResult<i64>;

    /// Signs in a person the identity provider vouched for, in one transaction: the person linked to their
    /// provider identity, else the local person with their e-mail when the provider verified it, else a new
    /// person (no password; a free username). Their role and groups become what the provider's groups grant,
    /// every time (groups named by the mapping are made when missing); a change is recorded in the audit log.
    async fn sign_in_from_provider(&self, person: &ProviderPerson) -> StoreResult<User>;

    /// The provider refused to admit someone it once did (they left every mapped group): whoever their identity
    /// is linked to becomes a viewer in no group, signed out everywhere, recorded in the audit log. False when
    /// the identity was never seen here.
    async fn withdraw_provider_access(&self, issuer: &str, subject: &str) -> StoreResult<bool>;

    /// When the person last signed in through the identity provider (`None`: never, so their role and groups
    /// are Anteroom's own): a passkey sign-in lasts no longer than that sign-in would have.
    async fn provider_signed_in_at(&self, user_id: &str) -> StoreResult<Option<DateTime<Utc>>>;

    /// An admin vouches that the person's e-mail is theirs (set from the command line): only a vouched-for
    /// e-mail links a first provider sign-in to an existing person. Any later change of e-mail undoes it.
    async fn vouch_for_email(&self, user_id: &str) -> StoreResult<bool>;

    /// Stores a one-time sign-in link (its hash) that works until `expires_at`.
    async fn create_sign_in_link(
        &self,
        token_hash: &str,
        expires_at: DateTime<Utc>,
    ) -> StoreResult<()>;

    /// Uses up the link and creates `user` in one transaction: true only the first time, only before the
    /// link expires, and only while no person exists (an admin made meanwhile by `anteroom user add` ends
    /// the link's use).
    async fn create_first_admin(
        &self,
        token_hash: &str,
        user: &User,
        password_hash: &str,
    ) -> StoreResult<bool>;

    /// Writes a browser session's data (JSON), expiry and owner over the stored ones; a session deleted
    /// meanwhile (signed out) stays deleted.
    async fn save_web_session(
        &self,
        id: &str,
        data: &str,
        expires_at: DateTime<Utc>,
        owner: &WebSessionOwner,
    ) -> StoreResult<()>;

    /// Writes a browser session only if its id is new; false if the id was taken.
    async fn create_web_session(
        &self,
        id: &str,
        data: &str,
        expires_at: DateTime<Utc>,
        owner: &WebSessionOwner,
    ) -> StoreResult<bool>;

    /// A browser session's data and expiry, unless it has expired.
    async fn load_web_session(&self, id: &str) -> StoreResult<Option<(String, DateTime<Utc>)>>;

    async fn delete_web_session(&self, id: &str) -> StoreResult<()>;

    /// Deletes expired browser sessions; returns how many.
    async fn purge_web_sessions(&self) -> StoreResult<u64>;

    /// The person's browsers that are signed in, most recently seen first (at most 100).
    async fn browser_sign_ins(&self, user_id: &str) -> StoreResult<Vec<BrowserSignIn>>;

    /// Signs the person out in the browser with this handle; false when there is none.
    async fn end_browser_sign_in(&self, user_id: &str, handle: &str) -> StoreResult<bool>;

    /// Signs the person out in every browser; returns in how many.
    async fn end_every_browser_sign_in(&self, user_id: &str) -> StoreResult<u64>;
}
