-- Escalation (docs/teams.md#escalation): a session's ladder, and the steps each question has climbed (a step is
-- taken once, by whichever instance inserts its row first).
ALTER TABLE session_settings ADD COLUMN escalation TEXT;
ALTER TABLE session_settings ADD COLUMN nobody_available_after_minutes BIGINT;

CREATE TABLE escalations (
    round_id TEXT NOT NULL REFERENCES rounds (round_id) ON DELETE CASCADE,
    step BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (round_id, step)
);

-- A new reason for a lost marker: nobody was available.
ALTER TABLE sessions DROP CONSTRAINT sessions_lost_reason_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_lost_reason_check
    CHECK (lost_reason IN ('expired', 'stranded', 'asker_stopped', 'revoked', 'undelivered', 'nobody_available'));
