//! Sweep stranded markers: a `blocked_on_elicitation` marker that outlived every active round is cleared,
//! with a `stranded` explanation on sessions left in `needs_input` (docs/lifecycle.md#stranded-markers).

use crate::AppState;

/// One tick.
pub async fn run(state: AppState) -> usize {
    match state.store.sweep_stranded().await {
        Ok(swept) => {
            for session in &swept {
                crate::announce::session_changed(&state, &session.id);
            }
            if !swept.is_empty() {
                tracing::info!(sessions = swept.len(), "sweep: stranded markers cleared");
            }
            swept.len()
        }
        Err(error) => {
            tracing::warn!(%error, "sweep: tick failed; the next tick retries");
            0
        }
    }
}
