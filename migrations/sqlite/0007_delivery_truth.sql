-- Delivery truth (docs/deadlines.md): the asker's own deadline, how it reached Anteroom, when it last polled,
-- and the sentence a lost marker shows.
ALTER TABLE rounds ADD COLUMN asker_deadline_ms INTEGER;
-- Rounds asked before this migration came through a session's token or an API key; neither is anonymous.
ALTER TABLE rounds ADD COLUMN asked_through TEXT NOT NULL DEFAULT 'session_token'
    CHECK (asked_through IN ('session_token', 'api_key', 'anonymous'));
ALTER TABLE rounds ADD COLUMN asker_polled_at_ms INTEGER;
ALTER TABLE rounds ADD COLUMN asker_poll_interval_ms INTEGER;
ALTER TABLE sessions ADD COLUMN lost_detail TEXT;
-- Answers nobody has picked up yet: the sweep ends those whose asker stopped waiting.
CREATE INDEX rounds_answered_deadline ON rounds (deadline_ms) WHERE status = 'response_validated';
-- Three new reasons for a lost marker. SQLite cannot change a column's CHECK, so the column is replaced.
ALTER TABLE sessions RENAME COLUMN lost_reason TO lost_reason_before_0007;
ALTER TABLE sessions ADD COLUMN lost_reason TEXT
    CHECK (lost_reason IN ('expired', 'stranded', 'asker_stopped', 'revoked', 'undelivered'));
UPDATE sessions SET lost_reason = lost_reason_before_0007;
ALTER TABLE sessions DROP COLUMN lost_reason_before_0007;
