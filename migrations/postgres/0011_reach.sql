-- Reaching people where they are (docs/reach.md): the outbox learns the per-channel formats, people gain an
-- optional e-mail (how a Slack user is recognised, and where mail goes), and each question's Slack message is
-- remembered so it can be updated when the question ends.
ALTER TABLE webhook_outbox DROP CONSTRAINT IF EXISTS webhook_outbox_format_check;
ALTER TABLE webhook_outbox ADD CONSTRAINT webhook_outbox_format_check
    CHECK (format IN ('json', 'slack', 'slack_app', 'email', 'push'));

-- Stored lower-cased; one person per address.
ALTER TABLE users ADD COLUMN email TEXT;
CREATE UNIQUE INDEX users_email ON users (email) WHERE email IS NOT NULL;

CREATE TABLE slack_messages (
    round_id TEXT PRIMARY KEY NOT NULL,
    channel TEXT NOT NULL,
    ts TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
);
