//! A worker's lease on a round, from claim to resolution.

use chrono::Duration;

use super::SqlStore;
use crate::{
    StoreResult, WorkerStore,
    dialect::Dialect,
    domain::{
        ids::{LeaseToken, OwnerId, RoundId},
        round::{FailureCode, Lease, Round},
    },
};

#[async_trait::async_trait]
impl<D: Dialect> WorkerStore for SqlStore<D> {
    async fn claim_round(
        &self,
        id: RoundId,
        owner: OwnerId,
        lease: Duration,
    ) -> StoreResult<Lease> {
        let token = crate::new_lease_token();
        self.mutate_round(id, move |round, now| round.claim(owner, token, lease, now))
            .await
            .map(|(_, lease)| lease)
    }

    async fn renew(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
        lease: Duration,
    ) -> StoreResult<Lease> {
        self.mutate_round(id, |round, now| round.renew(owner, token, lease, now))
            .await
            .map(|(_, lease)| lease)
    }

    async fn start_delivery(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
    ) -> StoreResult<Round> {
        self.mutate_round(id, |round, now| round.start_delivery(owner, token, now))
            .await
            .map(|(round, ())| round)
    }

    async fn mark_delivered(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
    ) -> StoreResult<Round> {
        self.mutate_round(id, |round, now| round.mark_delivered(owner, token, now))
            .await
            .map(|(round, ())| round)
    }

    async fn resolve(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
    ) -> StoreResult<Round> {
        self.mutate_round(id, |round, now| round.resolve(owner, token, now))
            .await
            .map(|(round, ())| round)
    }

    async fn fail(
        &self,
        id: RoundId,
        owner: &OwnerId,
        token: &LeaseToken,
        code: FailureCode,
        message: String,
    ) -> StoreResult<Round> {
        self.mutate_round(id, |round, now| {
            round.fail(owner, token, code, message, now)
        })
        .await
        .map(|(round, ())| round)
    }

    async fn fail_recovery(&self, id: RoundId) -> StoreResult<Round> {
        self.mutate_round(id, |round, now| round.fail_recovery(now))
            .await
            .map(|(round, ())| round)
    }
}
