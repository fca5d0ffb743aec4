//! The SQL of agent runs under `anteroom run` (docs/runs.md): one row per session, its latest run.

/// A run's columns as `RunRow` reads them.
const RUN_COLUMNS: &str = "run_id, state, command, host, started_at_ms, ended_at_ms, heartbeat_at_ms, \
     exit_code, signal, stop_requested_by, stopped_by";

pub static SELECT_RUN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {RUN_COLUMNS} FROM session_runs WHERE session_id = $1")
});

/// The run with its kept output, read for a report that appends to it.
pub static SELECT_RUN_WITH_OUTPUT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("SELECT {RUN_COLUMNS}, output FROM session_runs WHERE session_id = $1")
});

pub const SELECT_RUN_OUTPUT: &str = "SELECT output FROM session_runs WHERE session_id = $1";

/// A new run takes the session's row over (the previous run has ended or gone quiet: checked before).
pub const UPSERT_RUN: &str = "INSERT INTO session_runs (session_id, run_id, state, command, host, \
     started_at_ms, ended_at_ms, heartbeat_at_ms, exit_code, signal, stop_requested_by, stopped_by, output) \
     VALUES ($1, $2, 'running', $3, $4, $5, NULL, $5, NULL, NULL, NULL, NULL, '') \
     ON CONFLICT (session_id) DO UPDATE SET run_id = excluded.run_id, state = 'running', \
     command = excluded.command, host = excluded.host, started_at_ms = excluded.started_at_ms, \
     ended_at_ms = NULL, heartbeat_at_ms = excluded.heartbeat_at_ms, exit_code = NULL, signal = NULL, \
     stop_requested_by = NULL, stopped_by = NULL, output = ''";

/// A run's state written back (its output with it).
pub const UPDATE_RUN: &str = "UPDATE session_runs SET state = $3, ended_at_ms = $4, heartbeat_at_ms = $5, \
     exit_code = $6, signal = $7, stop_requested_by = $8, stopped_by = $9, output = $10 \
     WHERE session_id = $1 AND run_id = $2";

pub const REQUEST_STOP: &str = "UPDATE session_runs SET stop_requested_by = COALESCE(stop_requested_by, $2) \
     WHERE session_id = $1 AND state = 'running'";

/// Running runs whose last report is older than $1, oldest first, at most $2.
pub const SELECT_QUIET_RUNS: &str = "SELECT session_id FROM session_runs \
     WHERE state = 'running' AND heartbeat_at_ms < $1 ORDER BY heartbeat_at_ms LIMIT $2";
