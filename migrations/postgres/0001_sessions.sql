-- Sessions: one agent run a person may have to attend to (SPEC §2).
-- Times are Unix milliseconds (UTC) so both backends compare and sort them the same way.
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    agent TEXT,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'needs_input', 'idle', 'finished', 'failed', 'cancelled')),
    blocked_on_elicitation BOOLEAN NOT NULL DEFAULT FALSE,
    lost_reason TEXT CHECK (lost_reason IN ('expired', 'stranded')),
    lost_at_ms BIGINT,
    lost_request_id TEXT,
    lost_summary TEXT,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);

CREATE INDEX sessions_status_updated ON sessions (status, updated_at_ms);
