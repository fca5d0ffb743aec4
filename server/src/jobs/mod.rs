//! Scheduled jobs (docs/operations.md#scheduled-jobs), run by `tokio-cron-scheduler` inside `anteroom serve`. Each job is a small module
//! with one `run` function; each is safe on several instances at once, because every effect is a conditional
//! update in the store (one expiry, one recovery per round, however many instances tick).

pub mod escalate;
pub mod expire;
pub mod gate_probe;
pub mod lost_runs;
pub mod purge;
pub mod recover;
pub mod seal_audit;
pub mod stranded;
pub mod tally;

use std::{future::Future, pin::Pin};

use tokio_cron_scheduler::{Job, JobScheduler, JobSchedulerError};

use crate::AppState;

/// The default schedules: the one home of each, read by [`Schedules::default`] and by the command line.
pub mod default_schedule {
    pub const EXPIRE: &str = "*/15 * * * * *";
    pub const SWEEP_STRANDED: &str = "0 */5 * * * *";
    pub const RECOVER_LEASES: &str = "0 * * * * *";
    pub const PROBE_GATE: &str = "0 */5 * * * *";
    pub const DELIVER_WEBHOOKS: &str = "*/10 * * * * *";
    pub const PURGE: &str = "0 0 3 * * *";
    pub const SEAL_AUDIT: &str = "*/10 * * * * *";
    pub const ESCALATE: &str = "*/15 * * * * *";
    pub const TALLY: &str = "*/10 * * * * *";
    pub const LOST_RUNS: &str = "*/20 * * * * *";
}

/// Cron schedules (six fields, seconds first) of the jobs.
#[derive(Debug, Clone)]
pub struct Schedules {
    pub expire: String,
    pub sweep_stranded: String,
    pub recover_leases: String,
    pub probe_gate: String,
    pub deliver_webhooks: String,
    pub purge: String,
    pub seal_audit: String,
    pub escalate: String,
    pub tally: String,
    pub lost_runs: String,
    /// Scheduled backups of an embedded database; none by default.
    pub backup: Option<crate::backup::BackupSchedule>,
}

impl Default for Schedules {
    fn default() -> Self {
        Self {
            expire: default_schedule::EXPIRE.to_owned(),
            sweep_stranded: default_schedule::SWEEP_STRANDED.to_owned(),
            recover_leases: default_schedule::RECOVER_LEASES.to_owned(),
            probe_gate: default_schedule::PROBE_GATE.to_owned(),
            deliver_webhooks: default_schedule::DELIVER_WEBHOOKS.to_owned(),
            purge: default_schedule::PURGE.to_owned(),
            seal_audit: default_schedule::SEAL_AUDIT.to_owned(),
            escalate: default_schedule::ESCALATE.to_owned(),
            tally: default_schedule::TALLY.to_owned(),
            lost_runs: default_schedule::LOST_RUNS.to_owned(),
            backup: None,
        }
    }
}

type JobFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

fn job(
    schedule: &str,
    state: &AppState,
    run: fn(AppState) -> JobFuture,
) -> Result<Job, JobSchedulerError> {
    let state = state.clone();
    Job::new_async(schedule, move |_id, _scheduler| run(state.clone()))
}

/// Starts every job. The gate probe is left out in development, where the URL it would probe is a laptop's.
pub async fn start(
    state: &AppState,
    schedules: &Schedules,
    development: bool,
) -> Result<JobScheduler, JobSchedulerError> {
    let scheduler = JobScheduler::new().await?;
    deliver_on_events(state.clone());
    scheduler
        .add(job(&schedules.expire, state, |s| {
            Box::pin(async move {
                expire::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.sweep_stranded, state, |s| {
            Box::pin(async move {
                stranded::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.recover_leases, state, |s| {
            Box::pin(async move {
                recover::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.deliver_webhooks, state, |s| {
            Box::pin(async move {
                anteroom_reach::outbox::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.escalate, state, |s| {
            Box::pin(async move {
                escalate::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.seal_audit, state, |s| {
            Box::pin(async move {
                seal_audit::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.tally, state, |s| {
            Box::pin(async move {
                tally::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.lost_runs, state, |s| {
            Box::pin(async move {
                lost_runs::run(s).await;
            })
        })?)
        .await?;
    scheduler
        .add(job(&schedules.purge, state, |s| {
            Box::pin(async move {
                purge::run(s).await;
            })
        })?)
        .await?;
    if let Some(backup) = schedules.backup.clone() {
        let state = state.clone();
        let cron = backup.cron.clone();
        scheduler
            .add(Job::new_async(cron.as_str(), move |_id, _scheduler| {
                let (state, backup) = (state.clone(), backup.clone());
                Box::pin(async move {
                    match crate::backup::scheduled(
                        state.store.as_ref(),
                        &backup.folder,
                        backup.keep,
                    )
                    .await
                    {
                        Ok(report) => tracing::info!(%report, "backup: written"),
                        Err(error) => {
                            tracing::error!(
                                error = format!("{error:#}"),
                                "backup: FAILED; the next tick tries again"
                            );
                        }
                    }
                })
            })?)
            .await?;
    }
    if development {
        tracing::info!("development mode: the gate probe does not run");
    } else {
        scheduler
            .add(job(&schedules.probe_gate, state, |s| {
                Box::pin(async move {
                    gate_probe::run(s).await;
                })
            })?)
            .await?;
    }
    scheduler.start().await?;
    Ok(scheduler)
}

/// How long the outbox waiter gathers further events before it delivers: one tick for a burst of questions.
const KICK_GATHER: std::time::Duration = std::time::Duration::from_millis(20);

/// Delivers the outbox as soon as this instance sees a question asked, answered or ended, so a push, a Slack
/// message or a mail leaves within moments instead of at the next scheduled tick (which stays, for what this
/// instance does not hear of and for retries). Runs until the event hub closes.
pub fn deliver_on_events(state: AppState) -> tokio::task::JoinHandle<()> {
    use crate::events::EventKind;
    let mut events = state.events.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(event) if event.kind == EventKind::SessionChanged => continue,
                // Missed events are still something to deliver.
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
            tokio::time::sleep(KICK_GATHER).await;
            // What arrived meanwhile is covered by this tick.
            while !events.is_empty() {
                if events.try_recv().is_err() {
                    break;
                }
            }
            anteroom_reach::outbox::run(state.clone()).await;
        }
    })
}
