-- Passkeys (WebAuthn credentials) a person adds on their profile to sign in with one touch
-- (docs/operations.md#passkeys). A passkey is found by its credential id when it signs in; public_key and counters
-- are the WebAuthn library's encodings of what the authenticator registered and of what changes at each use.
-- users.passkey_handle is the random WebAuthn user handle all of a person's passkeys share (it names no one), made
-- once with their first passkey.
ALTER TABLE users ADD COLUMN passkey_handle TEXT;
CREATE UNIQUE INDEX users_passkey_handle ON users (passkey_handle);

CREATE TABLE passkeys (
    credential_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    public_key TEXT NOT NULL,
    counters TEXT NOT NULL,
    added_at_ms INTEGER NOT NULL,
    used_at_ms INTEGER
);
CREATE INDEX passkeys_user ON passkeys (user_id);
