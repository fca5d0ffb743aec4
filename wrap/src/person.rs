//! Asking a person through Anteroom as the round's worker: open the round, hold its lease while waiting, and
//! walk the delivery steps once the answer is in (docs/lifecycle.md#worker-leases).

use std::{future::Future, time::Duration};

use anteroom_domain::{
    ids::RequestKey,
    round::{ElicitationRequest, ElicitationResponse, ResponseAction, RoundStatus},
};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::anteroom::{Anteroom, AnteroomError, Ask, DeliveryStep, HeldLease, RoundState};

/// How long a lease lasts: the domain's default, renewed every third of it while the wrapper waits (a long-poll
/// takes up to 25 s).
pub(crate) const LEASE_SECONDS: i64 = anteroom_domain::round::LEASE_DEFAULT.num_seconds();

/// Why a question got no answer from the wrapper.
pub(crate) enum NoAnswer {
    /// The one who asked withdrew it (the server's or the harness's `notifications/cancelled`): nobody expects a
    /// reply.
    Withdrawn,
    /// Nobody answered, or Anteroom could not be asked: the asker gets an error saying so.
    Because(String),
}

impl From<String> for NoAnswer {
    fn from(message: String) -> Self {
        Self::Because(message)
    }
}

fn no_answer(error: AnteroomError) -> NoAnswer {
    NoAnswer::Because(format!("no answer: {error}"))
}

/// How a waiting task hears that whoever asked withdrew (`notifications/cancelled`).
pub(crate) struct Withdrawal(watch::Receiver<bool>);

/// How the relay withdraws a waiting task's question.
pub(crate) type Withdraw = watch::Sender<bool>;

impl Withdrawal {
    pub(crate) fn new() -> (Withdraw, Self) {
        let (withdraw, withdrawn) = watch::channel(false);
        (withdraw, Self(withdrawn))
    }

    /// Resolves once withdrawn; never, when the relay is gone and nobody can withdraw any more.
    pub(crate) async fn wait(&mut self) {
        if self.0.wait_for(|withdrawn| *withdrawn).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A round a person answered, with the lease the wrapper delivers it under.
pub(crate) struct Answered {
    pub round: RoundState,
    pub lease: HeldLease,
}

/// Opens `ask` as a round, works it, and waits for the person; `withdrawn` ends the wait (the round ends
/// `cancelled` with `why`).
pub(crate) async fn ask_person(
    anteroom: &Anteroom,
    ask: &Ask,
    withdrawn: &mut Withdrawal,
    why: &str,
) -> Result<Answered, NoAnswer> {
    let round = anteroom.ask(ask).await.map_err(no_answer)?;
    let lease = anteroom
        .claim(round.round_id, LEASE_SECONDS)
        .await
        .map_err(no_answer)?;
    tokio::select! {
        answered = wait_for_person(anteroom, &round, &lease) => match answered {
            Ok(answered) => Ok(Answered { round: answered, lease }),
            Err(Waited::Ended(why)) => Err(NoAnswer::Because(why)),
            Err(Waited::Failed(error)) => {
                // Anteroom could not be asked any more: end the round while the lease still holds, so nobody
                // answers a question its asker already gave up on (best effort: Anteroom may be gone).
                let why = format!("no answer: {error}");
                let _ = anteroom.fail(round.round_id, &lease, "worker_gave_up", &why).await;
                Err(NoAnswer::Because(why))
            }
        },
        () = withdrawn.wait() => {
            if let Err(error) = anteroom.fail(round.round_id, &lease, "cancelled", why).await {
                eprintln!("anteroom wrap: the question was withdrawn, but {error}");
            }
            Err(NoAnswer::Withdrawn)
        }
    }
}

/// Why a wait for a person ended without an answer.
enum Waited {
    /// The round ended (expired, cancelled, …): its own words.
    Ended(String),
    /// Anteroom could not be asked (after its retries): the round may still be open.
    Failed(AnteroomError),
}

/// Waits for a person's answer, renewing the lease as it goes; an ended round is an honest error.
async fn wait_for_person(
    anteroom: &Anteroom,
    round: &RoundState,
    lease: &HeldLease,
) -> Result<RoundState, Waited> {
    let mut renewed = tokio::time::Instant::now();
    loop {
        let state = anteroom
            .wait(round.round_id)
            .await
            .map_err(Waited::Failed)?;
        match state.status {
            RoundStatus::Pending => {}
            RoundStatus::Failed => {
                let why = state
                    .failure
                    .map(|failure| format!("{} ({})", failure.message, failure.code.as_str()))
                    .unwrap_or_else(|| "the question ended without an answer".to_owned());
                return Err(Waited::Ended(format!("no answer: {why}")));
            }
            _ => return Ok(state),
        }
        if renewed.elapsed() >= renew_every() {
            anteroom
                .renew(round.round_id, lease, LEASE_SECONDS)
                .await
                .map_err(Waited::Failed)?;
            renewed = tokio::time::Instant::now();
        }
    }
}

fn renew_every() -> Duration {
    Duration::from_secs(u64::try_from(LEASE_SECONDS / 3).unwrap_or(20))
}

impl Answered {
    /// The person's answer to one request of the round.
    pub fn response(&self, key: &RequestKey) -> Result<&ElicitationResponse, NoAnswer> {
        self.round
            .responses
            .as_ref()
            .and_then(|responses| responses.get(key))
            .ok_or_else(|| {
                NoAnswer::Because(format!(
                    "no answer: the round was answered without request {key}"
                ))
            })
    }

    /// `response` as the MCP `ElicitResult` the server reads.
    pub fn elicit_result(response: &ElicitationResponse, request: &ElicitationRequest) -> Value {
        match (response.action, request) {
            (ResponseAction::Accept, ElicitationRequest::Form { .. }) => {
                json!({"action": "accept", "content": response.content.clone().unwrap_or_default()})
            }
            (action, _) => json!({"action": action.as_str()}),
        }
    }

    /// `start-delivery`: from here a vanished wrapper leaves the round to the recovery job.
    pub async fn start_delivery(&self, anteroom: &Anteroom) -> Result<(), NoAnswer> {
        anteroom
            .step(self.round.round_id, &self.lease, DeliveryStep::Start)
            .await
            .map(drop)
            .map_err(no_answer)
    }

    /// One forward step after the answer was handed over; a refusal is only logged (the answer is out).
    pub async fn step(&self, anteroom: &Anteroom, step: DeliveryStep) {
        if let Err(error) = anteroom.step(self.round.round_id, &self.lease, step).await {
            eprintln!("anteroom wrap: the answer was handed over, but {error}");
        }
    }

    /// Ends the round as failed with `code`, saying why; a refusal is only logged.
    pub async fn fail(&self, anteroom: &Anteroom, code: &str, message: &str) {
        if let Err(error) = anteroom
            .fail(self.round.round_id, &self.lease, code, message)
            .await
        {
            eprintln!("anteroom wrap: {message}, but {error}");
        }
    }

    /// Runs `work` while keeping the lease alive, so a long retry is not taken for a vanished worker.
    pub async fn holding<T>(&self, anteroom: &Anteroom, work: impl Future<Output = T>) -> T {
        tokio::pin!(work);
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + renew_every(), renew_every());
        loop {
            tokio::select! {
                done = &mut work => return done,
                _ = ticks.tick() => {
                    if let Err(error) = anteroom
                        .renew(self.round.round_id, &self.lease, LEASE_SECONDS)
                        .await
                    {
                        eprintln!("anteroom wrap: cannot renew the lease of a delivery: {error}");
                    }
                }
            }
        }
    }
}
