//! A question a request asks and waits for as the round's own worker: `ask_person` over MCP and the harnesses'
//! hooks hold their call open while a person decides. The call's lease lasts the whole wait; the answer is
//! delivered by the reply; a call that stops waiting (cancelled, disconnected, dropped) ends the question at
//! once, so nobody answers into a void.

use std::time::Duration;

use anteroom_domain::{
    ids::{LeaseToken, OwnerId, RoundId},
    round::{FailureCode, NewRound, Round, RoundStatus},
};

use crate::{
    AppState,
    error::{ApiError, ApiResult, ErrorCode},
    events::RoundWatch,
};

/// How long a waiting call goes without looking at its question when no event about it arrives (a deadline
/// passes silently).
pub const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The `Retry-After` a held call is given when the server shuts down under it.
const RESTART_SECONDS: u64 = 5;

/// What a call that stops waiting leaves in the question's record.
const STOPPED_WAITING: &str = "The agent that asked stopped waiting for the answer.";

/// An open question this call works; dropped before [`HeldQuestion::finish`], it ends the question.
pub struct HeldQuestion {
    state: AppState,
    round_id: RoundId,
    owner: OwnerId,
    token: LeaseToken,
    watch: RoundWatch,
    /// Disarmed once the answer is handed back.
    armed: bool,
}

impl HeldQuestion {
    /// Asks `new` and takes the worker's lease on it for `wait` and a minute more; `owner_prefix` names the
    /// kind of caller in the lease (`mcp`, `hook`).
    pub async fn ask(
        state: &AppState,
        new: NewRound,
        wait: Duration,
        owner_prefix: &str,
    ) -> ApiResult<(Self, Round)> {
        // On a task of its own: a caller that goes between the insert and the claim would leave a question
        // nobody works and nobody can end. The task's result is dropped with it, which ends the question.
        let (state, owner_prefix) = (state.clone(), owner_prefix.to_owned());
        tokio::spawn(async move { Self::ask_and_claim(state, new, wait, &owner_prefix).await })
            .await
            .map_err(|error| {
                // Only a panic or the runtime's shutdown ends the task early.
                tracing::error!(%error, "asking a held question stopped");
                ApiError::new(
                    ErrorCode::Unavailable,
                    "Anteroom could not ask the question; try again shortly.",
                )
            })?
    }

    async fn ask_and_claim(
        state: AppState,
        new: NewRound,
        wait: Duration,
        owner_prefix: &str,
    ) -> ApiResult<(Self, Round)> {
        let round = state.store.create_round(new).await?;
        crate::announce::round_created(&state, &round);
        let owner = OwnerId::parse(format!("{owner_prefix}-{}", uuid::Uuid::new_v4()))?;
        let lease_length = chrono::Duration::from_std(wait + Duration::from_secs(60))
            .unwrap_or_else(|_| chrono::Duration::hours(2));
        // Watching before the claim: an answer given from here on wakes the wait.
        let watch = state.events.watch_round(round.round_id);
        let lease = match state
            .store
            .claim_round(round.round_id, owner.clone(), lease_length)
            .await
        {
            Ok(lease) => lease,
            Err(error) => {
                // The question may have ended before this call could claim it (its deadline passed while the
                // machine stalled or its clock jumped): the call is then told how it ended, as after a wait,
                // not refused with a conflict.
                let now = state.store.get_round(round.round_id).await?;
                if !now.status.is_terminal() {
                    return Err(error.into());
                }
                return Ok((
                    Self {
                        round_id: now.round_id,
                        state,
                        owner,
                        // Never used: a call that holds no lease delivers nothing and ends nothing.
                        token: LeaseToken::from_secret(String::new()),
                        watch,
                        armed: false,
                    },
                    now,
                ));
            }
        };
        // Claimed first: an answer by a standing rule is then this call's to deliver, like a person's.
        let round = crate::standing::answered_by_rule(&state, round).await;
        Ok((
            Self {
                round_id: round.round_id,
                state,
                owner,
                token: lease.lease_token,
                watch,
                armed: true,
            },
            round,
        ))
    }

    /// Waits for an event about the question or the next look, then reads it: `Some` once nobody can answer
    /// it any more (answered, expired, ended), `None` while it still waits.
    /// When the server shuts down meanwhile, the call is told to ask again (`503`, `Retry-After`) and the
    /// question ends as its asker having stopped waiting, so nobody answers into a call that is gone.
    pub async fn next_look(&mut self) -> ApiResult<Option<Round>> {
        let wake = self
            .watch
            .next(tokio::time::Instant::now() + LOOK_EVERY)
            .await;
        let before = self.state.store.round_trips();
        let looked = self.look().await?;
        if wake == crate::events::RoundWake::Look {
            self.state.timed_look_trips.fetch_add(
                self.state.store.round_trips().saturating_sub(before),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        if wake == crate::events::RoundWake::Closing && looked.is_none() {
            return Err(ApiError::unavailable_for(
                RESTART_SECONDS,
                "Anteroom is restarting; ask again in a moment.",
            ));
        }
        Ok(looked)
    }

    /// Reads the question now: `Some` once nobody can answer it any more.
    pub async fn look(&self) -> ApiResult<Option<Round>> {
        let round = self.state.store.get_round(self.round_id).await?;
        Ok((round.status != RoundStatus::Pending).then_some(round))
    }

    /// Hands the outcome back: an answered round is walked through the worker's delivery steps (this call's
    /// reply is its delivery), and the question is no longer ended when the call goes.
    pub async fn finish(mut self, round: Round) -> ApiResult<Round> {
        let round = if round.status == RoundStatus::ResponseValidated {
            let store = &self.state.store;
            store
                .start_delivery(self.round_id, &self.owner, &self.token)
                .await?;
            store
                .mark_delivered(self.round_id, &self.owner, &self.token)
                .await?;
            store
                .resolve(self.round_id, &self.owner, &self.token)
                .await?
        } else {
            round
        };
        self.armed = false;
        crate::announce::round_changed(&self.state, &round);
        Ok(round)
    }
}

impl Drop for HeldQuestion {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (state, round_id, owner, token) = (
            self.state.clone(),
            self.round_id,
            self.owner.clone(),
            self.token.clone(),
        );
        tokio::spawn(async move {
            let ended = state
                .store
                .fail(
                    round_id,
                    &owner,
                    &token,
                    FailureCode::Cancelled,
                    STOPPED_WAITING.to_owned(),
                )
                .await;
            if let Ok(round) = ended {
                crate::announce::round_changed(&state, &round);
            }
        });
    }
}
