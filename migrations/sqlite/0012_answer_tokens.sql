-- Answering outside the web app (docs/reach.md#answer-links): a link in an e-mail (or a push notification's
-- button) carries a single-use token, stored only as its hash, bound to one person, one question and one of
-- its quick answers (by index; NULL opens nothing but the form), and dead once used or past its question's
-- deadline. People choose whether questions reach them by e-mail: never, at once, or after some minutes.
CREATE TABLE answer_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    round_id TEXT NOT NULL,
    choice INTEGER NOT NULL,
    channel TEXT NOT NULL CHECK (channel IN ('email', 'push')),
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    used_at_ms INTEGER
);
CREATE INDEX answer_tokens_expiry ON answer_tokens (expires_at_ms);

ALTER TABLE users ADD COLUMN email_questions TEXT NOT NULL DEFAULT 'off'
    CHECK (email_questions IN ('off', 'all', 'unanswered'));
ALTER TABLE users ADD COLUMN email_after_minutes INTEGER NOT NULL DEFAULT 10;
