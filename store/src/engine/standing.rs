//! Standing answers: recorded, listed, revoked, and one use taken by a new question like theirs.

use std::sync::Arc;

use super::SqlStore;
use crate::{
    StandingAnswerStore, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        audit::NewAuditEntry,
        expiry::wire_time,
        ids::SessionId,
        standing::{NewStandingAnswer, QuestionMatch, StandingAnswer},
    },
    records::{StandingAnswerRow, to_ms},
    sql,
};

/// The most places remembered; past them every question reads for its rule, as if none were remembered.
const PLACES_KEPT: usize = 1_000;

/// Where the standing answers in force could answer, as last read: each rule's session (`None`: every
/// session), server and tool. Its message and form are left to the read a question in one of these places makes.
#[derive(Debug)]
pub(crate) struct StandingPlaces {
    places: Vec<(Option<String>, String, String)>,
    /// False when there were more rules in force than [`PLACES_KEPT`]: then any question may have one.
    complete: bool,
}

impl StandingPlaces {
    fn of(mut places: Vec<(Option<String>, String, String)>) -> Self {
        let complete = places.len() <= PLACES_KEPT;
        places.truncate(PLACES_KEPT);
        Self { places, complete }
    }

    fn any(&self) -> bool {
        !self.complete || !self.places.is_empty()
    }

    fn may_answer(&self, session: &str, server: &str, tool: &str) -> bool {
        !self.complete
            || self
                .places
                .iter()
                .any(|(rule_session, rule_server, rule_tool)| {
                    rule_session.as_deref().is_none_or(|s| s == session)
                        && rule_server == server
                        && rule_tool == tool
                })
    }

    /// These places and `rule`'s.
    fn with(&self, rule: &StandingAnswer) -> Arc<Self> {
        let mut places = self.places.clone();
        places.push((
            rule.session_id.as_ref().map(ToString::to_string),
            rule.question.server.clone(),
            rule.question.tool.clone(),
        ));
        Arc::new(Self::of(places))
    }
}

#[async_trait::async_trait]
impl<D: Dialect> StandingAnswerStore for SqlStore<D> {
    async fn create_standing_answer(&self, new: NewStandingAnswer) -> StoreResult<StandingAnswer> {
        let content = new
            .content
            .map(|content| serde_json::Value::Object(content).to_string());
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let row: StandingAnswerRow = tx
            .one(
                Statement::new(sql::INSERT_STANDING_ANSWER.as_str())
                    .bind(new.created_by)
                    .bind(to_ms(now))
                    .bind(new.session_id.map(|id| id.as_str().to_owned()))
                    .bind(new.question.server)
                    .bind(new.question.tool)
                    .bind(new.question.message)
                    .bind(new.question.schema)
                    .bind(new.action.as_str())
                    .bind(content)
                    .bind(to_ms(new.expires_at))
                    .bind(new.use_limit)
                    .bind(i64::from(new.prefix)),
            )
            .await?;
        let rule = row.into_standing_answer()?;
        let entry = NewAuditEntry::new(
            rule.created_by.clone(),
            "rule.created",
            format!("rule #{}", rule.id),
            serde_json::json!({
                "session_id": rule.session_id,
                "server": rule.question.server,
                "tool": rule.question.tool,
                "action": rule.action.as_str(),
                "expires_at": wire_time(rule.expires_at),
                "use_limit": rule.use_limit,
            }),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        self.ctx.standing.change(|places| places.with(&rule));
        Ok(rule)
    }

    async fn standing_answers(&self, session: &SessionId) -> StoreResult<Vec<StandingAnswer>> {
        let rows: Vec<StandingAnswerRow> = self
            .all(
                Statement::new(sql::SELECT_STANDING_ANSWERS.as_str())
                    .bind(session.as_str())
                    .bind(to_ms(self.clock_now())),
            )
            .await?;
        rows.into_iter()
            .map(StandingAnswerRow::into_standing_answer)
            .collect()
    }

    async fn revoke_standing_answer(&self, id: i64, actor: &str) -> StoreResult<StandingAnswer> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let row: Option<StandingAnswerRow> = tx
            .optional(
                Statement::new(sql::REVOKE_STANDING_ANSWER.as_str())
                    .bind(id)
                    .bind(to_ms(now)),
            )
            .await?;
        let rule = row
            .ok_or_else(|| {
                StoreError::from(ManagedInputError::not_found(format!(
                    "No standing answer #{id} exists."
                )))
            })?
            .into_standing_answer()?;
        let entry = NewAuditEntry::new(
            actor,
            "rule.revoked",
            format!("rule #{id}"),
            serde_json::json!({}),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        Ok(rule)
    }

    async fn live_standing_answers(&self, limit: u32) -> StoreResult<Vec<StandingAnswer>> {
        self.all::<StandingAnswerRow>(
            Statement::new(sql::SELECT_LIVE_STANDING_ANSWERS.as_str())
                .bind(to_ms(self.clock_now()))
                .bind(i64::from(limit)),
        )
        .await?
        .into_iter()
        .map(StandingAnswerRow::into_standing_answer)
        .collect()
    }

    async fn pause_standing_answer(
        &self,
        id: i64,
        paused: bool,
        actor: &str,
    ) -> StoreResult<StandingAnswer> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let row: Option<StandingAnswerRow> = tx
            .optional(
                Statement::new(sql::PAUSE_STANDING_ANSWER.as_str())
                    .bind(id)
                    .bind(paused.then(|| to_ms(now))),
            )
            .await?;
        let rule = row
            .ok_or_else(|| {
                StoreError::from(ManagedInputError::not_found(format!(
                    "No standing answer #{id} is in force."
                )))
            })?
            .into_standing_answer()?;
        let action = if paused {
            "rule.paused"
        } else {
            "rule.resumed"
        };
        let entry = NewAuditEntry::new(actor, action, format!("rule #{id}"), serde_json::json!({}));
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        if !paused {
            self.ctx.standing.change(|places| places.with(&rule));
        }
        Ok(rule)
    }

    async fn standing_answers_in_force(&self) -> StoreResult<bool> {
        if let Some(places) = self.ctx.standing.known() {
            return Ok(places.any());
        }
        let rows: Vec<(Option<String>, String, String)> = self
            .all(
                Statement::new(sql::STANDING_PLACES)
                    .bind(to_ms(self.clock_now()))
                    .bind(PLACES_KEPT as i64 + 1),
            )
            .await?;
        let places = Arc::new(StandingPlaces::of(rows));
        self.ctx.standing.read_again(Arc::clone(&places));
        Ok(places.any())
    }

    async fn use_standing_answer(
        &self,
        session: &SessionId,
        question: &QuestionMatch,
    ) -> StoreResult<Option<StandingAnswer>> {
        let question_in = |sql: &'static str| {
            Statement::new(sql)
                .bind(session.as_str())
                .bind(question.server.as_str())
                .bind(question.tool.as_str())
                .bind(question.message.as_str())
                .bind(question.schema.as_str())
                .bind(to_ms(self.clock_now()))
        };
        // No rule in force for this session, server and tool, as last seen: no read (a rule elsewhere costs a
        // question nothing).
        if let Some(places) = self.ctx.standing.known()
            && !places.may_answer(session.as_str(), &question.server, &question.tool)
        {
            return Ok(None);
        }
        let candidate: Option<(i64,)> =
            self.optional(question_in(sql::ANY_STANDING_ANSWER)).await?;
        if candidate.is_none() {
            return Ok(None);
        }
        let row: Option<StandingAnswerRow> = self
            .optional(question_in(sql::USE_STANDING_ANSWER.as_str()))
            .await?;
        row.map(StandingAnswerRow::into_standing_answer).transpose()
    }
}
