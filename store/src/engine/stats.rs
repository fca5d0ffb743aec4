//! Response times: questions counted once as they end, and the counts each figure of the page is made from.

use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::{
    StatsStore, StoreResult,
    dialect::{Dialect, Statement},
    domain::stats::{DayCount, Dimension, Ending, day_start_ms},
    sql,
};

/// A count as both reads return it: day, dimension, subject, ending, bucket, questions.
type CountRow = (i64, String, String, String, i64, i64);

fn day_count((day, dimension, key, ending, bucket, count): CountRow) -> Option<DayCount> {
    Some(DayCount {
        day,
        dimension: Dimension::parse(&dimension)?,
        key,
        ending: Ending::parse(&ending),
        bucket: usize::try_from(bucket).unwrap_or(0),
        count,
    })
}

#[async_trait::async_trait]
impl<D: Dialect> StatsStore for SqlStore<D> {
    fn stats_now(&self) -> DateTime<Utc> {
        self.clock_now()
    }

    async fn count_ended_questions(&self, limit: u32) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let marked = tx
            .execute(Statement::new(sql::MARK_ENDED_ROUNDS).bind(i64::from(limit)))
            .await?;
        if marked > 0 {
            tx.execute(Statement::new(sql::add_marked_counts())).await?;
            tx.execute(Statement::new(sql::MARKED_ROUNDS_COUNTED))
                .await?;
        }
        tx.commit().await?;
        Ok(marked)
    }

    async fn response_time_counts(&self, since_day: i64) -> StoreResult<Vec<DayCount>> {
        let kept = self
            .all::<CountRow>(Statement::new(sql::SELECT_RESPONSE_TIME_COUNTS).bind(since_day))
            .await?;
        let uncounted = self
            .all::<CountRow>(Statement::new(sql::uncounted_counts()).bind(day_start_ms(since_day)))
            .await?;
        Ok(kept
            .into_iter()
            .chain(uncounted)
            .filter_map(day_count)
            .collect())
    }
}
