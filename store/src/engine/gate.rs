//! The gate, one row shared by every instance.

use super::SqlStore;
use crate::{
    GateStore, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        gate::{GateChange, GateState},
        webhook::WebhookEvent,
    },
    records::{from_ms, to_ms},
    sql,
};

type GateRow = (bool, i64, Option<i64>);

fn gate_from_row((healthy, since, checked): GateRow) -> StoreResult<GateState> {
    Ok(GateState::from_parts(
        healthy,
        from_ms(since)?,
        checked.map(from_ms).transpose()?,
    ))
}

#[async_trait::async_trait]
impl<D: Dialect> GateStore for SqlStore<D> {
    async fn gate_state(&self) -> StoreResult<GateState> {
        let now = self.clock_now();
        self.execute(Statement::new(sql::GATE_INIT).bind(true).bind(to_ms(now)))
            .await?;
        gate_from_row(self.one::<GateRow>(Statement::new(sql::GATE_READ)).await?)
    }

    async fn record_gate_probe(
        &self,
        healthy: bool,
        probe_url: &str,
    ) -> StoreResult<(GateChange, GateState)> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        tx.execute(Statement::new(sql::GATE_INIT).bind(true).bind(to_ms(now)))
            .await?;
        let mut gate = gate_from_row(
            tx.one::<GateRow>(Statement::new(Self::locked(sql::GATE_READ)))
                .await?,
        )?;
        let change = gate.record(healthy, now);
        tx.execute(
            Statement::new(sql::GATE_WRITE)
                .bind(gate.healthy)
                .bind(to_ms(gate.since))
                .bind(gate.last_checked.map(to_ms)),
        )
        .await?;
        if matches!(
            change,
            GateChange::IncidentOpened | GateChange::IncidentClosed
        ) {
            let incident = WebhookEvent::gate_incident(
                change == GateChange::IncidentOpened,
                gate.since,
                probe_url,
            );
            self.enqueue(&mut tx, &[incident], now).await?;
        }
        tx.commit().await?;
        Ok((change, gate))
    }
}
