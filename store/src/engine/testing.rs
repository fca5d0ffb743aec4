//! The testing extension's reads, beside the engine's private helpers they use.

use sqlx::Connection;

use super::SqlStore;
use crate::{
    Backend, StoreResult,
    dialect::{Dialect, Statement},
    domain::{ids::SessionId, round::Round},
    records::RoundRow,
    sql,
    testing::StoreTesting,
};

#[async_trait::async_trait]
impl<D: Dialect> StoreTesting for SqlStore<D>
where
    D::Db: sqlx::database::HasStatementCache,
{
    async fn applied_migrations(&self) -> StoreResult<i64> {
        let (count,): (i64,) = self
            .one(Statement::new(
                "SELECT COUNT(*) FROM _sqlx_migrations WHERE success",
            ))
            .await?;
        Ok(count)
    }

    async fn oldest_open_rounds(&self, sessions: &[SessionId]) -> StoreResult<Vec<Round>> {
        let mut rounds = Vec::new();
        for chunk in sessions.chunks(sql::BATCH) {
            let statement = Statement::new(sql::select_oldest_open(chunk.len()))
                .bind_all(chunk.iter().map(|id| id.to_string().into()));
            rounds.extend(self.seen_all(self.all::<RoundRow>(statement).await?)?);
        }
        Ok(rounds)
    }

    async fn kept_prepared_statements(&self) -> StoreResult<usize> {
        // Every open connection is taken (and held, so none is counted twice); on PostgreSQL the writer is the
        // same pool.
        let mut pools = vec![&self.pool];
        if D::BACKEND == Backend::Sqlite {
            pools.push(&self.writer);
        }
        let mut kept = 0;
        for pool in pools {
            let mut held = Vec::new();
            for _ in 0..pool.size() {
                let connection = pool.acquire().await?;
                kept += connection.cached_statements_size();
                held.push(connection);
            }
        }
        Ok(kept)
    }
}
