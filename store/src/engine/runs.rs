//! Agent runs under `anteroom run`: starting one, its reports and output, a stop asked for, how it ended, and
//! the runs that went quiet; an ended run ends its session's open questions in the same transaction.

use chrono::{DateTime, Utc};

use super::{SqlStore, WriteTx, rows::rows_to_rounds};
use crate::{
    RunStore, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        audit::NewAuditEntry,
        ids::SessionId,
        round::Round,
        run::{LOST_AFTER, Run, RunEnd, RunStart, RunState, append_output},
    },
    records::{RoundRow, from_ms, from_ms_opt, to_ms},
    sql,
};

/// A `session_runs` row as read: run id, state, command, host, started, ended, heartbeat, exit code, signal,
/// who asked it to stop, who stopped it.
type RunRow = (
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
);

/// The same row with the kept output after it.
type RunOutputRow = (
    String,
    String,
    String,
    String,
    i64,
    Option<i64>,
    i64,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    String,
);

/// The most quiet runs one sweep declares lost.
const LOST_BATCH: i64 = 500;

fn run_of(row: RunRow) -> StoreResult<Run> {
    let (run_id, state, command, host, started, ended, heartbeat, code, signal, requested, stopped) =
        row;
    let state = RunState::parse(&state).ok_or_else(|| {
        ManagedInputError::state(format!("Run {run_id} has an unknown state {state:?}."))
    })?;
    Ok(Run {
        run_id,
        state,
        command,
        host,
        started_at: from_ms(started)?,
        ended_at: from_ms_opt(ended)?,
        heartbeat_at: from_ms(heartbeat)?,
        exit_code: code.and_then(|code| i32::try_from(code).ok()),
        signal: signal.and_then(|signal| i32::try_from(signal).ok()),
        stop_requested_by: requested,
        stopped_by: stopped,
    })
}

fn split_output(row: RunOutputRow) -> StoreResult<(Run, String)> {
    let (a, b, c, d, e, f, g, h, i, j, k, output) = row;
    Ok((run_of((a, b, c, d, e, f, g, h, i, j, k))?, output))
}

fn no_run(session: &SessionId) -> crate::StoreError {
    ManagedInputError::not_found(format!(
        "Session {session} has no run; start one with `anteroom run`."
    ))
    .into()
}

impl<D: Dialect> SqlStore<D> {
    /// The session's run and output, locked for this transaction.
    async fn locked_run(
        &self,
        tx: &mut WriteTx<D>,
        session: &SessionId,
    ) -> StoreResult<Option<(Run, String)>> {
        tx.optional::<RunOutputRow>(
            Statement::new(Self::locked(&sql::SELECT_RUN_WITH_OUTPUT)).bind(session.to_string()),
        )
        .await?
        .map(split_output)
        .transpose()
    }

    async fn write_run(
        &self,
        tx: &mut WriteTx<D>,
        session: &SessionId,
        run: &Run,
        output: &str,
    ) -> StoreResult<()> {
        tx.execute(
            Statement::new(sql::UPDATE_RUN)
                .bind(session.to_string())
                .bind(run.run_id.as_str())
                .bind(run.state.as_str())
                .bind(run.ended_at.map(to_ms))
                .bind(to_ms(run.heartbeat_at))
                .bind(run.exit_code.map(i64::from))
                .bind(run.signal.map(i64::from))
                .bind(run.stop_requested_by.clone())
                .bind(run.stopped_by.clone())
                .bind(output),
        )
        .await?;
        Ok(())
    }

    /// `run` has ended: its record written, its session's waiting questions ended with its reason, the session
    /// given the run's ending. Returns the questions it ended.
    async fn close_run(
        &self,
        tx: &mut WriteTx<D>,
        session_id: &SessionId,
        run: &Run,
        output: &str,
        now: DateTime<Utc>,
    ) -> StoreResult<Vec<Round>> {
        self.write_run(tx, session_id, run, output).await?;
        let reason = run.ending_reason();
        let unfinished = tx
            .all::<RoundRow>(
                Statement::new(Self::locked(sql::SELECT_UNFINISHED_ROUNDS))
                    .bind(session_id.to_string()),
            )
            .await?;
        let mut ending = Vec::new();
        for before in rows_to_rounds(unfinished)? {
            let mut round = before.clone();
            if round.end_with_run(&reason, now) {
                self.save_round(tx, &before, &round).await?;
                ending.push((before.status, round));
            }
        }
        // As for any question that ends on its own: the session's markers, the record, webhooks, live pages.
        let ended = self.announce_ended(tx, ending, now).await?;
        if let Some(status) = run.session_status() {
            let mut session = self.fetch_session(tx, session_id).await?;
            session.end_run(status, now);
            self.save_sessions(tx, &[&session]).await?;
        }
        let entry = NewAuditEntry::new(
            run.stopped_by.as_deref().unwrap_or("anteroom run"),
            "run.ended",
            session_id.to_string(),
            serde_json::json!({
                "run_id": run.run_id, "state": run.state.as_str(), "exit_code": run.exit_code,
                "signal": run.signal, "stopped_by": run.stopped_by,
            }),
        );
        self.audit(tx, &[entry], now).await?;
        Ok(ended)
    }
}

#[async_trait::async_trait]
impl<D: Dialect> RunStore for SqlStore<D> {
    async fn start_run(
        &self,
        session_id: &SessionId,
        run_id: &str,
        start: RunStart,
    ) -> StoreResult<Run> {
        start.validate()?;
        let start = start.cleaned();
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let mut session = self.fetch_session(&mut tx, session_id).await?;
        if let Some((live, _)) = self.locked_run(&mut tx, session_id).await?
            && live.is_live(now)
        {
            tx.rollback().await?;
            return Err(ManagedInputError::conflict(format!(
                "Session {session_id} already has a run on {} (started {}); stop it, or wait until it ends, \
                 before another `anteroom run` takes the session.",
                live.host,
                crate::domain::expiry::wire_time(live.started_at)
            ))
            .into());
        }
        tx.execute(
            Statement::new(sql::UPSERT_RUN)
                .bind(session_id.to_string())
                .bind(run_id)
                .bind(start.command.as_str())
                .bind(start.host.as_str())
                .bind(to_ms(now)),
        )
        .await?;
        session.start_run(now);
        self.save_sessions(&mut tx, &[&session]).await?;
        let entry = NewAuditEntry::new(
            "anteroom run",
            "run.started",
            session_id.to_string(),
            serde_json::json!({"run_id": run_id, "command": start.command, "host": start.host}),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        Ok(Run {
            run_id: run_id.to_owned(),
            state: RunState::Running,
            command: start.command,
            host: start.host,
            started_at: now,
            ended_at: None,
            heartbeat_at: now,
            exit_code: None,
            signal: None,
            stop_requested_by: None,
            stopped_by: None,
        })
    }

    async fn run(&self, session: &SessionId) -> StoreResult<Option<Run>> {
        self.optional::<RunRow>(Statement::new(sql::SELECT_RUN.as_str()).bind(session.to_string()))
            .await?
            .map(run_of)
            .transpose()
    }

    async fn run_output(&self, session: &SessionId) -> StoreResult<Option<String>> {
        Ok(self
            .optional::<(String,)>(Statement::new(sql::SELECT_RUN_OUTPUT).bind(session.to_string()))
            .await?
            .map(|(output,)| output))
    }

    async fn report_run(
        &self,
        session: &SessionId,
        run_id: &str,
        output: &str,
    ) -> StoreResult<Run> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let (mut run, kept) = self
            .locked_run(&mut tx, session)
            .await?
            .ok_or_else(|| no_run(session))?;
        if run.run_id != run_id || run.state.is_ended() {
            tx.rollback().await?;
            return Err(ManagedInputError::state(format!(
                "This run of session {session} has ended ({}); the session is not waiting for its reports.",
                if run.run_id == run_id { run.state.as_str() } else { "another run took the session over" }
            ))
            .into());
        }
        run.heartbeat_at = now;
        let kept = if output.is_empty() {
            kept
        } else {
            append_output(&kept, output)
        };
        self.write_run(&mut tx, session, &run, &kept).await?;
        tx.commit().await?;
        Ok(run)
    }

    async fn request_stop(&self, session: &SessionId, by: &str) -> StoreResult<Run> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let (run, _) = self
            .locked_run(&mut tx, session)
            .await?
            .ok_or_else(|| no_run(session))?;
        if run.state.is_ended() {
            tx.rollback().await?;
            return Err(ManagedInputError::state(format!(
                "The run of session {session} has already ended ({}).",
                run.state.as_str()
            ))
            .into());
        }
        tx.execute(
            Statement::new(sql::REQUEST_STOP)
                .bind(session.to_string())
                .bind(by),
        )
        .await?;
        if run.stop_requested_by.is_none() {
            let entry = NewAuditEntry::new(
                by,
                "run.stop_requested",
                session.to_string(),
                serde_json::json!({"run_id": run.run_id, "command": run.command, "host": run.host}),
            );
            self.audit(&mut tx, &[entry], now).await?;
        }
        tx.commit().await?;
        let mut run = run;
        run.stop_requested_by.get_or_insert_with(|| by.to_owned());
        Ok(run)
    }

    async fn end_run(
        &self,
        session: &SessionId,
        run_id: &str,
        end: &RunEnd,
        output: &str,
    ) -> StoreResult<(Run, Vec<Round>)> {
        end.validate()?;
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let (mut run, kept) = self
            .locked_run(&mut tx, session)
            .await?
            .ok_or_else(|| no_run(session))?;
        if run.run_id != run_id {
            tx.rollback().await?;
            return Err(ManagedInputError::state(format!(
                "Another run has taken session {session} over; this one's end is not recorded."
            ))
            .into());
        }
        if run.state.is_ended() && run.state != RunState::Lost {
            // Said twice (a retried report): the first word stands.
            tx.rollback().await?;
            return Ok((run, Vec::new()));
        }
        run.end(end, now);
        let kept = append_output(&kept, output);
        let ended = self.close_run(&mut tx, session, &run, &kept, now).await?;
        tx.commit().await?;
        Ok((run, ended))
    }

    async fn lose_quiet_runs(&self) -> StoreResult<Vec<(SessionId, Vec<Round>)>> {
        let now = self.clock_now();
        let quiet = self
            .all::<(String,)>(
                Statement::new(sql::SELECT_QUIET_RUNS)
                    .bind(to_ms(now - LOST_AFTER))
                    .bind(LOST_BATCH),
            )
            .await?;
        let mut lost = Vec::with_capacity(quiet.len());
        for (session,) in quiet {
            let Ok(session) = SessionId::parse(session) else {
                continue;
            };
            let mut tx = self.begin_write().await?;
            // Read again under the lock: a report may have arrived since.
            match self.locked_run(&mut tx, &session).await? {
                Some((mut run, kept)) if run.state == RunState::Running && !run.is_live(now) => {
                    run.lose(now);
                    let ended = self.close_run(&mut tx, &session, &run, &kept, now).await?;
                    tx.commit().await?;
                    lost.push((session, ended));
                }
                _ => tx.rollback().await?,
            }
        }
        Ok(lost)
    }
}
