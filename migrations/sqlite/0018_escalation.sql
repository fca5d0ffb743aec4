-- Escalation (docs/teams.md#escalation): a session's ladder, and the steps each question has climbed (a step is
-- taken once, by whichever instance inserts its row first).
ALTER TABLE session_settings ADD COLUMN escalation TEXT;
ALTER TABLE session_settings ADD COLUMN nobody_available_after_minutes INTEGER;

CREATE TABLE escalations (
    round_id TEXT NOT NULL REFERENCES rounds (round_id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (round_id, step)
);

-- A new reason for a lost marker: nobody was available. SQLite cannot change a column's CHECK, so the column is
-- replaced, and the queue's index on it with it.
DROP INDEX sessions_queue;
ALTER TABLE sessions RENAME COLUMN lost_reason TO lost_reason_before_0018;
ALTER TABLE sessions ADD COLUMN lost_reason TEXT
    CHECK (lost_reason IN ('expired', 'stranded', 'asker_stopped', 'revoked', 'undelivered', 'nobody_available'));
UPDATE sessions SET lost_reason = lost_reason_before_0018;
ALTER TABLE sessions DROP COLUMN lost_reason_before_0018;
CREATE INDEX sessions_queue ON sessions (
    (CASE WHEN open_rounds > 0 THEN 0 WHEN lost_reason IS NOT NULL THEN 1 ELSE 2 END),
    oldest_open_ms, updated_at_ms DESC, id
);
