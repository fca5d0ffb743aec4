//! Sealing the record: the entries written with each change are chained into the audit log, in order, every
//! few seconds (docs/audit.md).

use crate::AppState;

/// One tick; returns how many entries were sealed.
pub async fn run(state: AppState) -> u64 {
    match state.store.seal_audit().await {
        Ok(sealed) => sealed,
        Err(error) => {
            tracing::warn!(%error, "seal audit: tick failed; the entries wait for the next tick");
            0
        }
    }
}
