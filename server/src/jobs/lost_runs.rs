//! Lost runs: a run under `anteroom run` that has not reported for two minutes ended `lost` (its machine died
//! or its network went), and its waiting questions with it, so nobody answers an agent that is gone
//! (docs/runs.md).

use crate::AppState;

/// One tick; returns how many runs were found lost.
pub async fn run(state: AppState) -> usize {
    match state.store.lose_quiet_runs().await {
        Ok(lost) => {
            for (session, _questions) in &lost {
                crate::announce::session_changed(&state, session);
            }
            if !lost.is_empty() {
                tracing::info!(runs = lost.len(), "lost runs: ended, with their questions");
            }
            lost.len()
        }
        Err(error) => {
            tracing::warn!(%error, "lost runs: tick failed; the next tick retries");
            0
        }
    }
}
