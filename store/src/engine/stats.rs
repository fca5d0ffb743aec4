//! Response times: questions counted once as they end, and the counts each figure of the page is made from.

use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::{
    Backend, StatsStore, StoreError, StoreResult,
    dialect::{Dialect, Param, Statement},
    domain::stats::{DayCount, Dimension, Ending, day_of, day_start_ms},
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

/// Counted questions after which, once a backlog is worked off, PostgreSQL's view of the counts' two tables is
/// refreshed. Measured on the bench's page over 1M questions right after the tally of its backlog (p50 277 ms,
/// p99 392 ms): the read of the questions not counted yet was planned from statistics that still said most
/// rounds were uncounted, a bitmap scan over 929,000 dead index entries (406 ms alone; 2.7 ms once `rounds`
/// was analyzed); and the kept counts, rewritten by every batch, were read from the heap, not the covering
/// index, until a VACUUM marked their pages all-visible again (the page's p99: 426 ms with neither step,
/// 430 ms with the VACUUM alone, 451 ms with the ANALYZE alone, 47 ms with both). Autovacuum does both in its
/// own time, once a tenth of a table has changed. The threshold is far above what one busy minute ends, so a
/// steady tally pays for this (about a second of PostgreSQL's time) rarely.
const REFRESH_AFTER_COUNTED: u64 = 50_000;

impl<D: Dialect> SqlStore<D> {
    /// Notes `marked` more counted questions and, once a backlog of them is `worked_off`, refreshes what the
    /// page's reads are planned and answered from. Best effort: it changes how fast the page reads, never what
    /// it reads, so a failure does not fail the tally, whose counts are committed; the count starts again
    /// either way, so a refresh that keeps failing costs one try per threshold, not one per tick.
    async fn refresh_after_counting(&self, marked: u64, worked_off: bool) {
        let counted = &self.ctx.counted_since_refresh;
        let since = counted.fetch_add(marked, Ordering::Relaxed) + marked;
        if !worked_off || since < REFRESH_AFTER_COUNTED {
            return;
        }
        counted.store(0, Ordering::Relaxed);
        for refresh in [sql::ANALYZE_ROUNDS, sql::VACUUM_RESPONSE_TIME_COUNTS] {
            let _ = self.execute(Statement::new(refresh)).await;
        }
    }
}

impl<D: Dialect> SqlStore<D> {
    /// The counts `query` selects: its rows, or on SQLite one JSON value of them ([`sql::counts_as_json`]).
    async fn read_counts<const N: usize>(
        &self,
        query: &'static str,
        params: [Param; N],
    ) -> StoreResult<Vec<CountRow>> {
        match D::BACKEND {
            Backend::Postgres => self.all(Statement::new(query).bind_all(params)).await,
            Backend::Sqlite => {
                let statement = Statement::new(sql::counts_as_json(query)).bind_all(params);
                let (json,): (String,) = self.one(statement).await?;
                serde_json::from_str(&json)
                    .map_err(|error| StoreError::Corrupt(format!("response-time counts: {error}")))
            }
        }
    }
}

#[async_trait::async_trait]
impl<D: Dialect> StatsStore for SqlStore<D> {
    fn stats_now(&self) -> DateTime<Utc> {
        self.clock_now()
    }

    async fn count_ended_questions(&self, limit: u32) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let periods_sql = match D::BACKEND {
            Backend::Sqlite => sql::SELECT_PERIODS,
            Backend::Postgres => sql::SELECT_PERIODS_FOR_UPDATE,
        };
        let periods = tx
            .all::<(i64, Option<i64>)>(Statement::new(periods_sql))
            .await?;
        let marked = match D::BACKEND {
            // SQLite has no UPDATE in a WITH: marked, added, then marked counted.
            Backend::Sqlite => {
                let marked = tx
                    .execute(Statement::new(sql::MARK_ENDED_ROUNDS.as_str()).bind(i64::from(limit)))
                    .await?;
                if marked > 0 {
                    for add in sql::ADD_MARKED_COUNTS.iter() {
                        tx.execute(Statement::new(add.as_str())).await?;
                    }
                    tx.execute(Statement::new(sql::MARKED_ROUNDS_COUNTED))
                        .await?;
                }
                marked
            }
            Backend::Postgres => {
                let (marked,): (i64,) = tx
                    .one(
                        Statement::new(sql::COUNT_ENDED_ROUNDS_AT_ONCE.as_str())
                            .bind(i64::from(limit)),
                    )
                    .await?;
                u64::try_from(marked).unwrap_or(0)
            }
        };
        let worked_off = marked < u64::from(limit);
        // A new day moves every period's first day: their sums are made again from the kept counts, once the
        // backlog is counted (a backlog's batches would each pay for it). Until then the page corrects them.
        // Only forward: an instance whose clock is behind another's leaves the sums where the other put them
        // (the page corrects that too), rather than the two making them again on every tick around midnight.
        let today = day_of(self.clock_now().timestamp_millis());
        if worked_off
            && periods.iter().any(|(period, first_day)| {
                first_day.is_none_or(|first_day| first_day < today - period)
            })
        {
            tx.execute(Statement::new(sql::MOVE_PERIODS).bind(today))
                .await?;
            tx.execute(Statement::new(sql::CLEAR_PERIOD_COUNTS)).await?;
            tx.execute(Statement::new(sql::SUM_PERIOD_COUNTS)).await?;
        }
        tx.commit().await?;
        if D::BACKEND == Backend::Postgres {
            self.refresh_after_counting(marked, worked_off).await;
        }
        Ok(marked)
    }

    async fn response_time_counts(&self, days: u32, since_day: i64) -> StoreResult<Vec<DayCount>> {
        let kept = self
            .read_counts(
                sql::SELECT_RESPONSE_TIME_COUNTS,
                [since_day.into(), i64::from(days).into()],
            )
            .await?;
        let uncounted = self
            .read_counts(
                sql::UNCOUNTED_COUNTS.as_str(),
                [day_start_ms(since_day).into()],
            )
            .await?;
        Ok(kept
            .into_iter()
            .chain(uncounted)
            .filter_map(day_count)
            .collect())
    }
}
