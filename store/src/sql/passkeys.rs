//! The SQL of passkeys: the credentials a person added, found by credential id when one signs in.

/// The person's WebAuthn user handle, made with their first passkey and never changed: `$2` when they had none.
pub const ENSURE_PASSKEY_USER_HANDLE: &str = "UPDATE users SET passkey_handle = COALESCE(passkey_handle, $2) \
     WHERE id = $1 RETURNING passkey_handle";

/// A person's passkeys, newest first.
pub const SELECT_PASSKEYS: &str = "SELECT credential_id, name, added_at_ms, used_at_ms FROM passkeys \
     WHERE user_id = $1 ORDER BY added_at_ms DESC, credential_id LIMIT 100";

/// A new passkey, unless its credential id is taken or the person already has `$8` passkeys.
pub const INSERT_PASSKEY: &str = "INSERT INTO passkeys \
     (credential_id, user_id, name, public_key, counters, added_at_ms) \
     SELECT $1, $2, $3, $4, $5, $6 \
     WHERE (SELECT COUNT(*) FROM passkeys WHERE user_id = $7) < $8 \
     ON CONFLICT (credential_id) DO NOTHING";

pub const PASSKEY_TAKEN: &str = "SELECT COUNT(*) FROM passkeys WHERE credential_id = $1";

/// What checking a sign-in with a passkey needs: its person, their user handle, its key and counters.
pub const SELECT_PASSKEY_FOR_SIGN_IN: &str = "SELECT p.user_id, u.passkey_handle, p.public_key, p.counters \
     FROM passkeys p JOIN users u ON u.id = p.user_id WHERE p.credential_id = $1";

/// A sign-in's new counters, only over the counters it was checked against: of two sign-ins racing with one
/// passkey (a cloned authenticator, a replay), one changes the row and the other is refused.
pub const UPDATE_PASSKEY_USE: &str = "UPDATE passkeys SET counters = $3, used_at_ms = $4 \
     WHERE credential_id = $1 AND counters = $2";

pub const DELETE_PASSKEY: &str =
    "DELETE FROM passkeys WHERE user_id = $1 AND credential_id = $2 RETURNING name";

pub const DELETE_EVERY_PASSKEY: &str = "DELETE FROM passkeys WHERE user_id = $1";

/// The person whose passkeys change, read (with the transaction's row lock) before an add or a removal: their
/// username for the audit entry, and the lock makes two adds at once wait for each other, so both cannot pass the
/// per-person limit.
pub const SELECT_PASSKEY_PERSON: &str = "SELECT username FROM users WHERE id = $1";
