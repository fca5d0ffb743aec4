-- The people who sign in to the web app, the one-time links that let the first of them in, and their
-- browser sessions (tower-sessions records), all in the same database as the questions (SPEC §6.1).
CREATE TABLE users (
    id TEXT PRIMARY KEY NOT NULL,
    username TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('admin', 'responder', 'viewer')),
    password_hash TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);

CREATE TABLE sign_in_links (
    token_hash TEXT PRIMARY KEY NOT NULL,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    used_at_ms INTEGER
);

CREATE TABLE web_sessions (
    id TEXT PRIMARY KEY NOT NULL,
    data TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
);
CREATE INDEX web_sessions_expiry ON web_sessions (expires_at_ms);
