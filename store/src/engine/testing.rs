//! The testing extension's reads, beside the engine's private helpers they use.

use super::SqlStore;
use crate::{
    StoreResult,
    dialect::{Dialect, Statement},
    domain::{ids::SessionId, round::Round},
    records::RoundRow,
    sql,
    testing::StoreTesting,
};

#[async_trait::async_trait]
impl<D: Dialect> StoreTesting for SqlStore<D> {
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
}
