//! Escalation: questions nobody answered climb their session's ladder (the next group is told, and may answer),
//! and at its end, when the session says so, they end "nobody available" (docs/teams.md#escalation).

use crate::AppState;

/// One tick; returns how many questions climbed a step and how many ended.
pub async fn run(state: AppState) -> (usize, usize) {
    match state.store.escalate().await {
        Ok(done) => {
            // The pages show who may answer now, and what was lost.
            for (round, step) in &done.climbed {
                tracing::info!(round = %round.round_id, step = step + 1, "escalate: a question climbed its ladder");
                crate::announce::round_changed(&state, round);
            }
            for round in &done.ended {
                tracing::info!(round = %round.round_id, "escalate: nobody was available");
                crate::announce::round_changed(&state, round);
                crate::announce::session_changed(&state, &round.session_id);
            }
            (done.climbed.len(), done.ended.len())
        }
        Err(error) => {
            tracing::warn!(%error, "escalate: tick failed; the next tick retries");
            (0, 0)
        }
    }
}
