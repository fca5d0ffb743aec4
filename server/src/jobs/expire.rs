//! Expire: fail every pending question past its deadline with `expired` and move its session (docs/lifecycle.md#where-expiry-happens, docs/deadlines.md).

use crate::AppState;

/// One tick. The store's observer streams `round.expired` for each round.
pub async fn run(state: AppState) -> usize {
    match state.store.expire_due_rounds().await {
        Ok(expired) => {
            if !expired.is_empty() {
                tracing::info!(
                    expired = expired.len(),
                    "expire: questions past their deadline expired"
                );
            }
            expired.len()
        }
        Err(error) => {
            tracing::warn!(%error, "expire: tick failed; the next tick retries");
            0
        }
    }
}
