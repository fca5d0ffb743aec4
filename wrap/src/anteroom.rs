//! The wrapper's side of Anteroom: it asks through the session's capability URL and is the worker of the rounds
//! it opens — claim, renew while waiting, start delivery, delivered, resolve, or fail with a code
//! (docs/lifecycle.md#worker-leases).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anteroom_domain::{
    ids::{OwnerId, RequestKey, RoundId},
    round::{ElicitationRequest, ElicitationResponse, FailureCode, OperationKind, RoundStatus},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Why a call to Anteroom did not give what the wrapper needed; every variant says what happened.
#[derive(Debug, thiserror::Error)]
pub enum AnteroomError {
    /// The URL itself is not repeated: it may hold a token.
    #[error(
        "ELICITATION_REQUEST_URL is not a session's capability URL (…/api/v1/s/TOKEN/elicitations)"
    )]
    NotACapabilityUrl,
    /// The request never reached Anteroom (the connection failed): safe to send again.
    #[error("Anteroom could not be reached: {0}")]
    NotReached(String),
    /// The request may have reached Anteroom, but no reply came (a timeout, a broken connection).
    #[error("Anteroom could not be reached: {0}")]
    Unreachable(String),
    #[error("Anteroom refused {what}: {status} {body}")]
    Refused {
        what: &'static str,
        status: u16,
        body: String,
    },
    #[error("Anteroom's reply to {what} could not be read: {error}")]
    Unreadable { what: &'static str, error: String },
    #[error("the wrapper is stopping")]
    Stopping,
}

impl AnteroomError {
    /// Whether a write may have been done although its reply said nothing: the reply was lost, or Anteroom
    /// was away or busy. The round itself can tell.
    fn outcome_unknown(&self) -> bool {
        match self {
            Self::NotReached(_) | Self::Unreachable(_) => true,
            Self::Refused { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            Self::NotACapabilityUrl | Self::Unreadable { .. } | Self::Stopping => false,
        }
    }

    /// Whether sending the same request again is safe and may succeed.
    fn may_retry(&self, retry_timeouts: bool) -> bool {
        match self {
            Self::NotReached(_) => true,
            Self::Unreachable(_) => retry_timeouts,
            Self::Refused { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            Self::NotACapabilityUrl | Self::Unreadable { .. } | Self::Stopping => false,
        }
    }
}

/// A failed attempt, with how long Anteroom asked the wrapper to wait before the next.
struct Transient {
    error: AnteroomError,
    retry_after: Option<Duration>,
}

/// How many times a request is sent at most ([`Anteroom::send`]).
const ATTEMPTS: u32 = 5;
/// The longest pause between two attempts, whatever `Retry-After` says.
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// A round as the wrapper needs it: where it stands, and the answers once given.
#[derive(Debug, Clone, Deserialize)]
pub struct RoundState {
    pub round_id: RoundId,
    pub status: RoundStatus,
    pub deadline: DateTime<Utc>,
    pub responses: Option<BTreeMap<RequestKey, ElicitationResponse>>,
    pub failure: Option<RoundFailure>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RoundFailure {
    pub code: FailureCode,
    pub message: String,
}

/// A lease the wrapper holds on one of its rounds.
#[derive(Debug, Clone, Deserialize)]
pub struct HeldLease {
    pub owner_id: OwnerId,
    pub lease_token: String,
    pub expires_at: DateTime<Utc>,
}

/// What the wrapper asks: the requests of one round and the operation they belong to.
#[derive(Debug, Clone, Serialize)]
pub struct Ask {
    pub logical_operation_id: String,
    pub server: Option<String>,
    pub operation_kind: OperationKind,
    pub operation_name: String,
    pub requests: BTreeMap<RequestKey, ElicitationRequest>,
    pub request_state: Option<String>,
    pub round_index: u32,
    pub round_limit: u32,
    /// When the server stops waiting, if it said (the question ends for people then too).
    pub deadline: Option<DateTime<Utc>>,
}

/// Anteroom, reached through one session's capability URL.
#[derive(Debug, Clone)]
pub struct Anteroom {
    http: reqwest::Client,
    /// `{public url}/api/v1/s/{token}`.
    session_base: String,
    owner: OwnerId,
    /// The leases this worker holds on rounds not yet resolved or failed: what it ends when it stops.
    held: Arc<Mutex<HashMap<RoundId, Held>>>,
    /// Set when the wrapper stops: no new rounds.
    stopping: Arc<AtomicBool>,
}

/// A round the worker holds, and whether its delivery has started.
#[derive(Debug)]
struct Held {
    lease: HeldLease,
    delivering: bool,
}

/// How long one long-poll of a round may wait on the server (its ceiling is 30 s).
const LONG_POLL: Duration = Duration::from_secs(25);

impl Anteroom {
    /// Anteroom at the session whose capability URL is `request_url` (the environment block's
    /// `ELICITATION_REQUEST_URL`, with or without a `/servers/NAME` part), working as `owner`.
    pub fn new(request_url: &str, owner: OwnerId) -> Result<Self, AnteroomError> {
        let not_one = || AnteroomError::NotACapabilityUrl;
        let marker = "/api/v1/s/";
        let (base, after) = request_url.split_once(marker).ok_or_else(not_one)?;
        let token = after
            .split('/')
            .next()
            .filter(|token| !token.is_empty())
            .ok_or_else(not_one)?;
        let session_base = format!("{base}{marker}{token}");
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // Long enough for one long-poll, short enough that a vanished Anteroom is noticed.
            .timeout(LONG_POLL + Duration::from_secs(10))
            .build()
            .map_err(|error| AnteroomError::Unreachable(error.without_url().to_string()))?;
        Ok(Self {
            http,
            session_base,
            owner,
            held: Arc::default(),
            stopping: Arc::default(),
        })
    }

    /// Sends `request`, trying again (with growing pauses, or as long as Anteroom's `Retry-After` says, up to
    /// [`ATTEMPTS`] in all) when Anteroom turned it away for now (429, 502, 503, 504) or it never reached
    /// Anteroom; a read (`retry_timeouts`) is also tried again after a timeout. A write that may have been
    /// done is not repeated.
    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        what: &'static str,
        request: reqwest::RequestBuilder,
        retry_timeouts: bool,
    ) -> Result<T, AnteroomError> {
        let mut pause = Duration::from_millis(250);
        for _ in 1..ATTEMPTS {
            let Some(attempt) = request.try_clone() else {
                break;
            };
            match self.send_once(what, attempt).await {
                Err(Transient { error, retry_after }) if error.may_retry(retry_timeouts) => {
                    tokio::time::sleep(retry_after.unwrap_or(pause).min(MAX_PAUSE)).await;
                    pause *= 2;
                }
                outcome => return outcome.map_err(|transient| transient.error),
            }
        }
        self.send_once(what, request)
            .await
            .map_err(|transient| transient.error)
    }

    async fn send_once<T: for<'de> Deserialize<'de>>(
        &self,
        what: &'static str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, Transient> {
        // reqwest names the URL in its errors, and the URL holds the session's token: the message goes to the
        // log and, as the server's error, into the agent's transcript, so it is dropped.
        let unreachable = |error: reqwest::Error| Transient {
            retry_after: None,
            error: if error.is_connect() {
                AnteroomError::NotReached(error.without_url().to_string())
            } else {
                AnteroomError::Unreachable(error.without_url().to_string())
            },
        };
        let reply = request.send().await.map_err(unreachable)?;
        let status = reply.status();
        let retry_after = reply
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = reply.text().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(Transient {
                retry_after,
                error: AnteroomError::Refused {
                    what,
                    status: status.as_u16(),
                    body,
                },
            });
        }
        serde_json::from_str(&body).map_err(|error| Transient {
            retry_after: None,
            error: AnteroomError::Unreadable {
                what,
                error: error.to_string(),
            },
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.session_base)
    }

    /// Opens a round in the session. A create whose reply was lost is not sent again: it cannot be told from one
    /// never made (docs/wrap.md says what that leaves).
    pub async fn ask(&self, ask: &Ask) -> Result<RoundState, AnteroomError> {
        if self.stopping.load(Ordering::Acquire) {
            return Err(AnteroomError::Stopping);
        }
        self.send(
            "the question",
            self.http.post(self.url("/rounds")).json(ask),
            false,
        )
        .await
    }

    /// Takes the round's lease for `seconds` (and remembers it until the round is resolved or failed).
    pub async fn claim(&self, round: RoundId, seconds: i64) -> Result<HeldLease, AnteroomError> {
        let body = json!({"owner_id": self.owner, "lease_seconds": seconds});
        let lease: HeldLease = self
            .send(
                "the lease",
                self.http
                    .post(self.url(&format!("/rounds/{round}/claim")))
                    .json(&body),
                false,
            )
            .await?;
        if self.stopping.load(Ordering::Acquire) {
            // Claimed after the wrapper began to stop: nobody will work it, so it ends now.
            let _ = self
                .fail(
                    round,
                    &lease,
                    "wrapper_stopped",
                    "anteroom wrap stopped before anyone answered.",
                )
                .await;
            return Err(AnteroomError::Stopping);
        }
        self.held().insert(
            round,
            Held {
                lease: lease.clone(),
                delivering: false,
            },
        );
        Ok(lease)
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<RoundId, Held>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// From now on the worker opens no round, and a round it claims is ended at once (it is stopping).
    pub fn stop_asking(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    /// Ends every round this worker still holds as failed with `code`: a worker that stops says so at once,
    /// rather than leave a question people can answer for nothing until its deadline. A delivery under way
    /// (its answer already handed over, its last steps in flight) gets `settle` to finish first. Rounds end
    /// concurrently.
    pub async fn fail_all_held(&self, code: &str, settle: Duration) {
        let until = tokio::time::Instant::now() + settle;
        while self.held().values().any(|held| held.delivering)
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let held: Vec<(RoundId, Held)> = self.held().drain().collect();
        let mut endings = tokio::task::JoinSet::new();
        for (round, held) in held {
            let (worker, code) = (self.clone(), code.to_owned());
            endings.spawn(async move {
                let message = if held.delivering {
                    "anteroom wrap stopped (its harness or server went away) after it handed the answer to the \
                     server, before the call that asked finished."
                } else {
                    "anteroom wrap stopped (its harness or server went away) before anyone answered; the \
                     question can no longer reach its server."
                };
                if let Err(error) = worker.fail(round, &held.lease, &code, message).await {
                    eprintln!("anteroom wrap: ending round {round} as it stopped failed: {error}");
                }
            });
        }
        while endings.join_next().await.is_some() {}
    }

    pub async fn renew(
        &self,
        round: RoundId,
        lease: &HeldLease,
        seconds: i64,
    ) -> Result<(), AnteroomError> {
        let body = json!({"owner_id": self.owner, "lease_token": lease.lease_token, "lease_seconds": seconds});
        let _: Value = self
            .send(
                "the lease's renewal",
                self.http
                    .post(self.url(&format!("/rounds/{round}/renew")))
                    .json(&body),
                // Renewing twice only moves the expiry twice.
                true,
            )
            .await?;
        Ok(())
    }

    pub async fn read(&self, round: RoundId) -> Result<RoundState, AnteroomError> {
        self.send(
            "the round",
            self.http.get(self.url(&format!("/rounds/{round}"))),
            true,
        )
        .await
    }

    /// Waits up to one long-poll for the round to leave `pending`, and returns it as it then stands. The poll
    /// also tells the page that its asker is still there.
    pub async fn wait(&self, round: RoundId) -> Result<RoundState, AnteroomError> {
        let url = self.url(&format!(
            "/elicitations/{round}?wait={}",
            LONG_POLL.as_secs()
        ));
        let _: Value = self.send("the long-poll", self.http.get(url), true).await?;
        self.read(round).await
    }

    /// One step of the delivery: `start-delivery`, `delivered` or `resolve`. When a step's reply is lost (an
    /// Anteroom killed after it committed, a connection reset), the round is read: a step already done is
    /// taken as done, and one not yet done is sent again, at most [`STEP_TRIES`] times. Only this worker's
    /// lease can move the round, so nobody else did it meanwhile. Without this, the answer could reach the
    /// harness while the round stayed `delivery_started`, and the recovery job would then report it lost.
    pub async fn step(
        &self,
        round: RoundId,
        lease: &HeldLease,
        step: DeliveryStep,
    ) -> Result<RoundState, AnteroomError> {
        let body = json!({"owner_id": self.owner, "lease_token": lease.lease_token});
        let mut tries = 0;
        let state = loop {
            tries += 1;
            let sent = self
                .send(
                    step.what(),
                    self.http
                        .post(self.url(&format!("/rounds/{round}/{}", step.path())))
                        .json(&body),
                    false,
                )
                .await;
            match sent {
                Ok(state) => break state,
                Err(error) if tries < STEP_TRIES && error.outcome_unknown() => {
                    match self.read(round).await {
                        Ok(state) if step.done_in(state.status) => break state,
                        Ok(state) if state.status == step.starts_from() => {}
                        _ => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            }
        };
        match step {
            DeliveryStep::Start => {
                if let Some(held) = self.held().get_mut(&round) {
                    held.delivering = true;
                }
            }
            DeliveryStep::Delivered => {}
            DeliveryStep::Resolve => {
                self.held().remove(&round);
            }
        }
        Ok(state)
    }

    /// Ends the round as failed with `code`, saying why.
    pub async fn fail(
        &self,
        round: RoundId,
        lease: &HeldLease,
        code: &str,
        message: &str,
    ) -> Result<RoundState, AnteroomError> {
        // Forgotten first: a refused failure (the round had ended) is not retried at exit either.
        self.held().remove(&round);
        let body = json!({"owner_id": self.owner, "lease_token": lease.lease_token, "code": code, "message": message});
        self.send(
            "the failure",
            self.http
                .post(self.url(&format!("/rounds/{round}/fail")))
                .json(&body),
            false,
        )
        .await
    }
}

/// The forward steps of a worker's delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStep {
    Start,
    Delivered,
    Resolve,
}

/// How many times a delivery step is sent at most when its replies are lost ([`Anteroom::step`]).
const STEP_TRIES: u32 = 4;

impl DeliveryStep {
    /// The status the round must have for this step.
    fn starts_from(self) -> RoundStatus {
        match self {
            Self::Start => RoundStatus::ResponseValidated,
            Self::Delivered => RoundStatus::DeliveryStarted,
            Self::Resolve => RoundStatus::Delivered,
        }
    }

    /// Whether a round in `status` has had this step.
    fn done_in(self, status: RoundStatus) -> bool {
        match self {
            Self::Start => matches!(
                status,
                RoundStatus::DeliveryStarted | RoundStatus::Delivered | RoundStatus::Resolved
            ),
            Self::Delivered => matches!(status, RoundStatus::Delivered | RoundStatus::Resolved),
            Self::Resolve => status == RoundStatus::Resolved,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Start => "start-delivery",
            Self::Delivered => "delivered",
            Self::Resolve => "resolve",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Start => "the delivery's start",
            Self::Delivered => "the delivery",
            Self::Resolve => "the resolution",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> OwnerId {
        OwnerId::parse("wrap-1").expect("owner id")
    }

    #[test]
    fn the_session_base_comes_from_either_capability_url() {
        for url in [
            "http://127.0.0.1:3000/api/v1/s/ars_abc/elicitations",
            "http://127.0.0.1:3000/api/v1/s/ars_abc/servers/github/elicitations",
        ] {
            let anteroom = Anteroom::new(url, owner()).expect("a capability URL");
            assert_eq!(
                anteroom.session_base,
                "http://127.0.0.1:3000/api/v1/s/ars_abc"
            );
        }
        assert!(matches!(
            Anteroom::new("http://127.0.0.1:3000/api/v1/elicitations", owner()),
            Err(AnteroomError::NotACapabilityUrl)
        ));
        assert!(Anteroom::new("http://h/api/v1/s//elicitations", owner()).is_err());
    }

    #[tokio::test]
    async fn an_unreachable_anteroom_is_named_without_the_token() {
        // Port 9 (discard) has no listener here: the connection is refused at once.
        let anteroom = Anteroom::new(
            "http://127.0.0.1:9/api/v1/s/ars_secret_token/elicitations",
            owner(),
        )
        .expect("a capability URL");
        let error = anteroom
            .read(RoundId(uuid::Uuid::nil()))
            .await
            .expect_err("nothing listens there");
        assert!(matches!(error, AnteroomError::NotReached(_)), "{error}");
        assert!(!error.to_string().contains("ars_secret"), "{error}");
    }
}
