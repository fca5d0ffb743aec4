//! The SQL of passkeys: the credentials a person added, found by credential id when one signs in.

/// The user handle a person's passkeys share (any of their rows holds it).
pub const SELECT_PASSKEY_USER_HANDLE: &str =
    "SELECT user_handle FROM passkeys WHERE user_id = $1 LIMIT 1";

/// A person's passkeys, newest first.
pub const SELECT_PASSKEYS: &str = "SELECT credential_id, name, added_at_ms, used_at_ms FROM passkeys \
     WHERE user_id = $1 ORDER BY added_at_ms DESC, credential_id LIMIT 100";

/// A new passkey, unless its credential id is taken or the person already has `$9` passkeys.
pub const INSERT_PASSKEY: &str = "INSERT INTO passkeys \
     (credential_id, user_id, user_handle, name, public_key, counters, added_at_ms) \
     SELECT $1, $2, $3, $4, $5, $6, $7 \
     WHERE (SELECT COUNT(*) FROM passkeys WHERE user_id = $8) < $9 \
     ON CONFLICT (credential_id) DO NOTHING";

pub const PASSKEY_TAKEN: &str = "SELECT COUNT(*) FROM passkeys WHERE credential_id = $1";

/// What checking a sign-in with a passkey needs.
pub const SELECT_PASSKEY_FOR_SIGN_IN: &str =
    "SELECT user_id, user_handle, public_key, counters FROM passkeys WHERE credential_id = $1";

pub const UPDATE_PASSKEY_USE: &str =
    "UPDATE passkeys SET counters = $2, used_at_ms = $3 WHERE credential_id = $1";

pub const DELETE_PASSKEY: &str =
    "DELETE FROM passkeys WHERE user_id = $1 AND credential_id = $2 RETURNING name";

/// Locks the person's row for the rest of the transaction (an update that changes nothing, which both backends
/// lock for), so two passkeys added at once cannot pass the per-person limit together; none when the person is
/// gone.
pub const LOCK_USER_FOR_PASSKEY: &str =
    "UPDATE users SET username = username WHERE id = $1 RETURNING username";
