//! Response times: questions counted once as they end, and the counts each figure of the page is made from.

use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::{
    StatsStore, StoreResult,
    dialect::{Dialect, Statement},
    domain::stats::{DayCount, Dimension, Ending, QuestionOutcome, day_start_ms, tally},
    sql,
};

/// A round as the counts read it: created, session, server, responder, responded, failure code, status.
type OutcomeRow = (
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    String,
);

fn outcome(row: OutcomeRow) -> QuestionOutcome {
    let (created_at_ms, session_id, server, responded_by, responded_at_ms, failure_code, status) =
        row;
    QuestionOutcome {
        created_at_ms,
        session_id,
        server,
        responded_by,
        responded_at_ms,
        failure_code,
        status,
    }
}

#[async_trait::async_trait]
impl<D: Dialect> StatsStore for SqlStore<D> {
    fn stats_now(&self) -> DateTime<Utc> {
        self.clock_now()
    }

    async fn count_ended_questions(&self, limit: u32) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let ended: Vec<QuestionOutcome> = tx
            .all::<OutcomeRow>(Statement::new(sql::COUNT_ENDED_ROUNDS).bind(i64::from(limit)))
            .await?
            .into_iter()
            .map(outcome)
            .collect();
        let counts = tally(&ended);
        for chunk in counts.chunks(sql::BATCH) {
            let mut statement = Statement::new(sql::add_response_time_counts(chunk.len()));
            for count in chunk {
                statement = statement
                    .bind(count.day)
                    .bind(count.dimension.code())
                    .bind(count.key.as_str())
                    .bind(count.ending.code())
                    .bind(i64::try_from(count.bucket).unwrap_or(0))
                    .bind(count.count);
            }
            tx.execute(statement).await?;
        }
        tx.commit().await?;
        Ok(ended.len() as u64)
    }

    async fn response_time_counts(&self, since_day: i64) -> StoreResult<Vec<DayCount>> {
        let kept = self
            .all::<(i64, String, String, String, i64, i64)>(
                Statement::new(sql::SELECT_RESPONSE_TIME_COUNTS).bind(since_day),
            )
            .await?;
        let open = self
            .all::<OutcomeRow>(
                Statement::new(sql::SELECT_UNCOUNTED_ROUNDS).bind(day_start_ms(since_day)),
            )
            .await?;
        let mut counts: Vec<DayCount> = kept
            .into_iter()
            .filter_map(|(day, dimension, key, ending, bucket, count)| {
                Some(DayCount {
                    day,
                    dimension: Dimension::parse(&dimension)?,
                    key,
                    ending: Ending::parse(&ending),
                    bucket: usize::try_from(bucket).unwrap_or(0),
                    count,
                })
            })
            .collect();
        let open: Vec<QuestionOutcome> = open.into_iter().map(outcome).collect();
        counts.extend(tally(&open));
        Ok(counts)
    }
}
