-- Reach, finished (docs/reach.md): a Slack account linked to a person by hand, for whom Slack's e-mail is not
-- their Anteroom one (proved both ways: the link comes from Slack's signed click, and is taken by the signed-in
-- person); a session's own Slack channel; and digests, so a burst of questions reaches a person as one message.
CREATE TABLE slack_links (
    slack_user TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    linked_at_ms BIGINT NOT NULL
);
CREATE INDEX slack_links_user ON slack_links (user_id);

-- Offered in the ephemeral reply to a click from an unknown Slack user: single-use, short-lived, stored hashed.
CREATE TABLE slack_link_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL,
    slack_user TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);

-- What an admin set for one session; a session without a row takes the defaults.
CREATE TABLE session_settings (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    slack_channel TEXT,
    updated_at_ms BIGINT NOT NULL
);

-- More than this many questions for one person in a minute, and the rest wait for one digest (0: never).
ALTER TABLE users ADD COLUMN digest_after BIGINT NOT NULL DEFAULT 5;
CREATE TABLE digest_held (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    channel TEXT NOT NULL CHECK (channel IN ('email', 'push')),
    round_id TEXT NOT NULL,
    held_at_ms BIGINT NOT NULL,
    PRIMARY KEY (user_id, channel, round_id)
);
-- How many messages each person was sent in the last minute (what a digest counts) is read by format and time.
CREATE INDEX webhook_outbox_format_created ON webhook_outbox (format, created_at_ms);
