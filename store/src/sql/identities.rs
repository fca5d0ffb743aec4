//! The SQL of how people sign in (docs/operations.md): a person found by their provider identity or verified
//! e-mail, made at their first sign-in and given the role and groups the provider's groups map to; and the
//! browsers each person is signed in on.

pub const SELECT_PROVIDER_IDENTITY: &str =
    "SELECT user_id FROM provider_identities WHERE issuer = $1 AND subject = $2";

pub const INSERT_PROVIDER_IDENTITY: &str = "INSERT INTO provider_identities \
     (issuer, subject, user_id, created_at_ms, signed_in_at_ms) VALUES ($1, $2, $3, $4, $4)";

pub const SELECT_PROVIDER_SIGNED_IN_AT: &str =
    "SELECT MAX(signed_in_at_ms) FROM provider_identities WHERE user_id = $1";

/// A refused person's provider sign-in counts as long ago: nothing that lasts "as long as the last provider
/// sign-in" (a passkey's sign-in, an answer from outside a page) lasts past the refusal.
pub const FORGET_PROVIDER_SIGN_IN: &str =
    "UPDATE provider_identities SET signed_in_at_ms = 0 WHERE user_id = $1";

pub const TOUCH_PROVIDER_IDENTITY: &str =
    "UPDATE provider_identities SET signed_in_at_ms = $3 WHERE issuer = $1 AND subject = $2";

/// The local person a first provider sign-in links to: their e-mail vouched for by an admin, and not already
/// someone else at the provider (an address handed to a new hire must not reach the leaver's account).
pub const SELECT_LINKABLE_USER_BY_EMAIL: &str = "SELECT id FROM users WHERE email = $1 AND email_vouched \
     AND NOT EXISTS (SELECT 1 FROM provider_identities p WHERE p.user_id = users.id)";

pub const VOUCH_FOR_EMAIL: &str =
    "UPDATE users SET email_vouched = TRUE WHERE id = $1 AND email IS NOT NULL";

pub const USERNAME_TAKEN: &str = "SELECT COUNT(*) FROM users WHERE username = $1";

pub const EMAIL_TAKEN: &str = "SELECT COUNT(*) FROM users WHERE email = $1";

/// A new person from the provider: no password (an empty hash never verifies).
pub const INSERT_PROVIDER_USER: &str = "INSERT INTO users (id, username, role, password_hash, created_at_ms, email) \
     VALUES ($1, $2, $3, '', $4, $5)";

pub const SET_USER_ROLE: &str = "UPDATE users SET role = $2 WHERE id = $1";

pub const INSERT_GROUP_IF_NEW: &str = "INSERT INTO responder_groups (name, created_at_ms) VALUES ($1, $2) \
     ON CONFLICT (name) DO NOTHING";

pub const DELETE_USER_GROUPS: &str = "DELETE FROM group_members WHERE user_id = $1";

pub const INSERT_USER_GROUP: &str = "INSERT INTO group_members (group_name, user_id) VALUES ($1, $2) \
     ON CONFLICT (group_name, user_id) DO NOTHING";

/// A person's live browser sessions, most recently seen first.
pub const SELECT_BROWSER_SIGN_INS: &str = "SELECT handle, device, seen_at_ms FROM web_sessions \
     WHERE user_id = $1 AND expires_at_ms > $2 AND handle IS NOT NULL \
     ORDER BY seen_at_ms DESC NULLS LAST LIMIT 100";

pub const DELETE_BROWSER_SIGN_IN: &str =
    "DELETE FROM web_sessions WHERE user_id = $1 AND handle = $2";

pub const DELETE_EVERY_BROWSER_SIGN_IN: &str = "DELETE FROM web_sessions WHERE user_id = $1";

/// What a person the provider no longer admits keeps: the viewer role, no group.
pub const WITHDRAW_ROLE: &str = "UPDATE users SET role = 'viewer' WHERE id = $1";
