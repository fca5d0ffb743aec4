//! A worker's lease on a round: claim, renew, and the delivery steps only the lease holder may take, with the
//! bounds every lease obeys.

use super::*;

impl Round {
    /// Gives `owner` a lease of `lease` length, if nobody else holds a live one.
    pub fn claim(
        &mut self,
        owner: OwnerId,
        token: LeaseToken,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Lease, ManagedInputError> {
        check_lease_length(lease)?;
        match self.status {
            RoundStatus::Resolved | RoundStatus::Failed => return Err(self.terminal_error()),
            RoundStatus::DeliveryStarted | RoundStatus::Delivered
                if !self.lease.as_ref().is_some_and(|l| l.is_live(now)) =>
            {
                return Err(ManagedInputError::recovery(format!(
                    "Round {} was mid-delivery when its worker's lease ran out; it cannot be reclaimed safely.",
                    self.round_id
                )));
            }
            _ => {}
        }
        if let Some(current) = self.lease.as_ref().filter(|l| l.is_live(now)) {
            return Err(ManagedInputError::conflict(format!(
                "Round {} is leased to {} until {}; wait for the lease to end.",
                self.round_id,
                current.owner_id,
                wire_time(current.expires_at)
            )));
        }
        let granted = Lease {
            owner_id: owner,
            lease_token: token,
            expires_at: now + lease,
        };
        self.lease = Some(granted.clone());
        self.touch(now);
        Ok(granted)
    }

    /// Extends the caller's live lease.
    pub fn renew(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Lease, ManagedInputError> {
        check_lease_length(lease)?;
        self.check_worker(owner, token, now)?;
        let renewed = Lease {
            owner_id: owner.clone(),
            lease_token: token.clone(),
            expires_at: now + lease,
        };
        self.lease = Some(renewed.clone());
        self.touch(now);
        Ok(renewed)
    }

    /// `response_validated -> delivery_started`, by the lease holder.
    pub fn start_delivery(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        self.require_status(RoundStatus::ResponseValidated, "start delivery")?;
        self.status = RoundStatus::DeliveryStarted;
        self.delivery_attempts += 1;
        self.touch(now);
        Ok(())
    }

    /// `delivery_started -> delivered`, by the lease holder.
    pub fn mark_delivered(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        self.require_status(RoundStatus::DeliveryStarted, "mark it delivered")?;
        self.status = RoundStatus::Delivered;
        self.delivered_at = Some(now);
        self.touch(now);
        Ok(())
    }

    /// `delivered -> resolved`, by the lease holder.
    pub fn resolve(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        self.require_status(RoundStatus::Delivered, "resolve it")?;
        self.status = RoundStatus::Resolved;
        self.resolved_at = Some(now);
        self.lease = None;
        self.touch(now);
        Ok(())
    }

    /// Any non-terminal state `-> failed`, by the lease holder, with the worker's code.
    pub fn fail(
        &mut self,
        owner: &OwnerId,
        token: &LeaseToken,
        code: FailureCode,
        message: String,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        self.check_worker(owner, token, now)?;
        if matches!(
            code,
            FailureCode::Expired
                | FailureCode::RecoveryUnavailable
                | FailureCode::Undelivered
                | FailureCode::Revoked
                | FailureCode::NobodyAvailable
                | FailureCode::AgentEnded
        ) {
            return Err(ManagedInputError::validation(format!(
                "The failure code {:?} is reserved for Anteroom itself.",
                code.as_str()
            )));
        }
        if code.as_str().is_empty() || code.as_str().len() > 64 {
            return Err(ManagedInputError::validation(
                "A failure code must be 1 to 64 characters.",
            ));
        }
        self.fail_with(code, message.chars().take(2000).collect(), now);
        Ok(())
    }

    /// A worker vanished mid-delivery: the round fails `recovery_unavailable` and never becomes pending again.
    pub fn fail_recovery(&mut self, now: DateTime<Utc>) -> Result<(), ManagedInputError> {
        if self.status.is_terminal() {
            return Err(self.terminal_error());
        }
        if !matches!(
            self.status,
            RoundStatus::DeliveryStarted | RoundStatus::Delivered
        ) {
            return Err(ManagedInputError::state(format!(
                "Round {} is {}: only a round whose delivery had started needs recovery.",
                self.round_id,
                self.status.as_str()
            )));
        }
        if let Some(lease) = self.lease.as_ref().filter(|l| l.is_live(now)) {
            return Err(ManagedInputError::conflict(format!(
                "Round {} is still leased to {} until {}; its worker is alive.",
                self.round_id,
                lease.owner_id,
                wire_time(lease.expires_at)
            )));
        }
        self.fail_with(
            FailureCode::RecoveryUnavailable,
            RECOVERY_MESSAGE.to_owned(),
            now,
        );
        Ok(())
    }

    fn check_worker(
        &self,
        owner: &OwnerId,
        token: &LeaseToken,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        if self.status.is_terminal() {
            return Err(self.terminal_error());
        }
        let Some(lease) = &self.lease else {
            return Err(ManagedInputError::conflict(format!(
                "Round {} has no lease; claim it first.",
                self.round_id
            )));
        };
        if &lease.owner_id != owner {
            return Err(ManagedInputError::conflict(format!(
                "Round {} is leased to another worker ({}); this worker was replaced.",
                self.round_id, lease.owner_id
            )));
        }
        if &lease.lease_token != token {
            return Err(ManagedInputError::conflict(format!(
                "The lease token for round {} is stale; claim the round again.",
                self.round_id
            )));
        }
        if !lease.is_live(now) {
            return Err(ManagedInputError::conflict(format!(
                "The lease on round {} expired at {}; claim the round again.",
                self.round_id,
                wire_time(lease.expires_at)
            )));
        }
        Ok(())
    }

    fn require_status(&self, wanted: RoundStatus, doing: &str) -> Result<(), ManagedInputError> {
        if self.status == wanted {
            Ok(())
        } else {
            Err(ManagedInputError::state(format!(
                "Cannot {doing}: round {} is {}, not {}.",
                self.round_id,
                self.status.as_str(),
                wanted.as_str()
            )))
        }
    }

    fn terminal_error(&self) -> ManagedInputError {
        if self
            .failure
            .as_ref()
            .is_some_and(|f| f.code == FailureCode::RecoveryUnavailable)
        {
            return self.failed_error();
        }
        ManagedInputError::state(format!(
            "Round {} is {} and can no longer change.",
            self.round_id,
            self.status.as_str()
        ))
    }
}

/// The one home of the lease bounds: a worker's lease lasts 1 s to 24 h, 60 s when it names none.
pub const LEASE_DEFAULT: Duration = Duration::seconds(60);
const LEASE_MIN: Duration = Duration::seconds(1);
const LEASE_MAX: Duration = Duration::hours(24);

/// A lease of `seconds` (the default when absent), or why not.
pub fn lease_length(seconds: Option<i64>) -> Result<Duration, ManagedInputError> {
    let lease = seconds.map_or(LEASE_DEFAULT, Duration::seconds);
    check_lease_length(lease)?;
    Ok(lease)
}

fn check_lease_length(lease: Duration) -> Result<(), ManagedInputError> {
    if lease < LEASE_MIN || lease > LEASE_MAX {
        return Err(ManagedInputError::validation(format!(
            "`lease_seconds` must be between {} and {}.",
            LEASE_MIN.num_seconds(),
            LEASE_MAX.num_seconds()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::Duration as Span;

    use super::super::fixtures::{accept_all, asked, decline, key, round};
    use super::*;

    fn owner(name: &str) -> OwnerId {
        OwnerId::parse(name).expect("owner")
    }

    #[test]
    fn one_lease_at_a_time_and_only_its_holder_delivers() {
        let mut round = round(false);
        let now = asked();
        let lease = round
            .claim(
                owner("w1"),
                LeaseToken::from_secret("t1"),
                Span::seconds(60),
                now,
            )
            .expect("claimed");
        let second = round.claim(
            owner("w2"),
            LeaseToken::from_secret("t2"),
            Span::seconds(60),
            now,
        );
        assert_eq!(second.map_err(|e| e.code()), Err("managed_input_conflict"));
        let early = round.start_delivery(&owner("w1"), &lease.lease_token, now);
        assert_eq!(
            early.map_err(|e| e.code()),
            Err("managed_input_state"),
            "nothing to deliver yet"
        );
        round
            .submit(decline(), key("k1"), None, now, &accept_all)
            .expect("answered");
        let stranger = round.start_delivery(&owner("w2"), &lease.lease_token, now);
        assert_eq!(
            stranger.map_err(|e| e.code()),
            Err("managed_input_conflict")
        );
        round
            .start_delivery(&owner("w1"), &lease.lease_token, now)
            .expect("started");
        round
            .mark_delivered(&owner("w1"), &lease.lease_token, now)
            .expect("delivered");
        round
            .resolve(&owner("w1"), &lease.lease_token, now)
            .expect("resolved");
        assert!(round.status.is_terminal());
    }

    #[test]
    fn leases_last_one_second_to_a_day_and_a_minute_by_default() {
        assert_eq!(lease_length(None), Ok(LEASE_DEFAULT));
        assert_eq!(lease_length(Some(1)), Ok(Span::seconds(1)));
        assert_eq!(lease_length(Some(86_400)), Ok(Span::hours(24)));
        for bad in [0, -5, 86_401] {
            assert!(lease_length(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn codes_anteroom_reserves_cannot_be_chosen_by_a_worker() {
        let mut round = round(false);
        let lease = round
            .claim(
                owner("w1"),
                LeaseToken::from_secret("t1"),
                Span::seconds(60),
                asked(),
            )
            .expect("claimed");
        for reserved in [
            FailureCode::Expired,
            FailureCode::Undelivered,
            FailureCode::Revoked,
            FailureCode::NobodyAvailable,
        ] {
            let refused = round.fail(
                &owner("w1"),
                &lease.lease_token,
                reserved,
                String::new(),
                asked(),
            );
            assert_eq!(refused.map_err(|e| e.code()), Err("validation_error"));
        }
    }
}
