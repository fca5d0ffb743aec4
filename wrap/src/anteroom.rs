//! The wrapper's side of Anteroom: it asks through the session's capability URL and is the worker of the rounds
//! it opens — claim, renew while waiting, start delivery, delivered, resolve, or fail with a code
//! (docs/lifecycle.md#worker-leases).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
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
}

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
        let start = request_url.find(marker).ok_or_else(not_one)?;
        let after = &request_url[start + marker.len()..];
        let token = after
            .split('/')
            .next()
            .filter(|token| !token.is_empty())
            .ok_or_else(not_one)?;
        let session_base = format!("{}{marker}{token}", &request_url[..start]);
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
        })
    }

    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }

    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        what: &'static str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, AnteroomError> {
        // reqwest names the URL in its errors, and the URL holds the session's token: the message goes to the
        // log and, as the server's error, into the agent's transcript, so it is dropped.
        let unreachable =
            |error: reqwest::Error| AnteroomError::Unreachable(error.without_url().to_string());
        let reply = request.send().await.map_err(unreachable)?;
        let status = reply.status();
        let body = reply.text().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(AnteroomError::Refused {
                what,
                status: status.as_u16(),
                body,
            });
        }
        serde_json::from_str(&body).map_err(|error| AnteroomError::Unreadable {
            what,
            error: error.to_string(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.session_base)
    }

    /// Opens a round in the session.
    pub async fn ask(&self, ask: &Ask) -> Result<RoundState, AnteroomError> {
        self.send(
            "the question",
            self.http.post(self.url("/rounds")).json(ask),
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
            )
            .await?;
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

    /// Ends every round this worker still holds as failed with `code`: a worker that stops says so at once,
    /// rather than leave a question people can answer for nothing until its deadline. A delivery under way
    /// (its answer already handed over, its last steps in flight) gets `settle` to finish first.
    pub async fn fail_all_held(&self, code: &str, message: &str, settle: Duration) {
        let until = tokio::time::Instant::now() + settle;
        while self.held().values().any(|held| held.delivering)
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let held: Vec<(RoundId, HeldLease)> = self
            .held()
            .drain()
            .map(|(round, held)| (round, held.lease))
            .collect();
        for (round, lease) in held {
            if let Err(error) = self.fail(round, &lease, code, message).await {
                eprintln!("anteroom wrap: {message}, but ending round {round} failed: {error}");
            }
        }
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
            )
            .await?;
        Ok(())
    }

    pub async fn read(&self, round: RoundId) -> Result<RoundState, AnteroomError> {
        self.send(
            "the round",
            self.http.get(self.url(&format!("/rounds/{round}"))),
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
        let _: Value = self.send("the long-poll", self.http.get(url)).await?;
        self.read(round).await
    }

    /// One step of the delivery: `start-delivery`, `delivered` or `resolve`.
    pub async fn step(
        &self,
        round: RoundId,
        lease: &HeldLease,
        step: DeliveryStep,
    ) -> Result<RoundState, AnteroomError> {
        let body = json!({"owner_id": self.owner, "lease_token": lease.lease_token});
        let state = self
            .send(
                step.what(),
                self.http
                    .post(self.url(&format!("/rounds/{round}/{}", step.path())))
                    .json(&body),
            )
            .await?;
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

impl DeliveryStep {
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
        assert!(matches!(error, AnteroomError::Unreachable(_)), "{error}");
        assert!(!error.to_string().contains("ars_secret"), "{error}");
    }
}
