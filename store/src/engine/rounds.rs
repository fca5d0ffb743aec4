//! Questions: asking, reading, answering, and the asker's polls.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{SqlStore, round_not_found, rows::rows_to_rounds};
use crate::{
    AgentSessionStore, PollProbe, RoundStore, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        ids::{IdempotencyKey, RequestId, RequestKey, RoundId, SessionId},
        round::{
            ElicitationRequest, ElicitationResponse, NewRound, RedactedResponses, ResponseAction,
            Round, RoundStatus, Submission,
        },
    },
    poll_states::Changed,
    records::{RoundRow, from_ms, to_ms},
    sql,
};

impl<D: Dialect> SqlStore<D> {
    /// Reads the database's count of producer-token changes when a check is due (at most one caller per
    /// interval): a token the CLI revoked from another process is refused within a check's interval. A failed
    /// read trusts nothing remembered, so the caller reads the database, and fails there if it is down.
    pub(super) async fn check_token_changes(&self) {
        let states = &self.ctx.poll_states;
        if states.token_check_due(self.clock_now()) {
            let read = self
                .one::<(i64,)>(Statement::new(sql::SELECT_TOKEN_CHANGES))
                .await;
            states.token_changes_read(read.ok().map(|(changes,)| changes));
        }
    }

    /// The verdict of [`Self::check_content`] on every accepted form answer of `responses`.
    fn prevalidate(
        &self,
        round: &Round,
        responses: &BTreeMap<RequestKey, ElicitationResponse>,
    ) -> BTreeMap<RequestKey, Result<(), ManagedInputError>> {
        let no_content = Map::new();
        responses
            .iter()
            .filter_map(|(key, response)| {
                let request = round.requests.get(key)?;
                let accepted_form = response.action == ResponseAction::Accept
                    && matches!(request, ElicitationRequest::Form { .. });
                accepted_form.then(|| {
                    let content = response.content.as_ref().unwrap_or(&no_content);
                    (key.clone(), self.check_content(key, request, content))
                })
            })
            .collect()
    }

    /// Validates accepted form content with the compiled schema (cached per schema).
    fn check_content(
        &self,
        key: &RequestKey,
        request: &ElicitationRequest,
        content: &Map<String, Value>,
    ) -> Result<(), ManagedInputError> {
        match request {
            ElicitationRequest::Form {
                requested_schema, ..
            } => self
                .ctx
                .schemas
                .get(requested_schema, &self.ctx.options.limits)?
                .validate(key.as_str(), content),
            ElicitationRequest::Url { .. } => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl<D: Dialect> RoundStore for SqlStore<D> {
    async fn create_round(&self, new: NewRound) -> StoreResult<Round> {
        let limits = self.ctx.options.limits;
        new.validate(&limits)?;
        for (key, request) in &new.requests {
            match request {
                ElicitationRequest::Form {
                    requested_schema, ..
                } => {
                    self.ctx.schemas.get(requested_schema, &limits)?;
                }
                ElicitationRequest::Url { url, .. } => {
                    crate::domain::consent_url::check(key.as_str(), url)?;
                }
            }
        }
        let now = self.clock_now();
        let deadlines = self.ctx.options.expiry.deadlines(
            now,
            new.producer_deadline(),
            new.asked_through.trust(),
        )?;
        let round = Round::open(new, crate::new_round_id(), now, deadlines);
        // Its own task: a caller that goes away (a closed connection) cannot cut short the batch other creates
        // wait on.
        let store = self.clone();
        tokio::spawn(async move { store.create_in_batch(round).await })
            .await
            .unwrap_or(Err(StoreError::Database(sqlx::Error::WorkerCrashed)))
    }

    async fn get_round(&self, id: RoundId) -> StoreResult<Round> {
        let round = self
            .read_round(id)
            .await?
            .ok_or_else(|| round_not_found(id))?;
        let now = self.clock_now();
        if !round.is_due(now) && !round.is_undeliverable(now) {
            return Ok(self.seen(round));
        }
        self.expire_lazily(Some(&round.session_id)).await?;
        Ok(self.seen(
            self.read_round(id)
                .await?
                .ok_or_else(|| round_not_found(id))?,
        ))
    }

    async fn get_round_by_request_id(&self, id: &RequestId) -> StoreResult<Round> {
        let row = self
            .optional::<RoundRow>(
                Statement::new(sql::SELECT_ROUND_BY_REQUEST_ID).bind(id.to_string()),
            )
            .await?
            .ok_or_else(|| {
                StoreError::from(ManagedInputError::not_found(format!(
                    "No question with request id {id} exists."
                )))
            })?;
        let round = row.into_round()?;
        let now = self.clock_now();
        if round.is_due(now) || round.is_undeliverable(now) {
            return self.get_round(round.round_id).await;
        }
        Ok(self.seen(round))
    }

    async fn list_rounds(&self, session: &SessionId) -> StoreResult<Vec<Round>> {
        self.get_session(session).await?;
        let rows = self
            .all::<RoundRow>(Statement::new(sql::SELECT_SESSION_ROUNDS).bind(session.to_string()))
            .await?;
        self.seen_all(rows)
    }

    async fn list_rounds_page(
        &self,
        session: &SessionId,
        before: Option<RoundId>,
        limit: u32,
    ) -> StoreResult<Vec<Round>> {
        let rows = self
            .all::<RoundRow>(
                Statement::new(sql::SELECT_SESSION_ROUNDS_PAGE)
                    .bind(session.to_string())
                    .bind(before.map(|id| id.to_string()).unwrap_or_default())
                    .bind(i64::from(limit)),
            )
            .await?;
        self.seen_all(rows)
    }

    async fn open_rounds(&self, session: &SessionId, limit: u32) -> StoreResult<Vec<Round>> {
        let rows = self
            .all::<RoundRow>(
                Statement::new(sql::SELECT_OPEN_ROUNDS)
                    .bind(session.to_string())
                    .bind(i64::from(limit)),
            )
            .await?;
        self.seen_all(rows)
    }

    async fn open_rounds_everywhere(&self, limit: u32) -> StoreResult<Vec<Round>> {
        self.expire_lazily(None).await?;
        let rows = self
            .all::<RoundRow>(
                Statement::new(sql::SELECT_OPEN_ROUNDS_EVERYWHERE).bind(i64::from(limit)),
            )
            .await?;
        self.seen_all(rows)
    }

    async fn open_rounds_asking(&self, summary: &str, limit: u32) -> StoreResult<Vec<Round>> {
        let rows = self
            .all::<RoundRow>(
                Statement::new(sql::SELECT_OPEN_ROUNDS_ASKING)
                    .bind(summary)
                    .bind(to_ms(self.clock_now()))
                    .bind(i64::from(limit)),
            )
            .await?;
        self.seen_all(rows)
    }

    async fn poll_probe(
        &self,
        token_hash: &str,
        request_id: &str,
    ) -> StoreResult<Option<PollProbe>> {
        let states = &self.ctx.poll_states;
        self.check_token_changes().await;
        if let Some(known) = states.get(token_hash, request_id) {
            return Ok(Some(known));
        }
        // Read before the query: a change committed while it runs keeps this read out of memory.
        let generation = states.generation();
        let row = self
            .optional::<(String, String, String, i64)>(
                Statement::new(sql::SELECT_POLL_PROBE)
                    .bind(token_hash)
                    .bind(request_id),
            )
            .await?;
        row.map(|(session, round, status, deadline)| {
            Ok(PollProbe {
                session_id: SessionId::parse(session)
                    .map_err(|error| StoreError::Corrupt(error.to_string()))?,
                round_id: RoundId::parse(&round)
                    .map_err(|error| StoreError::Corrupt(error.to_string()))?,
                status: RoundStatus::parse(&status)
                    .ok_or_else(|| StoreError::Corrupt(format!("round status {status}")))?,
                deadline: from_ms(deadline)?,
            })
        })
        .transpose()
        .inspect(|probe| {
            if let Some(probe) = probe {
                states.fill(generation, token_hash, request_id, probe);
            }
        })
    }

    fn forget_poll_states(&self, session: &SessionId, request_id: Option<&str>) {
        let mut changes = vec![Changed::Session(session.clone())];
        changes.extend(
            request_id
                .and_then(|id| RequestId::parse(id).ok())
                .map(Changed::Round),
        );
        self.ctx.poll_states.forget(&changes);
    }

    fn forget_all_poll_states(&self) {
        self.ctx.poll_states.forget_all();
    }

    async fn pending_round(&self, session: &SessionId) -> StoreResult<Option<Round>> {
        self.get_session(session).await?;
        let mut pending = rows_to_rounds(
            self.all::<RoundRow>(
                Statement::new(sql::SELECT_PENDING_ROUNDS).bind(session.to_string()),
            )
            .await?,
        )?;
        if pending.len() > 1 {
            return Err(ManagedInputError::state(format!(
                "Session {session} has more than one pending round; read them with GET /api/v1/sessions/{session}/rounds."
            ))
            .into());
        }
        Ok(pending.pop())
    }

    async fn submit_responses(
        &self,
        id: RoundId,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        idempotency_key: IdempotencyKey,
        answered_by: Option<String>,
    ) -> StoreResult<(Round, Submission)> {
        let round = self
            .read_round(id)
            .await?
            .ok_or_else(|| round_not_found(id))?;
        self.submit_responses_to(&round, responses, idempotency_key, answered_by)
            .await
    }

    async fn submit_responses_to(
        &self,
        round: &Round,
        responses: BTreeMap<RequestKey, ElicitationResponse>,
        idempotency_key: IdempotencyKey,
        answered_by: Option<String>,
    ) -> StoreResult<(Round, Submission)> {
        // The schema of a round never changes, so answers are validated before the write transaction
        // begins: no producer pattern or answer can hold the database lock while it is checked.
        let verdicts = self.prevalidate(round, &responses);
        let check = |key: &RequestKey, _: &ElicitationRequest, _: &Map<String, Value>| {
            verdicts.get(key).cloned().unwrap_or_else(|| {
                Err(ManagedInputError::conflict(format!(
                    "Request {key} changed while the answer was checked; send the answer again."
                )))
            })
        };
        self.mutate_round(round.round_id, move |round, now| {
            round.submit(responses, idempotency_key, answered_by, now, &check)
        })
        .await
    }

    async fn record_asker_poll(&self, id: RoundId) -> StoreResult<()> {
        let now = self.clock_now();
        let writes = self.ctx.askers.record_for_writing(id, now);
        for chunk in writes.chunks(sql::BATCH) {
            let statement = Statement::new(sql::record_asker_polls(chunk.len())).bind_all(
                chunk.iter().flat_map(|(round, seen)| {
                    [
                        round.to_string().into(),
                        to_ms(seen.last_poll_at).into(),
                        seen.interval_ms.into(),
                    ]
                }),
            );
            self.execute(statement).await?;
        }
        Ok(())
    }

    async fn record_poll_delivery(&self, id: RoundId) -> StoreResult<Round> {
        // The common case, an answer waiting for its poller, is one statement that returns the round: the
        // woken long-poll's only database work, so the reply is not held up by a transaction's round trips.
        let now = self.clock_now();
        let delivered = self
            .optional::<RoundRow>(
                Statement::new(sql::RECORD_POLL_DELIVERY)
                    .bind(id.to_string())
                    .bind(to_ms(now)),
            )
            .await?;
        if let Some(row) = delivered {
            let round = row.into_round()?;
            self.ctx
                .poll_states
                .forget(&[Changed::Round(round.request_id.clone())]);
            return Ok(self.seen(round));
        }
        self.mutate_round(id, |round, now| Ok(round.record_poll_delivery(now)))
            .await
            .map(|(round, _)| round)
    }

    async fn redacted_responses(&self, id: RoundId) -> StoreResult<RedactedResponses> {
        Ok(self.get_round(id).await?.redacted())
    }

    async fn extend_deadline(
        &self,
        id: RoundId,
        by: chrono::Duration,
        actor: &str,
    ) -> StoreResult<Round> {
        self.mutate_round_as(id, Some(actor), |round, now| round.extend_deadline(by, now))
            .await
            .map(|(round, _)| round)
    }

    async fn open_round_count(&self) -> StoreResult<i64> {
        let (count,): (i64,) = self
            .one(Statement::new(sql::COUNT_OPEN_ROUNDS).bind(to_ms(self.clock_now())))
            .await?;
        Ok(count)
    }
}
