//! Response times: the grouped counts each figure of the page is computed from.

use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::{
    StatsStore, StoreResult,
    dialect::{Dialect, Statement},
    domain::stats::{CountRow, Ending},
    records::to_ms,
    sql::{self, StatsKey},
};

#[async_trait::async_trait]
impl<D: Dialect> StatsStore for SqlStore<D> {
    fn stats_now(&self) -> DateTime<Utc> {
        self.clock_now()
    }

    async fn response_time_counts(
        &self,
        key: StatsKey,
        since: DateTime<Utc>,
    ) -> StoreResult<Vec<CountRow>> {
        let rows = self
            .all::<(Option<String>, String, i64, i64)>(
                Statement::new(sql::response_time_counts(key)).bind(to_ms(since)),
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|(key, ending, bucket, count)| CountRow {
                key: key.unwrap_or_default(),
                ending: Ending::parse(&ending),
                bucket: usize::try_from(bucket).unwrap_or(0),
                count,
            })
            .collect())
    }
}
