-- Credentials: each session's producer token and the API keys, stored only as SHA-256 hashes (SPEC §5.2, §6).
ALTER TABLE sessions ADD COLUMN producer_token_hash TEXT;
CREATE UNIQUE INDEX sessions_producer_token ON sessions (producer_token_hash);

-- A hash of the producer's request body, so a retried create is recognised (SPEC §5.1).
ALTER TABLE rounds ADD COLUMN fingerprint TEXT;

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'responder', 'viewer')),
    key_hash TEXT NOT NULL UNIQUE,
    created_at_ms INTEGER NOT NULL,
    revoked_at_ms INTEGER
);
