//! The webhook outbox: queued in the transaction of the change it announces, delivered at least once.

use chrono::{DateTime, Duration, Utc};

use super::{SqlStore, WriteTx};
use crate::{
    OutboxStore, StoreResult,
    dialect::{Dialect, Param, Statement},
    domain::webhook::{
        AttemptOutcome, MAX_ATTEMPTS, QueuedDelivery, WebhookDelivery, WebhookEndpoint,
        WebhookEvent, WebhookFormat, retry_delay,
    },
    records::{OutboxRow, to_ms},
    sql,
};

/// The values of one queued delivery's outbox row, in [`sql::insert_outbox`] order.
pub(super) fn queued_params(
    delivery: &QueuedDelivery,
    now: DateTime<Utc>,
) -> [Param; sql::OUTBOX_COLUMNS] {
    [
        uuid::Uuid::now_v7().to_string().into(),
        delivery.endpoint.as_str().into(),
        delivery.format.as_str().into(),
        delivery.event.as_str().into(),
        delivery.dedupe_key.as_str().into(),
        delivery.payload.to_string().into(),
        "pending".into(),
        0_i64.into(),
        to_ms(delivery.not_before.max(now)).into(),
        to_ms(now).into(),
    ]
}

/// The values of one outbox row, in [`sql::insert_outbox`] order.
fn outbox_params(
    event: &WebhookEvent,
    endpoint: &WebhookEndpoint,
    now: DateTime<Utc>,
) -> [Param; sql::OUTBOX_COLUMNS] {
    [
        uuid::Uuid::now_v7().to_string().into(),
        endpoint.url.as_str().into(),
        endpoint.format.as_str().into(),
        event.event.into(),
        format!("{}|{}", event.key, endpoint.url).into(),
        event.payload(endpoint.format, now).to_string().into(),
        "pending".into(),
        0_i64.into(),
        to_ms(now).into(),
        to_ms(now).into(),
    ]
}

impl<D: Dialect> SqlStore<D> {
    /// Whether a push fan-out could reach anyone: push is always on, but a fan-out is queued only while
    /// some browser could receive it.
    async fn push_reachable(&self, tx: &mut WriteTx<D>) -> StoreResult<bool> {
        let endpoints = &self.ctx.options.webhooks;
        if !endpoints
            .iter()
            .any(|endpoint| endpoint.format == WebhookFormat::Push)
        {
            return Ok(false);
        }
        if let Some(any) = self.ctx.push_browsers.known() {
            return Ok(any);
        }
        let any = tx
            .optional::<(i64,)>(Statement::new(sql::ANY_PUSH_SUBSCRIPTION))
            .await?
            .is_some();
        self.ctx.push_browsers.read_again(any);
        Ok(any)
    }

    /// Whether anything announced now could reach a receiver: what a sweep checks before it builds the
    /// events of many rounds.
    pub(super) async fn may_announce(&self, tx: &mut WriteTx<D>) -> StoreResult<bool> {
        let endpoints = &self.ctx.options.webhooks;
        if endpoints
            .iter()
            .any(|endpoint| endpoint.format != WebhookFormat::Push)
        {
            return Ok(true);
        }
        self.push_reachable(tx).await
    }

    /// Whether any endpoint is sent `event`: what a transition checks before it builds an event.
    pub(super) fn announced(&self, event: &str) -> bool {
        self.ctx
            .options
            .webhooks
            .iter()
            .any(|endpoint| endpoint.format.announces(event))
    }

    /// Queues `events` for every configured endpoint, in the caller's transaction.
    pub(super) async fn enqueue(
        &self,
        tx: &mut WriteTx<D>,
        events: &[WebhookEvent],
        now: DateTime<Utc>,
    ) -> StoreResult<()> {
        let endpoints = &self.ctx.options.webhooks;
        if endpoints.is_empty() || events.is_empty() {
            return Ok(());
        }
        // Push is always on, but a fan-out is queued only while some browser could receive it.
        let push = if endpoints
            .iter()
            .any(|endpoint| endpoint.format == WebhookFormat::Push)
        {
            match self.ctx.push_browsers.known() {
                Some(any) => any,
                None => {
                    let any = tx
                        .optional::<(i64,)>(Statement::new(sql::ANY_PUSH_SUBSCRIPTION))
                        .await?
                        .is_some();
                    self.ctx.push_browsers.read_again(any);
                    any
                }
            }
        } else {
            false
        };
        let rows: Vec<(&WebhookEvent, &WebhookEndpoint)> = events
            .iter()
            .flat_map(|event| {
                endpoints
                    .iter()
                    .filter(|endpoint| endpoint.format.announces(event.event))
                    .filter(move |endpoint| push || endpoint.format != WebhookFormat::Push)
                    .map(move |endpoint| (event, endpoint))
            })
            .collect();
        for chunk in rows.chunks(sql::BATCH) {
            let statement = Statement::new(sql::insert_outbox(chunk.len())).bind_all(
                chunk
                    .iter()
                    .flat_map(|(event, endpoint)| outbox_params(event, endpoint, now)),
            );
            tx.execute(statement).await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl<D: Dialect> OutboxStore for SqlStore<D> {
    async fn enqueue_webhooks(&self, events: &[WebhookEvent]) -> StoreResult<()> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        self.enqueue(&mut tx, events, now).await?;
        tx.commit().await
    }

    async fn enqueue_deliveries(&self, deliveries: &[QueuedDelivery]) -> StoreResult<()> {
        let now = self.clock_now();
        for chunk in deliveries.chunks(sql::BATCH) {
            let statement = Statement::new(sql::insert_outbox(chunk.len())).bind_all(
                chunk
                    .iter()
                    .flat_map(|delivery| queued_params(delivery, now)),
            );
            self.execute(statement).await?;
        }
        Ok(())
    }

    async fn claim_webhook_deliveries(
        &self,
        limit: u32,
        lock: Duration,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let rows = tx
            .all::<OutboxRow>(
                Statement::new(sql::OUTBOX_CLAIM)
                    .bind(to_ms(now))
                    .bind(to_ms(now + lock))
                    .bind(i64::from(limit)),
            )
            .await?;
        tx.commit().await?;
        rows.into_iter().map(OutboxRow::into_delivery).collect()
    }

    async fn finish_webhook_delivery(
        &self,
        delivery: &WebhookDelivery,
        outcome: AttemptOutcome,
    ) -> StoreResult<()> {
        let now = self.clock_now();
        let statement = match outcome {
            AttemptOutcome::Delivered { status } => Statement::new(sql::OUTBOX_DELIVERED)
                .bind(&delivery.id)
                .bind(to_ms(now))
                .bind(i64::from(status)),
            AttemptOutcome::Failed { status, error } => {
                let given_up = delivery.attempts >= MAX_ATTEMPTS;
                Statement::new(sql::OUTBOX_RETRY)
                    .bind(&delivery.id)
                    .bind(if given_up { "failed" } else { "pending" })
                    .bind(to_ms(now + retry_delay(delivery.attempts)))
                    .bind(status.map(i64::from))
                    .bind(error.chars().take(500).collect::<String>())
            }
        };
        self.execute(statement).await?;
        Ok(())
    }

    async fn list_webhook_deliveries(&self, limit: u32) -> StoreResult<Vec<WebhookDelivery>> {
        self.all::<OutboxRow>(Statement::new(sql::OUTBOX_LIST).bind(i64::from(limit)))
            .await?
            .into_iter()
            .map(OutboxRow::into_delivery)
            .collect()
    }
}
