-- The agent run of a session under `anteroom run` (docs/runs.md): one row per session, the latest run, replaced
-- when a new run takes the session over. Its output is the last 64 KiB the agent printed, cleaned and masked.
CREATE TABLE session_runs (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id TEXT NOT NULL,
    -- 'running', 'finished', 'failed', 'stopped' or 'lost' ('needs_input' is never stored).
    state TEXT NOT NULL,
    command TEXT NOT NULL,
    host TEXT NOT NULL,
    started_at_ms BIGINT NOT NULL,
    ended_at_ms BIGINT,
    heartbeat_at_ms BIGINT NOT NULL,
    exit_code BIGINT,
    signal BIGINT,
    stop_requested_by TEXT,
    stopped_by TEXT,
    output TEXT NOT NULL DEFAULT ''
);

-- The lost-run sweep reads only the running runs, oldest heartbeat first.
CREATE INDEX session_runs_running ON session_runs (heartbeat_at_ms) WHERE state = 'running';
