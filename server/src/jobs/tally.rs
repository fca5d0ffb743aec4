//! Tally: add the questions that ended since the last tick to the response-time counts, so the page reads
//! counts per day instead of every question of its period (docs/teams.md#response-times).

use anteroom_store::COUNT_BATCH;

use crate::AppState;

/// The most batches one tick counts: a backlog (the first start after an upgrade, a year of history) is worked
/// off over several ticks rather than holding the writer for minutes.
const BATCHES_PER_TICK: u32 = 20;

/// One tick; returns how many questions were counted.
pub async fn run(state: AppState) -> u64 {
    let mut counted = 0;
    for _ in 0..BATCHES_PER_TICK {
        match state.store.count_ended_questions(COUNT_BATCH).await {
            Ok(batch) => {
                counted += batch;
                if batch < u64::from(COUNT_BATCH) {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "tally: tick failed; the questions are counted next tick");
                break;
            }
        }
    }
    counted
}
