-- Delivery truth (docs/deadlines.md): the asker's own deadline, how it reached Anteroom, when it last polled,
-- and the sentence a lost marker shows.
ALTER TABLE rounds ADD COLUMN asker_deadline_ms BIGINT;
-- Rounds asked before this migration came through a session's token or an API key; neither is anonymous.
ALTER TABLE rounds ADD COLUMN asked_through TEXT NOT NULL DEFAULT 'session_token'
    CHECK (asked_through IN ('session_token', 'api_key', 'anonymous'));
ALTER TABLE rounds ADD COLUMN asker_polled_at_ms BIGINT;
ALTER TABLE rounds ADD COLUMN asker_poll_interval_ms BIGINT;
ALTER TABLE sessions ADD COLUMN lost_detail TEXT;
-- Answers nobody has picked up yet: the sweep ends those whose asker stopped waiting.
CREATE INDEX rounds_answered_deadline ON rounds (deadline_ms) WHERE status = 'response_validated';
-- Three new reasons for a lost marker.
ALTER TABLE sessions DROP CONSTRAINT sessions_lost_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_lost_reason_check
    CHECK (lost_reason IN ('expired', 'stranded', 'asker_stopped', 'revoked', 'undelivered'));
