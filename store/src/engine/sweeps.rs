//! The scheduled jobs' work: ending due rounds, stranded sessions, expired leases, old records.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::{SqlStore, rows::rows_to_rounds};
use crate::{
    COUNT_BATCH, StatsStore, StoreResult, SweepStore,
    dialect::{Dialect, Statement},
    domain::{
        ids::{RequestId, SessionId},
        round::{RECOVERY_MESSAGE, Round, RoundStatus},
        session::Session,
        stats::{MAX_DAYS, day_of},
        webhook::WebhookEvent,
    },
    records::{RoundRow, SessionRow, to_ms},
    sql,
};

#[async_trait::async_trait]
impl<D: Dialect> SweepStore for SqlStore<D> {
    async fn expire_due_rounds(&self) -> StoreResult<Vec<Round>> {
        let now = self.clock_now();
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
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        // Due rounds expire first, so an overdue question is reported as expired, not stranded.
        self.expire_due_in(&mut tx, now, None).await?;
        let stranded: Vec<Session> = tx
            .all::<SessionRow>(
                Statement::new(Self::locked(sql::SELECT_STRANDED))
                    .bind(to_ms(now))
                    .bind(true),
            )
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
            let statement = Statement::new(sql::select_latest_rounds(chunk.len()))
                .bind_all(chunk.iter().map(|id| id.to_string().into()));
            for (session_id, request_id, summary) in
                tx.all::<(String, String, String)>(statement).await?
            {
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
        let announcements: Vec<WebhookEvent> = changed
            .iter()
            .filter_map(WebhookEvent::question_stranded)
            .collect();
        self.enqueue(&mut tx, &announcements, now).await?;
        tx.commit().await?;
        Ok(changed)
    }

    async fn recover_leases(&self) -> StoreResult<Vec<Round>> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let failed = rows_to_rounds(
            tx.all::<RoundRow>(
                Statement::new(sql::RECOVER_LEASES)
                    .bind(to_ms(now))
                    .bind(RECOVERY_MESSAGE),
            )
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

    async fn purge_terminal_rounds(&self, before: DateTime<Utc>) -> StoreResult<u64> {
        // A Slack message outlives its question's retention by nothing: nobody updates it after that.
        self.execute(Statement::new(sql::PURGE_SLACK_MESSAGES).bind(to_ms(before)))
            .await?;
        self.execute(Statement::new(sql::PURGE_ANSWER_TOKENS).bind(to_ms(before)))
            .await?;
        // Link offers live minutes; `before` is days ago, so any left are long dead.
        self.execute(Statement::new(sql::PURGE_SLACK_LINK_TOKENS).bind(to_ms(before)))
            .await?;
        // Every ended round is counted before any goes: the purge deletes only counted ones, and the counts
        // keep the page's longest period whatever the retention.
        while self.count_ended_questions(COUNT_BATCH).await? == u64::from(COUNT_BATCH) {}
        let first_shown_day = day_of(to_ms(self.clock_now())) - i64::from(MAX_DAYS) - 1;
        self.execute(Statement::new(sql::PURGE_RESPONSE_TIME_COUNTS).bind(first_shown_day))
            .await?;
        self.execute(Statement::new(sql::PURGE_TERMINAL_ROUNDS).bind(to_ms(before)))
            .await
    }
}
