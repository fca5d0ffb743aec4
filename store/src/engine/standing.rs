//! Standing answers: recorded, listed, revoked, and one use taken by a new question like theirs.

use super::SqlStore;
use crate::{
    StandingAnswerStore, StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        ids::SessionId,
        standing::{NewStandingAnswer, QuestionMatch, StandingAnswer},
    },
    records::{StandingAnswerRow, to_ms},
    sql,
};

#[async_trait::async_trait]
impl<D: Dialect> StandingAnswerStore for SqlStore<D> {
    async fn create_standing_answer(&self, new: NewStandingAnswer) -> StoreResult<StandingAnswer> {
        let content = new
            .content
            .map(|content| serde_json::Value::Object(content).to_string());
        let row: StandingAnswerRow = self
            .one(
                Statement::new(sql::INSERT_STANDING_ANSWER.as_str())
                    .bind(new.created_by)
                    .bind(to_ms(self.clock_now()))
                    .bind(new.session_id.map(|id| id.as_str().to_owned()))
                    .bind(new.question.server)
                    .bind(new.question.tool)
                    .bind(new.question.message)
                    .bind(new.question.schema)
                    .bind(new.action.as_str())
                    .bind(content)
                    .bind(to_ms(new.expires_at))
                    .bind(new.use_limit),
            )
            .await?;
        self.ctx.standing.set(true);
        row.into_standing_answer()
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

    async fn revoke_standing_answer(&self, id: i64) -> StoreResult<StandingAnswer> {
        let row: Option<StandingAnswerRow> = self
            .optional(
                Statement::new(sql::REVOKE_STANDING_ANSWER.as_str())
                    .bind(id)
                    .bind(to_ms(self.clock_now())),
            )
            .await?;
        row.ok_or_else(|| {
            StoreError::from(ManagedInputError::not_found(format!(
                "No standing answer #{id} exists."
            )))
        })?
        .into_standing_answer()
    }

    async fn standing_answers_in_force(&self) -> StoreResult<bool> {
        if let Some(any) = self.ctx.standing.known() {
            return Ok(any);
        }
        let found: Option<(i64,)> = self
            .optional(Statement::new(sql::ANY_STANDING_ANSWER_AT_ALL).bind(to_ms(self.clock_now())))
            .await?;
        self.ctx.standing.set(found.is_some());
        Ok(found.is_some())
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
