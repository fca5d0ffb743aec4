//! Recover leases: a round whose worker vanished mid-delivery fails `recovery_unavailable` and its session
//! `failed` (docs/lifecycle.md#recovery); it never becomes pending again.

use crate::AppState;

/// One tick.
pub async fn run(state: AppState) -> usize {
    match state.store.recover_leases().await {
        Ok(failed) => {
            for round in &failed {
                crate::announce::round_changed(&state, round);
            }
            if !failed.is_empty() {
                tracing::warn!(
                    rounds = failed.len(),
                    "recover: rounds whose worker vanished mid-delivery failed"
                );
            }
            failed.len()
        }
        Err(error) => {
            tracing::warn!(%error, "recover: tick failed; the next tick retries");
            0
        }
    }
}
