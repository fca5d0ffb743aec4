//! The store's behaviour, written once and instantiated for each backend's sqlx types.
//!
//! Each call loads records, lets the domain decide, and writes the outcome back in one transaction.
//! A backend supplies its pool, how it opens a write transaction, and the row-lock clause it needs.

/// Implements [`super::Store`] (all but `backend`, `migrate` and `begin_write`) for `$store`, a struct with
/// `pool: sqlx::Pool<$db>` and `ctx: Arc<StoreContext>`, whose inherent `begin_write` opens a transaction that
/// may write. `$lock` is appended to reads that precede a write (`" FOR UPDATE"` on PostgreSQL; SQLite's
/// write transaction already excludes other writers).
macro_rules! sql_store {
    ($store:ident, $db:ty, lock = $lock:literal) => {
        use std::collections::{BTreeMap, HashMap};

        use chrono::{DateTime, Duration, Utc};
        use serde_json::{Map, Value};
        use sqlx::QueryBuilder;

        use crate::domain::{
            ManagedInputError,
            access::{ApiKey, Role, User},
            ids::{IdempotencyKey, LeaseToken, OwnerId, RequestId, RequestKey, RoundId, SessionId},
            round::{
                ElicitationRequest, ElicitationResponse, EXPIRED_MESSAGE, FailureCode, Lease, NewRound,
                RECOVERY_MESSAGE, RedactedResponses, ResponseAction, Round, RoundStatus, Submission,
            },
            session::{NewSession, Session, SessionEffect},
            webhook::{AttemptOutcome, MAX_ATTEMPTS, WebhookDelivery, WebhookEvent, retry_delay},
            gate::{GateChange, GateState},
        };
        use crate::{
            QueueEntry, Store, StoreError, StoreResult,
            records::{
                OutboxRow, QueueRow, RoundColumns, RoundRow, SessionColumns, SessionRow, from_ms, to_ms,
            },
            sql,
        };

        type Tx = sqlx::Transaction<'static, $db>;

        fn locked(query: &str) -> String {
            format!("{query}{}", $lock)
        }

        fn round_not_found(id: impl std::fmt::Display) -> StoreError {
            ManagedInputError::not_found(format!("No round {id} exists.")).into()
        }

        fn session_not_found(id: &SessionId) -> StoreError {
            ManagedInputError::not_found(format!(
                "No session {id} exists; register it first (POST /api/v1/sessions)."
            ))
            .into()
        }

        fn user_from_row(id: String, username: String, role: &str) -> StoreResult<User> {
            let role = Role::parse(role).ok_or_else(|| StoreError::Corrupt(format!("user role {role}")))?;
            Ok(User { id, username, role })
        }

        /// The INSERT of a new person, to run on the pool or in a transaction.
        fn insert_user<'q>(
            user: &'q User,
            password_hash: &'q str,
            now: DateTime<Utc>,
        ) -> sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments<'q>> {
            sqlx::query::<$db>(sql::INSERT_USER)
                .bind(&user.id)
                .bind(&user.username)
                .bind(user.role.as_str())
                .bind(password_hash)
                .bind(to_ms(now))
        }

        fn rows_to_rounds(rows: Vec<RoundRow>) -> StoreResult<Vec<Round>> {
            rows.into_iter().map(RoundRow::into_round).collect()
        }

        impl $store {
            fn now(&self) -> DateTime<Utc> {
                self.ctx.now()
            }

            async fn fetch_round(&self, tx: &mut Tx, id: RoundId) -> StoreResult<Option<Round>> {
                sqlx::query_as::<$db, RoundRow>(&locked(sql::SELECT_ROUND))
                    .bind(id.to_string())
                    .fetch_optional(&mut **tx)
                    .await?
                    .map(RoundRow::into_round)
                    .transpose()
            }

            async fn read_round(&self, id: RoundId) -> StoreResult<Option<Round>> {
                sqlx::query_as::<$db, RoundRow>(sql::SELECT_ROUND)
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await?
                    .map(RoundRow::into_round)
                    .transpose()
            }

            async fn insert_round(&self, tx: &mut Tx, round: &Round) -> StoreResult<()> {
                let c = RoundColumns::of(round)?;
                let inserted = sqlx::query::<$db>(sql::INSERT_ROUND)
                    .bind(c.round_id)
                    .bind(c.session_id)
                    .bind(c.request_id)
                    .bind(&round.logical_operation_id)
                    .bind(&round.server)
                    .bind(round.operation_kind.as_str())
                    .bind(&round.operation_name)
                    .bind(c.requests)
                    .bind(&round.request_state)
                    .bind(i64::from(round.round_index))
                    .bind(i64::from(round.round_limit))
                    .bind(c.status)
                    .bind(c.created_at_ms)
                    .bind(c.deadline_ms)
                    .bind(c.updated_at_ms)
                    .bind(c.lease_owner)
                    .bind(c.lease_token)
                    .bind(c.lease_expires_at_ms)
                    .bind(c.responses)
                    .bind(c.idempotency_key)
                    .bind(c.responded_at_ms)
                    .bind(&round.responded_by)
                    .bind(i64::from(round.delivery_attempts))
                    .bind(c.delivered_at_ms)
                    .bind(c.resolved_at_ms)
                    .bind(c.failure_code)
                    .bind(c.failure_message)
                    .bind(c.failed_at_ms)
                    .bind(&round.summary)
                    .bind(round.version)
                    .bind(&round.fingerprint)
                    .bind(c.asker_deadline_ms)
                    .bind(round.asked_through.as_str())
                    .execute(&mut **tx)
                    .await;
                match inserted {
                    Ok(_) => Ok(()),
                    Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
                        Err(ManagedInputError::conflict(format!(
                            "The request id {} is already in use by another round.",
                            round.request_id
                        ))
                        .into())
                    }
                    Err(error) => Err(error.into()),
                }
            }

            /// Writes `after` over `before`, only if nobody changed the round in between.
            async fn save_round(&self, tx: &mut Tx, before: &Round, after: &Round) -> StoreResult<()> {
                let c = RoundColumns::of(after)?;
                let old = RoundColumns::of(before)?;
                let written = sqlx::query::<$db>(sql::UPDATE_ROUND)
                    .bind(c.status)
                    .bind(c.updated_at_ms)
                    .bind(c.lease_owner)
                    .bind(c.lease_token)
                    .bind(c.lease_expires_at_ms)
                    .bind(c.responses)
                    .bind(c.idempotency_key)
                    .bind(c.responded_at_ms)
                    .bind(&after.responded_by)
                    .bind(i64::from(after.delivery_attempts))
                    .bind(c.delivered_at_ms)
                    .bind(c.resolved_at_ms)
                    .bind(c.failure_code)
                    .bind(c.failure_message)
                    .bind(c.failed_at_ms)
                    .bind(after.version)
                    .bind(c.round_id)
                    .bind(before.version)
                    .bind(old.status)
                    .bind(old.lease_owner.unwrap_or_default())
                    .bind(old.lease_token.unwrap_or_default())
                    .execute(&mut **tx)
                    .await?;
                if written.rows_affected() == 1 {
                    Ok(())
                } else {
                    Err(ManagedInputError::conflict(format!(
                        "Round {} was changed by someone else at the same time; read it again and retry.",
                        after.round_id
                    ))
                    .into())
                }
            }

            async fn fetch_sessions(
                &self,
                tx: &mut Tx,
                ids: &[SessionId],
            ) -> StoreResult<HashMap<SessionId, Session>> {
                let mut found = HashMap::with_capacity(ids.len());
                for chunk in ids.chunks(sql::BATCH) {
                    let mut query =
                        QueryBuilder::<$db>::new("SELECT * FROM sessions WHERE id IN (");
                    let mut list = query.separated(", ");
                    for id in chunk {
                        list.push_bind(id.to_string());
                    }
                    query.push(")");
                    query.push($lock);
                    for row in query
                        .build_query_as::<SessionRow>()
                        .fetch_all(&mut **tx)
                        .await?
                    {
                        let session = row.into_session()?;
                        found.insert(session.id.clone(), session);
                    }
                }
                Ok(found)
            }

            async fn fetch_session(&self, tx: &mut Tx, id: &SessionId) -> StoreResult<Session> {
                self.fetch_sessions(tx, std::slice::from_ref(id))
                    .await?
                    .remove(id)
                    .ok_or_else(|| session_not_found(id))
            }

            /// Writes whole sessions back, many per statement.
            async fn save_sessions(&self, tx: &mut Tx, sessions: &[&Session]) -> StoreResult<()> {
                for chunk in sessions.chunks(sql::BATCH) {
                    let mut query = QueryBuilder::<$db>::new(sql::UPSERT_SESSIONS_HEAD);
                    query.push_values(chunk, |mut row, session| {
                        let c = SessionColumns::of(session);
                        row.push_bind(c.id)
                            .push_bind(c.title)
                            .push_bind(c.agent)
                            .push_bind(c.status)
                            .push_bind(c.blocked_on_elicitation)
                            .push_bind(c.lost_reason)
                            .push_bind(c.lost_at_ms)
                            .push_bind(c.lost_request_id)
                            .push_bind(c.lost_summary)
                            .push_bind(c.lost_detail)
                            .push_bind(c.created_at_ms)
                            .push_bind(c.updated_at_ms);
                    });
                    query.push(sql::UPSERT_SESSIONS_TAIL);
                    query.build().execute(&mut **tx).await?;
                }
                Ok(())
            }

            /// How many rounds of each session still wait for a person.
            async fn open_counts(
                &self,
                tx: &mut Tx,
                ids: &[SessionId],
                now: DateTime<Utc>,
            ) -> StoreResult<HashMap<String, i64>> {
                let mut counts = HashMap::new();
                for chunk in ids.chunks(sql::BATCH) {
                    let mut query = QueryBuilder::<$db>::new(
                        "SELECT session_id, COUNT(*) FROM rounds WHERE status = 'pending' AND deadline_ms > ",
                    );
                    query.push_bind(to_ms(now));
                    query.push(" AND session_id IN (");
                    let mut list = query.separated(", ");
                    for id in chunk {
                        list.push_bind(id.to_string());
                    }
                    query.push(") GROUP BY session_id");
                    let rows: Vec<(String, i64)> =
                        query.build_query_as().fetch_all(&mut **tx).await?;
                    counts.extend(rows);
                }
                Ok(counts)
            }

            /// Moves each session by the effects of its rounds' changes (docs/lifecycle.md#how-rounds-move-a-session), in order.
            async fn apply_session_effects(
                &self,
                tx: &mut Tx,
                effects: Vec<(SessionId, SessionEffect)>,
                now: DateTime<Utc>,
            ) -> StoreResult<Vec<Session>> {
                if effects.is_empty() {
                    return Ok(Vec::new());
                }
                let mut ids: Vec<SessionId> = effects.iter().map(|(id, _)| id.clone()).collect();
                ids.sort();
                ids.dedup();
                let mut sessions = self.fetch_sessions(tx, &ids).await?;
                let open = self.open_counts(tx, &ids, now).await?;
                for (id, effect) in effects {
                    if let Some(session) = sessions.get_mut(&id) {
                        let other_active = open.get(id.as_str()).copied().unwrap_or(0) > 0;
                        session.apply(effect, other_active, now);
                    }
                }
                let changed: Vec<&Session> = sessions.values().collect();
                self.save_sessions(tx, &changed).await?;
                Ok(sessions.into_values().collect())
            }

            /// Expires every due round (of one session, or all) and moves their sessions.
            async fn expire_due_in(
                &self,
                tx: &mut Tx,
                now: DateTime<Utc>,
                session: Option<&SessionId>,
            ) -> StoreResult<Vec<Round>> {
                let rows = match session {
                    Some(id) => {
                        sqlx::query_as::<$db, RoundRow>(sql::EXPIRE_DUE_IN_SESSION)
                            .bind(to_ms(now))
                            .bind(EXPIRED_MESSAGE)
                            .bind(id.to_string())
                            .fetch_all(&mut **tx)
                            .await?
                    }
                    None => {
                        sqlx::query_as::<$db, RoundRow>(sql::EXPIRE_DUE)
                            .bind(to_ms(now))
                            .bind(EXPIRED_MESSAGE)
                            .fetch_all(&mut **tx)
                            .await?
                    }
                };
                let expired = rows_to_rounds(rows)?;
                let answered = match session {
                    Some(id) => {
                        sqlx::query_as::<$db, RoundRow>(&locked(sql::SELECT_ANSWERED_PAST_DEADLINE_IN_SESSION))
                            .bind(to_ms(now))
                            .bind(id.to_string())
                            .fetch_all(&mut **tx)
                            .await?
                    }
                    None => {
                        sqlx::query_as::<$db, RoundRow>(&locked(sql::SELECT_ANSWERED_PAST_DEADLINE))
                            .bind(to_ms(now))
                            .fetch_all(&mut **tx)
                            .await?
                    }
                };
                let mut ended: Vec<(RoundStatus, Round)> =
                    expired.into_iter().map(|round| (RoundStatus::Pending, round)).collect();
                for before in rows_to_rounds(answered)? {
                    let mut round = before.clone();
                    if round.fail_undelivered_if_due(now) {
                        self.save_round(tx, &before, &round).await?;
                        ended.push((before.status, round));
                    }
                }
                self.announce_ended(tx, ended, now).await
            }

            /// Moves the sessions of rounds that just ended on their own (each with its status before), queues
            /// their webhooks and tells the observer. The latest deadline's marker wins when a session lost
            /// several questions at once.
            async fn announce_ended(
                &self,
                tx: &mut Tx,
                mut ended: Vec<(RoundStatus, Round)>,
                now: DateTime<Utc>,
            ) -> StoreResult<Vec<Round>> {
                ended.sort_by_key(|(_, round)| (round.deadline, round.round_id));
                let effects = ended
                    .iter()
                    .filter_map(|(before, round)| {
                        round
                            .session_effect(Some(*before))
                            .map(|effect| (round.session_id.clone(), effect))
                    })
                    .collect();
                self.apply_session_effects(tx, effects, now).await?;
                let rounds: Vec<Round> = ended.into_iter().map(|(_, round)| round).collect();
                let announcements: Vec<WebhookEvent> = rounds.iter().filter_map(WebhookEvent::round_ended).collect();
                self.enqueue(tx, &announcements, now).await?;
                for round in &rounds {
                    self.ctx.askers.forget(&round.round_id);
                }
                if let (false, Some(observer)) = (rounds.is_empty(), &self.ctx.options.observer) {
                    observer.rounds_ended(&rounds);
                }
                Ok(rounds)
            }

            /// A round as this instance knows it: the stored record with the asker's latest poll from memory.
            fn seen(&self, mut round: Round) -> Round {
                self.ctx.askers.overlay(&mut round);
                round
            }

            fn seen_all(&self, rows: Vec<RoundRow>) -> StoreResult<Vec<Round>> {
                rows.into_iter().map(|row| Ok(self.seen(row.into_round()?))).collect()
            }

            async fn any_due(&self, now: DateTime<Utc>, session: Option<&SessionId>) -> StoreResult<bool> {
                let found: Option<(String,)> = match session {
                    Some(id) => {
                        sqlx::query_as(sql::ANY_DUE_IN_SESSION)
                            .bind(to_ms(now))
                            .bind(id.to_string())
                            .fetch_optional(&self.pool)
                            .await?
                    }
                    None => {
                        sqlx::query_as(sql::ANY_DUE)
                            .bind(to_ms(now))
                            .fetch_optional(&self.pool)
                            .await?
                    }
                };
                Ok(found.is_some())
            }

            /// Lazy expiry on read: only takes a write transaction when something is actually due.
            async fn expire_lazily(&self, session: Option<&SessionId>) -> StoreResult<()> {
                let now = self.now();
                if self.any_due(now, session).await? {
                    let mut tx = self.begin_write().await?;
                    self.expire_due_in(&mut tx, now, session).await?;
                    tx.commit().await?;
                }
                Ok(())
            }

            /// Loads a round for writing, expires it first if due, lets `op` decide, and saves the outcome.
            /// A refusal still commits the expiry: a deadline is final whatever the caller wanted.
            async fn mutate_round<T, F>(&self, id: RoundId, op: F) -> StoreResult<(Round, T)>
            where
                F: FnOnce(&mut Round, DateTime<Utc>) -> Result<T, ManagedInputError> + Send,
                T: Send,
            {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let mut round = self
                    .fetch_round(&mut tx, id)
                    .await?
                    .ok_or_else(|| round_not_found(id))?;
                if round.is_due(now) || round.is_undeliverable(now) {
                    self.expire_due_in(&mut tx, now, Some(&round.session_id)).await?;
                    round = self
                        .fetch_round(&mut tx, id)
                        .await?
                        .ok_or_else(|| round_not_found(id))?;
                }
                let before = round.clone();
                match op(&mut round, now) {
                    Err(refusal) => {
                        tx.commit().await?;
                        Err(refusal.into())
                    }
                    Ok(outcome) => {
                        if round.version != before.version {
                            self.save_round(&mut tx, &before, &round).await?;
                            if let Some(effect) = round.session_effect(Some(before.status)) {
                                self.apply_session_effects(
                                    &mut tx,
                                    vec![(round.session_id.clone(), effect)],
                                    now,
                                )
                                .await?;
                            }
                        }
                        tx.commit().await?;
                        Ok((round, outcome))
                    }
                }
            }

            /// Applies a session-level change under the session's lock, after expiring its due rounds.
            async fn mutate_session<F>(&self, id: &SessionId, op: F) -> StoreResult<Session>
            where
                F: FnOnce(&mut Session, usize, DateTime<Utc>) -> Result<(), ManagedInputError> + Send,
            {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let mut session = self.fetch_session(&mut tx, id).await?;
                self.expire_due_in(&mut tx, now, Some(id)).await?;
                // Expiry may have moved the session; read it again.
                session = self.fetch_sessions(&mut tx, std::slice::from_ref(id)).await?.remove(id).unwrap_or(session);
                let open = self
                    .open_counts(&mut tx, std::slice::from_ref(id), now)
                    .await?
                    .get(id.as_str())
                    .copied()
                    .unwrap_or(0);
                match op(&mut session, usize::try_from(open).unwrap_or(usize::MAX), now) {
                    Err(refusal) => {
                        tx.commit().await?;
                        Err(refusal.into())
                    }
                    Ok(()) => {
                        self.save_sessions(&mut tx, &[&session]).await?;
                        tx.commit().await?;
                        Ok(session)
                    }
                }
            }

            /// Queues `events` for every configured endpoint, in the caller's transaction.
            async fn enqueue(&self, tx: &mut Tx, events: &[WebhookEvent], now: DateTime<Utc>) -> StoreResult<()> {
                let endpoints = &self.ctx.options.webhooks;
                if endpoints.is_empty() || events.is_empty() {
                    return Ok(());
                }
                let rows: Vec<(&WebhookEvent, &crate::domain::webhook::WebhookEndpoint)> = events
                    .iter()
                    .flat_map(|event| endpoints.iter().map(move |endpoint| (event, endpoint)))
                    .collect();
                for chunk in rows.chunks(sql::BATCH) {
                    let mut query = QueryBuilder::<$db>::new(sql::OUTBOX_INSERT_HEAD);
                    query.push_values(chunk, |mut row, (event, endpoint)| {
                        row.push_bind(uuid::Uuid::now_v7().to_string())
                            .push_bind(endpoint.url.clone())
                            .push_bind(endpoint.format.as_str())
                            .push_bind(event.event)
                            .push_bind(format!("{}|{}", event.key, endpoint.url))
                            .push_bind(event.payload(endpoint.format, now).to_string())
                            .push_bind("pending")
                            .push_bind(0_i64)
                            .push_bind(to_ms(now))
                            .push_bind(to_ms(now));
                    });
                    query.push(sql::OUTBOX_INSERT_TAIL);
                    query.build().execute(&mut **tx).await?;
                }
                Ok(())
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
        impl Store for $store {
            fn now(&self) -> DateTime<Utc> {
                self.ctx.now()
            }

            fn backend(&self) -> crate::Backend {
                Self::BACKEND
            }

            async fn migrate(&self) -> StoreResult<()> {
                self.run_migrations().await
            }

            async fn ping(&self) -> StoreResult<()> {
                sqlx::query::<$db>("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }

            async fn applied_migrations(&self) -> StoreResult<i64> {
                let (count,): (i64,) =
                    sqlx::query_as("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
                        .fetch_one(&self.pool)
                        .await?;
                Ok(count)
            }

            async fn register_session(&self, new: NewSession) -> StoreResult<Session> {
                new.validate()?;
                let id = new.id.clone();
                let c = SessionColumns::of(&Session::new(new, self.now()));
                sqlx::query::<$db>(sql::INSERT_SESSION_IF_NEW)
                    .bind(c.id)
                    .bind(c.title)
                    .bind(c.agent)
                    .bind(c.status)
                    .bind(c.blocked_on_elicitation)
                    .bind(c.lost_reason)
                    .bind(c.lost_at_ms)
                    .bind(c.lost_request_id)
                    .bind(c.lost_summary)
                    .bind(c.lost_detail)
                    .bind(c.created_at_ms)
                    .bind(c.updated_at_ms)
                    .execute(&self.pool)
                    .await?;
                self.get_session(&id).await
            }

            async fn get_session(&self, id: &SessionId) -> StoreResult<Session> {
                self.expire_lazily(Some(id)).await?;
                sqlx::query_as::<$db, SessionRow>(sql::SELECT_SESSION)
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await?
                    .ok_or_else(|| session_not_found(id))?
                    .into_session()
            }

            async fn list_sessions(&self, limit: u32) -> StoreResult<Vec<QueueEntry>> {
                self.expire_lazily(None).await?;
                let rows = sqlx::query_as::<$db, QueueRow>(sql::SELECT_QUEUE)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                rows.into_iter()
                    .map(|row| {
                        Ok(QueueEntry {
                            session: row.session.into_session()?,
                            open_rounds: u32::try_from(row.open_rounds).unwrap_or(u32::MAX),
                            oldest_open_at: row.oldest_open_ms.map(from_ms).transpose()?,
                        })
                    })
                    .collect()
            }

            async fn resume_session(&self, id: &SessionId) -> StoreResult<Session> {
                self.mutate_session(id, |session, open, now| {
                    session.resume(open > 0, now);
                    Ok(())
                })
                .await
            }

            async fn finish_session(&self, id: &SessionId) -> StoreResult<Session> {
                self.mutate_session(id, |session, open, now| session.finish(open, now))
                    .await
            }

            async fn cancel_session(&self, id: &SessionId) -> StoreResult<Session> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let mut session = self.fetch_session(&mut tx, id).await?;
                let rows = sqlx::query_as::<$db, RoundRow>(&locked(sql::SELECT_UNFINISHED_ROUNDS))
                    .bind(id.to_string())
                    .fetch_all(&mut *tx)
                    .await?;
                for before in rows_to_rounds(rows)? {
                    let mut round = before.clone();
                    if round.cancel(now) {
                        self.save_round(&mut tx, &before, &round).await?;
                    }
                }
                session.cancel(now);
                self.save_sessions(&mut tx, &[&session]).await?;
                tx.commit().await?;
                Ok(session)
            }

            async fn set_producer_token(&self, id: &SessionId, token_hash: Option<&str>) -> StoreResult<Vec<Round>> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let previous: Option<(Option<String>,)> = sqlx::query_as(&locked(sql::SELECT_PRODUCER_TOKEN))
                    .bind(id.to_string())
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some((previous,)) = previous else {
                    return Err(session_not_found(id));
                };
                sqlx::query::<$db>(sql::SET_PRODUCER_TOKEN)
                    .bind(id.to_string())
                    .bind(token_hash)
                    .bind(to_ms(now))
                    .execute(&mut *tx)
                    .await?;
                let replaced = previous.is_some() && previous.as_deref() != token_hash;
                if !replaced {
                    tx.commit().await?;
                    return Ok(Vec::new());
                }
                // A question already past its deadline expired before the token changed: say so, not "revoked".
                let mut ended = self.expire_due_in(&mut tx, now, Some(id)).await?;
                let open = sqlx::query_as::<$db, RoundRow>(&locked(sql::SELECT_TOKEN_ROUNDS_OPEN))
                    .bind(id.to_string())
                    .fetch_all(&mut *tx)
                    .await?;
                let mut revoked = Vec::new();
                for before in rows_to_rounds(open)? {
                    let mut round = before.clone();
                    if round.end_for_revoked_token(now) {
                        self.save_round(&mut tx, &before, &round).await?;
                        revoked.push((before.status, round));
                    }
                }
                ended.extend(self.announce_ended(&mut tx, revoked, now).await?);
                tx.commit().await?;
                Ok(ended)
            }

            async fn session_for_token(&self, token_hash: &str) -> StoreResult<Option<Session>> {
                sqlx::query_as::<$db, SessionRow>(sql::SELECT_SESSION_BY_TOKEN)
                    .bind(token_hash)
                    .fetch_optional(&self.pool)
                    .await?
                    .map(SessionRow::into_session)
                    .transpose()
            }

            async fn create_api_key(&self, key: &ApiKey, key_hash: &str) -> StoreResult<()> {
                sqlx::query::<$db>(sql::INSERT_API_KEY)
                    .bind(&key.id)
                    .bind(&key.name)
                    .bind(key.role.as_str())
                    .bind(key_hash)
                    .bind(to_ms(self.now()))
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn api_key_for_hash(&self, key_hash: &str) -> StoreResult<Option<ApiKey>> {
                let row: Option<(String, String, String)> = sqlx::query_as(sql::SELECT_API_KEY_BY_HASH)
                    .bind(key_hash)
                    .fetch_optional(&self.pool)
                    .await?;
                row.map(|(id, name, role)| {
                    Ok(ApiKey {
                        id,
                        name,
                        role: Role::parse(&role)
                            .ok_or_else(|| StoreError::Corrupt(format!("api key role {role}")))?,
                    })
                })
                .transpose()
            }

            async fn create_user(&self, user: &User, password_hash: &str) -> StoreResult<()> {
                let inserted = insert_user(user, password_hash, self.now()).execute(&self.pool).await;
                match inserted {
                    Ok(_) => Ok(()),
                    Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Err(
                        ManagedInputError::conflict(format!("The username {} is taken.", user.username)).into(),
                    ),
                    Err(error) => Err(error.into()),
                }
            }

            async fn user_with_password(&self, username: &str) -> StoreResult<Option<(User, String)>> {
                let row: Option<(String, String, String, String)> = sqlx::query_as(sql::SELECT_USER_BY_NAME)
                    .bind(username)
                    .fetch_optional(&self.pool)
                    .await?;
                row.map(|(id, username, role, hash)| Ok((user_from_row(id, username, &role)?, hash)))
                    .transpose()
            }

            async fn get_user(&self, id: &str) -> StoreResult<Option<User>> {
                let row: Option<(String, String, String)> = sqlx::query_as(sql::SELECT_USER_BY_ID)
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?;
                row.map(|(id, username, role)| user_from_row(id, username, &role)).transpose()
            }

            async fn count_users(&self) -> StoreResult<i64> {
                let (count,): (i64,) = sqlx::query_as(sql::COUNT_USERS).fetch_one(&self.pool).await?;
                Ok(count)
            }

            async fn create_sign_in_link(&self, token_hash: &str, expires_at: DateTime<Utc>) -> StoreResult<()> {
                sqlx::query::<$db>(sql::INSERT_SIGN_IN_LINK)
                    .bind(token_hash)
                    .bind(to_ms(self.now()))
                    .bind(to_ms(expires_at))
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn create_first_admin(&self, token_hash: &str, user: &User, password_hash: &str) -> StoreResult<bool> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let used = sqlx::query::<$db>(sql::USE_SIGN_IN_LINK)
                    .bind(token_hash)
                    .bind(to_ms(now))
                    .execute(&mut *tx)
                    .await?;
                if used.rows_affected() != 1 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                insert_user(user, password_hash, now).execute(&mut *tx).await?;
                tx.commit().await?;
                Ok(true)
            }

            async fn save_web_session(&self, id: &str, data: &str, expires_at: DateTime<Utc>) -> StoreResult<()> {
                sqlx::query::<$db>(sql::UPSERT_WEB_SESSION)
                    .bind(id)
                    .bind(data)
                    .bind(to_ms(expires_at))
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn create_web_session(&self, id: &str, data: &str, expires_at: DateTime<Utc>) -> StoreResult<bool> {
                let inserted = sqlx::query::<$db>(sql::INSERT_WEB_SESSION_IF_NEW)
                    .bind(id)
                    .bind(data)
                    .bind(to_ms(expires_at))
                    .execute(&self.pool)
                    .await?;
                Ok(inserted.rows_affected() == 1)
            }

            async fn load_web_session(&self, id: &str) -> StoreResult<Option<(String, DateTime<Utc>)>> {
                let row: Option<(String, i64)> = sqlx::query_as(sql::SELECT_WEB_SESSION)
                    .bind(id)
                    .bind(to_ms(self.now()))
                    .fetch_optional(&self.pool)
                    .await?;
                row.map(|(data, expires)| Ok((data, from_ms(expires)?))).transpose()
            }

            async fn delete_web_session(&self, id: &str) -> StoreResult<()> {
                sqlx::query::<$db>(sql::DELETE_WEB_SESSION).bind(id).execute(&self.pool).await?;
                Ok(())
            }

            async fn purge_web_sessions(&self) -> StoreResult<u64> {
                let deleted = sqlx::query::<$db>(sql::PURGE_WEB_SESSIONS)
                    .bind(to_ms(self.now()))
                    .execute(&self.pool)
                    .await?;
                Ok(deleted.rows_affected())
            }

            async fn create_round(&self, new: NewRound) -> StoreResult<Round> {
                let limits = self.ctx.options.limits;
                new.validate(&limits)?;
                for (key, request) in &new.requests {
                    match request {
                        ElicitationRequest::Form { requested_schema, .. } => {
                            self.ctx.schemas.get(requested_schema, &limits)?;
                        }
                        ElicitationRequest::Url { url, .. } => {
                            crate::domain::consent_url::check(key.as_str(), url)?;
                        }
                    }
                }
                let now = self.now();
                let deadlines = self.ctx.options.expiry.deadlines(
                    now,
                    new.producer_deadline(),
                    new.asked_through.trust(),
                )?;
                let mut tx = self.begin_write().await?;
                let session = self.fetch_session(&mut tx, &new.session_id).await?;
                session.accepts_rounds()?;
                let round = Round::open(new, crate::new_round_id(), now, deadlines);
                self.insert_round(&mut tx, &round).await?;
                self.enqueue(&mut tx, &[WebhookEvent::question_created(&round)], now).await?;
                self.apply_session_effects(
                    &mut tx,
                    vec![(round.session_id.clone(), SessionEffect::Opened)],
                    now,
                )
                .await?;
                tx.commit().await?;
                Ok(round)
            }

            async fn get_round(&self, id: RoundId) -> StoreResult<Round> {
                let round = self.read_round(id).await?.ok_or_else(|| round_not_found(id))?;
                let now = self.now();
                if !round.is_due(now) && !round.is_undeliverable(now) {
                    return Ok(self.seen(round));
                }
                self.expire_lazily(Some(&round.session_id)).await?;
                Ok(self.seen(self.read_round(id).await?.ok_or_else(|| round_not_found(id))?))
            }

            async fn get_round_by_request_id(&self, id: &RequestId) -> StoreResult<Round> {
                let row = sqlx::query_as::<$db, RoundRow>(sql::SELECT_ROUND_BY_REQUEST_ID)
                    .bind(id.to_string())
                    .fetch_optional(&self.pool)
                    .await?
                    .ok_or_else(|| {
                        StoreError::from(ManagedInputError::not_found(format!(
                            "No question with request id {id} exists."
                        )))
                    })?;
                let round = row.into_round()?;
                let now = self.now();
                if round.is_due(now) || round.is_undeliverable(now) {
                    return self.get_round(round.round_id).await;
                }
                Ok(self.seen(round))
            }

            async fn list_rounds(&self, session: &SessionId) -> StoreResult<Vec<Round>> {
                self.get_session(session).await?;
                let rows = sqlx::query_as::<$db, RoundRow>(sql::SELECT_SESSION_ROUNDS)
                    .bind(session.to_string())
                    .fetch_all(&self.pool)
                    .await?;
                self.seen_all(rows)
            }

            async fn list_rounds_page(
                &self,
                session: &SessionId,
                before: Option<RoundId>,
                limit: u32,
            ) -> StoreResult<Vec<Round>> {
                let rows = sqlx::query_as::<$db, RoundRow>(sql::SELECT_SESSION_ROUNDS_PAGE)
                    .bind(session.to_string())
                    .bind(before.map(|id| id.to_string()).unwrap_or_default())
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                self.seen_all(rows)
            }

            async fn open_rounds(&self, session: &SessionId, limit: u32) -> StoreResult<Vec<Round>> {
                let rows = sqlx::query_as::<$db, RoundRow>(sql::SELECT_OPEN_ROUNDS)
                    .bind(session.to_string())
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                self.seen_all(rows)
            }

            async fn oldest_open_rounds(&self, sessions: &[SessionId]) -> StoreResult<Vec<Round>> {
                let mut rounds = Vec::new();
                for chunk in sessions.chunks(sql::BATCH) {
                    let mut query = QueryBuilder::<$db>::new(sql::SELECT_OLDEST_OPEN_HEAD);
                    let mut list = query.separated(", ");
                    for id in chunk {
                        list.push_bind(id.to_string());
                    }
                    query.push(") ORDER BY r.created_at_ms, r.round_id");
                    rounds.extend(self.seen_all(
                        query.build_query_as::<RoundRow>().fetch_all(&self.pool).await?,
                    )?);
                }
                Ok(rounds)
            }

            async fn poll_probe(&self, token_hash: &str, request_id: &str) -> StoreResult<Option<crate::PollProbe>> {
                let row: Option<(String, String, String, i64)> = sqlx::query_as(sql::SELECT_POLL_PROBE)
                    .bind(token_hash)
                    .bind(request_id)
                    .fetch_optional(&self.pool)
                    .await?;
                row.map(|(session, round, status, deadline)| {
                    Ok(crate::PollProbe {
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
            }

            async fn pending_round(&self, session: &SessionId) -> StoreResult<Option<Round>> {
                self.get_session(session).await?;
                let mut pending = rows_to_rounds(
                    sqlx::query_as::<$db, RoundRow>(sql::SELECT_PENDING_ROUNDS)
                        .bind(session.to_string())
                        .fetch_all(&self.pool)
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

            async fn claim_round(&self, id: RoundId, owner: OwnerId, lease: Duration) -> StoreResult<Lease> {
                let token = crate::new_lease_token();
                self.mutate_round(id, move |round, now| round.claim(owner, token, lease, now))
                    .await
                    .map(|(_, lease)| lease)
            }

            async fn renew(
                &self,
                id: RoundId,
                owner: &OwnerId,
                token: &LeaseToken,
                lease: Duration,
            ) -> StoreResult<Lease> {
                self.mutate_round(id, |round, now| round.renew(owner, token, lease, now))
                    .await
                    .map(|(_, lease)| lease)
            }

            async fn submit_responses(
                &self,
                id: RoundId,
                responses: BTreeMap<RequestKey, ElicitationResponse>,
                idempotency_key: IdempotencyKey,
                answered_by: Option<String>,
            ) -> StoreResult<(Round, Submission)> {
                // The schema of a round never changes, so answers are validated before the write transaction
                // begins: no producer pattern or answer can hold the database lock while it is checked.
                let verdicts = match self.read_round(id).await? {
                    Some(round) => self.prevalidate(&round, &responses),
                    None => BTreeMap::new(),
                };
                let check = |key: &RequestKey, _: &ElicitationRequest, _: &Map<String, Value>| {
                    verdicts.get(key).cloned().unwrap_or_else(|| {
                        Err(ManagedInputError::conflict(format!(
                            "Request {key} changed while the answer was checked; send the answer again."
                        )))
                    })
                };
                self.mutate_round(id, move |round, now| {
                    round.submit(responses, idempotency_key, answered_by, now, &check)
                })
                .await
            }

            async fn start_delivery(&self, id: RoundId, owner: &OwnerId, token: &LeaseToken) -> StoreResult<Round> {
                self.mutate_round(id, |round, now| round.start_delivery(owner, token, now))
                    .await
                    .map(|(round, ())| round)
            }

            async fn mark_delivered(&self, id: RoundId, owner: &OwnerId, token: &LeaseToken) -> StoreResult<Round> {
                self.mutate_round(id, |round, now| round.mark_delivered(owner, token, now))
                    .await
                    .map(|(round, ())| round)
            }

            async fn resolve(&self, id: RoundId, owner: &OwnerId, token: &LeaseToken) -> StoreResult<Round> {
                self.mutate_round(id, |round, now| round.resolve(owner, token, now))
                    .await
                    .map(|(round, ())| round)
            }

            async fn fail(
                &self,
                id: RoundId,
                owner: &OwnerId,
                token: &LeaseToken,
                code: FailureCode,
                message: String,
            ) -> StoreResult<Round> {
                self.mutate_round(id, |round, now| round.fail(owner, token, code, message, now))
                    .await
                    .map(|(round, ())| round)
            }

            async fn fail_recovery(&self, id: RoundId) -> StoreResult<Round> {
                self.mutate_round(id, |round, now| round.fail_recovery(now))
                    .await
                    .map(|(round, ())| round)
            }

            async fn record_asker_poll(&self, id: RoundId) -> StoreResult<()> {
                let now = self.now();
                if let Some(seen) = self.ctx.askers.record(id, now) {
                    sqlx::query::<$db>(sql::RECORD_ASKER_POLL)
                        .bind(id.to_string())
                        .bind(to_ms(seen.last_poll_at))
                        .bind(seen.interval_ms)
                        .execute(&self.pool)
                        .await?;
                }
                Ok(())
            }

            async fn record_poll_delivery(&self, id: RoundId) -> StoreResult<Round> {
                self.mutate_round(id, |round, now| Ok(round.record_poll_delivery(now)))
                    .await
                    .map(|(round, _)| round)
            }

            async fn redacted_responses(&self, id: RoundId) -> StoreResult<RedactedResponses> {
                Ok(self.get_round(id).await?.redacted())
            }

            async fn open_round_count(&self) -> StoreResult<i64> {
                let (count,): (i64,) = sqlx::query_as(sql::COUNT_OPEN_ROUNDS)
                    .bind(to_ms(self.now()))
                    .fetch_one(&self.pool)
                    .await?;
                Ok(count)
            }

            async fn gate_state(&self) -> StoreResult<GateState> {
                let now = self.now();
                sqlx::query::<$db>(sql::GATE_INIT).bind(true).bind(to_ms(now)).execute(&self.pool).await?;
                let (healthy, since, checked): (bool, i64, Option<i64>) =
                    sqlx::query_as(sql::GATE_READ).fetch_one(&self.pool).await?;
                Ok(GateState::from_parts(healthy, from_ms(since)?, checked.map(from_ms).transpose()?))
            }

            async fn record_gate_probe(&self, healthy: bool, probe_url: &str) -> StoreResult<(GateChange, GateState)> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                sqlx::query::<$db>(sql::GATE_INIT).bind(true).bind(to_ms(now)).execute(&mut *tx).await?;
                let (was_healthy, since, checked): (bool, i64, Option<i64>) =
                    sqlx::query_as(&locked(sql::GATE_READ)).fetch_one(&mut *tx).await?;
                let mut gate = GateState::from_parts(was_healthy, from_ms(since)?, checked.map(from_ms).transpose()?);
                let change = gate.record(healthy, now);
                sqlx::query::<$db>(sql::GATE_WRITE)
                    .bind(gate.healthy)
                    .bind(to_ms(gate.since))
                    .bind(gate.last_checked.map(to_ms))
                    .execute(&mut *tx)
                    .await?;
                if matches!(change, GateChange::IncidentOpened | GateChange::IncidentClosed) {
                    let incident = WebhookEvent::gate_incident(change == GateChange::IncidentOpened, gate.since, probe_url);
                    self.enqueue(&mut tx, &[incident], now).await?;
                }
                tx.commit().await?;
                Ok((change, gate))
            }

            async fn purge_terminal_rounds(&self, before: DateTime<Utc>) -> StoreResult<u64> {
                let deleted = sqlx::query::<$db>(sql::PURGE_TERMINAL_ROUNDS)
                    .bind(to_ms(before))
                    .execute(&self.pool)
                    .await?;
                Ok(deleted.rows_affected())
            }

            async fn enqueue_webhooks(&self, events: &[WebhookEvent]) -> StoreResult<()> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                self.enqueue(&mut tx, events, now).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn claim_webhook_deliveries(&self, limit: u32, lock: Duration) -> StoreResult<Vec<WebhookDelivery>> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let rows = sqlx::query_as::<$db, OutboxRow>(sql::OUTBOX_CLAIM)
                    .bind(to_ms(now))
                    .bind(to_ms(now + lock))
                    .bind(i64::from(limit))
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                rows.into_iter().map(OutboxRow::into_delivery).collect()
            }

            async fn finish_webhook_delivery(&self, delivery: &WebhookDelivery, outcome: AttemptOutcome) -> StoreResult<()> {
                let now = self.now();
                match outcome {
                    AttemptOutcome::Delivered { status } => {
                        sqlx::query::<$db>(sql::OUTBOX_DELIVERED)
                            .bind(&delivery.id)
                            .bind(to_ms(now))
                            .bind(i64::from(status))
                            .execute(&self.pool)
                            .await?;
                    }
                    AttemptOutcome::Failed { status, error } => {
                        let given_up = delivery.attempts >= MAX_ATTEMPTS;
                        sqlx::query::<$db>(sql::OUTBOX_RETRY)
                            .bind(&delivery.id)
                            .bind(if given_up { "failed" } else { "pending" })
                            .bind(to_ms(now + retry_delay(delivery.attempts)))
                            .bind(status.map(i64::from))
                            .bind(error.chars().take(500).collect::<String>())
                            .execute(&self.pool)
                            .await?;
                    }
                }
                Ok(())
            }

            async fn list_webhook_deliveries(&self, limit: u32) -> StoreResult<Vec<WebhookDelivery>> {
                sqlx::query_as::<$db, OutboxRow>(sql::OUTBOX_LIST)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?
                    .into_iter()
                    .map(OutboxRow::into_delivery)
                    .collect()
            }

            async fn expire_due_rounds(&self) -> StoreResult<Vec<Round>> {
                let now = self.now();
                // A tick with nothing due stays a read: the sweep runs often, writers should not queue behind it.
                if !self.any_due(now, None).await? {
                    return Ok(Vec::new());
                }
                let mut tx = self.begin_write().await?;
                let expired = self.expire_due_in(&mut tx, now, None).await?;
                tx.commit().await?;
                Ok(expired)
            }

            async fn sweep_stranded(&self) -> StoreResult<Vec<Session>> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                // Due rounds expire first, so an overdue question is reported as expired, not stranded.
                self.expire_due_in(&mut tx, now, None).await?;
                let stranded: Vec<Session> =
                    sqlx::query_as::<$db, SessionRow>(&locked(sql::SELECT_STRANDED))
                        .bind(to_ms(now))
                        .bind(true)
                        .fetch_all(&mut *tx)
                        .await?
                        .into_iter()
                        .map(SessionRow::into_session)
                        .collect::<StoreResult<_>>()?;
                if stranded.is_empty() {
                    tx.commit().await?;
                    return Ok(Vec::new());
                }
                let ids: Vec<SessionId> = stranded.iter().map(|s| s.id.clone()).collect();
                let mut last_rounds: HashMap<String, (RequestId, String)> = HashMap::new();
                for chunk in ids.chunks(sql::BATCH) {
                    let mut query = QueryBuilder::<$db>::new(
                        "SELECT r.session_id, r.request_id, r.summary FROM rounds r WHERE r.session_id IN (",
                    );
                    let mut list = query.separated(", ");
                    for id in chunk {
                        list.push_bind(id.to_string());
                    }
                    query.push(
                        ") AND r.created_at_ms = (SELECT MAX(r2.created_at_ms) FROM rounds r2 \
                         WHERE r2.session_id = r.session_id)",
                    );
                    let rows: Vec<(String, String, String)> =
                        query.build_query_as().fetch_all(&mut *tx).await?;
                    for (session_id, request_id, summary) in rows {
                        if let Ok(request_id) = RequestId::parse(request_id) {
                            last_rounds.insert(session_id, (request_id, summary));
                        }
                    }
                }
                let mut changed = Vec::new();
                for mut session in stranded {
                    let last = last_rounds.remove(session.id.as_str());
                    if session.sweep_stranded(false, last, now) {
                        changed.push(session);
                    }
                }
                let refs: Vec<&Session> = changed.iter().collect();
                self.save_sessions(&mut tx, &refs).await?;
                let announcements: Vec<WebhookEvent> =
                    changed.iter().filter_map(WebhookEvent::question_stranded).collect();
                self.enqueue(&mut tx, &announcements, now).await?;
                tx.commit().await?;
                Ok(changed)
            }

            async fn recover_leases(&self) -> StoreResult<Vec<Round>> {
                let now = self.now();
                let mut tx = self.begin_write().await?;
                let failed = rows_to_rounds(
                    sqlx::query_as::<$db, RoundRow>(sql::RECOVER_LEASES)
                        .bind(to_ms(now))
                        .bind(RECOVERY_MESSAGE)
                        .fetch_all(&mut *tx)
                        .await?,
                )?;
                let effects = failed
                    .iter()
                    .filter_map(|round| {
                        round
                            .session_effect(Some(RoundStatus::DeliveryStarted))
                            .map(|effect| (round.session_id.clone(), effect))
                    })
                    .collect();
                self.apply_session_effects(&mut tx, effects, now).await?;
                tx.commit().await?;
                Ok(failed)
            }
        }
    };
}

pub(crate) use sql_store;
