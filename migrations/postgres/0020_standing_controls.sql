-- Standing answers a person can pause and resume, and that may match a message by its beginning
-- (docs/standing-answers.md).
ALTER TABLE standing_answers ADD COLUMN paused_at_ms BIGINT;
ALTER TABLE standing_answers ADD COLUMN match_prefix BIGINT NOT NULL DEFAULT 0;
