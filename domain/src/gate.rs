//! The gate: whether producers can reach Anteroom (docs/operations.md#the-gate-probe). Any HTTP answer to the probe is healthy; only a
//! transport failure is a broken gate. An outage opens one incident and recovery closes it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const HEALTHY_PROMPT: &str = "Human approvals go through Anteroom and its gate is working: a redacted or declined \
answer is the gate's real answer; respect it.";
pub const BROKEN_PROMPT: &str = "The Anteroom approval gate is BROKEN: a redacted or declined answer means nothing \
about policy. Report the failure to a person; do not route around it.";

/// The gate's last known state, and the sentence orchestrators put in their agents' system prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GateState {
    pub healthy: bool,
    #[serde(with = "super::wire::time")]
    pub since: DateTime<Utc>,
    #[serde(with = "super::wire::time::option")]
    pub last_checked: Option<DateTime<Utc>>,
    pub prompt_line: String,
}

/// What one probe result did to the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GateChange {
    StillHealthy,
    /// The first failure of an outage: one incident opens.
    IncidentOpened,
    /// Another failing tick of the same outage: warn, but page nobody again.
    StillBroken,
    /// The first success after an outage: the incident closes.
    IncidentClosed,
}

impl GateState {
    /// A gate nobody has probed yet: healthy since `at`.
    pub fn unprobed(at: DateTime<Utc>) -> Self {
        Self::from_parts(true, at, None)
    }

    pub fn from_parts(
        healthy: bool,
        since: DateTime<Utc>,
        last_checked: Option<DateTime<Utc>>,
    ) -> Self {
        Self {
            healthy,
            since,
            last_checked,
            prompt_line: if healthy {
                HEALTHY_PROMPT
            } else {
                BROKEN_PROMPT
            }
            .to_owned(),
        }
    }

    /// Records a probe result taken at `now`.
    pub fn record(&mut self, healthy: bool, now: DateTime<Utc>) -> GateChange {
        let change = match (self.healthy, healthy) {
            (true, true) => GateChange::StillHealthy,
            (true, false) => GateChange::IncidentOpened,
            (false, false) => GateChange::StillBroken,
            (false, true) => GateChange::IncidentClosed,
        };
        let since = if self.healthy == healthy {
            self.since
        } else {
            now
        };
        *self = Self::from_parts(healthy, since, Some(now));
        change
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_opens_one_incident_and_recovery_closes_it() {
        let at = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0).expect("time");
        let mut gate = GateState::unprobed(at(0));
        assert_eq!(gate.record(true, at(0)), GateChange::StillHealthy);
        assert_eq!(gate.record(false, at(300)), GateChange::IncidentOpened);
        assert_eq!(gate.prompt_line, BROKEN_PROMPT);
        assert_eq!(gate.record(false, at(600)), GateChange::StillBroken);
        assert_eq!(
            gate.since,
            at(300),
            "the outage started at its first failure"
        );
        assert_eq!(gate.record(true, at(900)), GateChange::IncidentClosed);
        assert!(gate.healthy);
        assert_eq!((gate.since, gate.last_checked), (at(900), Some(at(900))));
        assert_eq!(gate.prompt_line, HEALTHY_PROMPT);
    }
}
