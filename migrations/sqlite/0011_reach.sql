-- Reaching people where they are (docs/reach.md): the outbox learns the per-channel formats, people gain an
-- optional e-mail (how a Slack user is recognised, and where mail goes), and each question's Slack message is
-- remembered so it can be updated when the question ends.
-- SQLite cannot widen a CHECK in place: the outbox is copied into a table with the wider one.
CREATE TABLE webhook_outbox_wider (
    id TEXT PRIMARY KEY NOT NULL,
    endpoint TEXT NOT NULL,
    format TEXT NOT NULL CHECK (format IN ('json', 'slack', 'slack_app', 'email', 'push')),
    event TEXT NOT NULL,
    dedupe_key TEXT NOT NULL UNIQUE,
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at_ms INTEGER NOT NULL,
    locked_until_ms INTEGER,
    last_status INTEGER,
    last_error TEXT,
    created_at_ms INTEGER NOT NULL,
    delivered_at_ms INTEGER
);
INSERT INTO webhook_outbox_wider SELECT id, endpoint, format, event, dedupe_key, payload, status, attempts,
    next_attempt_at_ms, locked_until_ms, last_status, last_error, created_at_ms, delivered_at_ms FROM webhook_outbox;
DROP TABLE webhook_outbox;
ALTER TABLE webhook_outbox_wider RENAME TO webhook_outbox;
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at_ms) WHERE status = 'pending';

-- Stored lower-cased; one person per address.
ALTER TABLE users ADD COLUMN email TEXT;
CREATE UNIQUE INDEX users_email ON users (email) WHERE email IS NOT NULL;

CREATE TABLE slack_messages (
    round_id TEXT PRIMARY KEY NOT NULL,
    channel TEXT NOT NULL,
    ts TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
);
