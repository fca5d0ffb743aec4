//! Purge: delete resolved and failed rounds older than the retention window (default 30 days), and expired
//! browser sessions.

use crate::AppState;

/// One tick; returns how many rounds were deleted.
pub async fn run(state: AppState) -> u64 {
    match state.store.purge_web_sessions().await {
        Ok(0) => {}
        Ok(deleted) => tracing::info!(deleted, "purge: expired browser sessions deleted"),
        Err(error) => {
            tracing::warn!(%error, "purge: browser sessions not purged; the next tick retries");
        }
    }
    let before = state.store.now() - state.config.retention;
    match state.store.purge_terminal_rounds(before).await {
        Ok(deleted) => {
            if deleted > 0 {
                tracing::info!(deleted, "purge: old finished rounds deleted");
            }
            deleted
        }
        Err(error) => {
            tracing::warn!(%error, "purge: tick failed; the next tick retries");
            0
        }
    }
}
