//! The admins' pages' data: response times and the webhook delivery log.

use super::*;

impl PageData {
    /// Response times over the last `days` days (7, 30 or 90), for admins.
    pub async fn response_times(
        &self,
        days: u32,
    ) -> StoreResult<crate::domain::stats::ResponseTimes> {
        self.store.response_times(days).await
    }

    /// The most recent webhook deliveries, newest first.
    pub async fn webhook_deliveries(&self, limit: u32) -> StoreResult<Vec<WebhookDelivery>> {
        self.store.list_webhook_deliveries(limit).await
    }
}
