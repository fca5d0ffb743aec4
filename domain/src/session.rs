//! Sessions: one agent run a person may have to attend to, and how rounds move it (docs/lifecycle.md#sessions).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    ManagedInputError,
    ids::{RequestId, SessionId},
    responders::{EscalationStep, Responder, check_ladder, check_lists},
};

/// Where an agent run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Running,
    NeedsInput,
    Idle,
    Finished,
    Failed,
    Cancelled,
}

text_names!(SessionStatus { Running => "running", NeedsInput => "needs_input", Idle => "idle", Finished => "finished", Failed => "failed", Cancelled => "cancelled" });

impl SessionStatus {
    /// `finished`, `failed` and `cancelled` keep their status when a question expires.
    pub fn is_ended(self) -> bool {
        matches!(self, Self::Finished | Self::Failed | Self::Cancelled)
    }
}

/// Why a round trip ended with nobody deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LostReason {
    /// The clock ran out.
    Expired,
    /// The `blocked_on_elicitation` marker outlived every active round.
    Stranded,
    /// The asker's own deadline passed with nobody answering: it stopped waiting.
    AskerStopped,
    /// The session's token was revoked while the question waited.
    Revoked,
    /// Someone answered, but the asker stopped waiting before it picked the answer up.
    Undelivered,
    /// The escalation ladder ran out with nobody answering.
    NobodyAvailable,
}

text_names!(LostReason { Expired => "expired", Stranded => "stranded", AskerStopped => "asker_stopped", Revoked => "revoked", Undelivered => "undelivered", NobodyAvailable => "nobody_available" });

/// The marker that makes the session page explain what was lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LostElicitation {
    pub reason: LostReason,
    #[serde(with = "super::wire::time")]
    pub at: DateTime<Utc>,
    pub request_id: RequestId,
    /// `"<tool_name>: <message>"`, at most 300 characters; producer text, always rendered escaped.
    pub summary: String,
    /// What exactly was lost, in a sentence ("rita answered at 12:03:57 UTC, but …"), where there is more to
    /// say than the reason.
    #[serde(default)]
    pub detail: Option<String>,
}

/// A session as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Session {
    pub id: SessionId,
    pub title: String,
    pub agent: Option<String>,
    pub status: SessionStatus,
    pub blocked_on_elicitation: bool,
    pub lost_elicitation: Option<LostElicitation>,
    #[serde(with = "super::wire::time")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "super::wire::time")]
    pub updated_at: DateTime<Utc>,
}

/// What registering a session asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    pub id: SessionId,
    pub title: Option<String>,
    pub agent: Option<String>,
}

impl NewSession {
    pub fn validate(&self) -> Result<(), ManagedInputError> {
        if self.title.as_ref().is_some_and(|t| t.chars().count() > 200) {
            return Err(ManagedInputError::validation(
                "The session title is longer than 200 characters.",
            ));
        }
        if self.agent.as_ref().is_some_and(|a| a.chars().count() > 100) {
            return Err(ManagedInputError::validation(
                "The agent name is longer than 100 characters.",
            ));
        }
        Ok(())
    }
}

/// What an admin set for one session (docs/api.md#session-settings); a session nobody configured has the
/// defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// The Slack channel its questions are posted to, instead of `ANTEROOM_SLACK_CHANNEL`: an ID (`C0123ABCD`)
    /// or a name (`deploys`, `#deploys`). `null`: the default channel.
    #[serde(default)]
    #[schema(pattern = "^#?[A-Za-z0-9._-]{1,80}$")]
    pub slack_channel: Option<String>,
    /// Who answers this session's questions (`user:NAME`, `group:NAME`, `key:NAME`); empty: everyone whose
    /// role answers (docs/teams.md).
    #[serde(default)]
    #[schema(value_type = Vec<String>, example = json!(["group:platform-oncall", "user:rita"]))]
    pub responders: Vec<Responder>,
    /// Per MCP server: who answers that server's questions instead of `responders`.
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, Vec<String>>)]
    pub server_responders: BTreeMap<String, Vec<Responder>>,
    /// Who is told, and may answer too, once a question waited so long (docs/teams.md#escalation).
    #[serde(default)]
    pub escalation: Vec<EscalationStep>,
    /// Minutes after which a question nobody answered ends `nobody_available` (its asker reads `expired`
    /// with `_meta["anteroom/failure"] = "nobody_available"`), before its own deadline; after the last step.
    #[serde(default)]
    pub nobody_available_after_minutes: Option<u32>,
}

/// The longest Slack channel name Slack allows.
const SLACK_CHANNEL_CHARS: usize = 80;

impl SessionSettings {
    /// Who answers a question from `server` here: that server's list if it has one, else the session's.
    pub fn responders_for(&self, server: Option<&str>) -> &[Responder] {
        server
            .and_then(|server| self.server_responders.get(server))
            .unwrap_or(&self.responders)
    }

    /// Refuses a channel that is neither a Slack ID nor a channel name, so nothing else reaches Slack's API.
    pub fn validate(&self) -> Result<(), ManagedInputError> {
        check_lists(&self.responders, &self.server_responders)?;
        check_ladder(&self.escalation, self.nobody_available_after_minutes)?;
        let Some(channel) = &self.slack_channel else {
            return Ok(());
        };
        let name = channel.strip_prefix('#').unwrap_or(channel);
        let shaped = !name.is_empty()
            && name.chars().count() <= SLACK_CHANNEL_CHARS
            && name.chars().all(|c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_uppercase()
                    || c.is_ascii_digit()
                    || "-_.".contains(c)
            });
        if shaped {
            Ok(())
        } else {
            Err(ManagedInputError::validation(
                "slack_channel is not a Slack channel: give its ID (C0123ABCD) or its name (deploys), at most 80 \
                 letters, digits, '-', '_' or '.'.",
            ))
        }
    }
}

impl Session {
    pub fn new(new: NewSession, now: DateTime<Utc>) -> Self {
        Self {
            title: new.title.unwrap_or_else(|| new.id.to_string()),
            id: new.id,
            agent: new.agent,
            status: SessionStatus::Running,
            blocked_on_elicitation: false,
            lost_elicitation: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Whether a new question may be asked in this session.
    pub fn accepts_rounds(&self) -> Result<(), ManagedInputError> {
        match self.status {
            SessionStatus::Cancelled | SessionStatus::Failed => {
                Err(ManagedInputError::state(format!(
                    "Session {} is {}; it takes no new questions.",
                    self.id,
                    self.status.as_str()
                )))
            }
            _ => Ok(()),
        }
    }

    /// A round became active: the session needs a person.
    pub fn on_round_opened(&mut self, now: DateTime<Utc>) {
        self.status = SessionStatus::NeedsInput;
        self.blocked_on_elicitation = true;
        self.lost_elicitation = None;
        self.updated_at = now;
    }

    /// A round was answered (any action), or ended by its producer: back to running once nothing is open.
    pub fn on_round_settled(&mut self, other_active: bool, now: DateTime<Utc>) {
        self.lost_elicitation = None;
        if !other_active {
            self.blocked_on_elicitation = false;
            if self.status == SessionStatus::NeedsInput {
                self.status = SessionStatus::Running;
            }
        }
        self.updated_at = now;
    }

    /// A round ended with something lost. An expired (or revoked) question with nothing else open means the
    /// agent went on without approval: say so. An answer that never reached the agent is always said, even
    /// while other questions wait.
    pub fn on_round_lost(&mut self, other_active: bool, lost: LostElicitation) {
        if other_active && lost.reason != LostReason::Undelivered {
            return;
        }
        self.updated_at = lost.at;
        if !other_active {
            self.blocked_on_elicitation = false;
            if !self.status.is_ended() {
                self.status = SessionStatus::Running;
            }
        }
        self.lost_elicitation = Some(lost);
    }

    /// The stranded sweep: the marker outlived every active round. Returns whether anything changed.
    pub fn sweep_stranded(
        &mut self,
        has_active: bool,
        last_round: Option<(RequestId, String)>,
        now: DateTime<Utc>,
    ) -> bool {
        if !self.blocked_on_elicitation || has_active {
            return false;
        }
        self.blocked_on_elicitation = false;
        self.updated_at = now;
        // Flipping `needs_input` to running would invent a running session nobody watches; explain instead.
        if self.status == SessionStatus::NeedsInput
            && let Some((request_id, summary)) = last_round
        {
            self.lost_elicitation = Some(LostElicitation {
                reason: LostReason::Stranded,
                at: now,
                request_id,
                summary,
                detail: None,
            });
        }
        true
    }

    /// A person or orchestrator resumed the session.
    pub fn resume(&mut self, has_active: bool, now: DateTime<Utc>) {
        self.lost_elicitation = None;
        self.status = if has_active {
            SessionStatus::NeedsInput
        } else {
            SessionStatus::Running
        };
        self.blocked_on_elicitation = has_active;
        self.updated_at = now;
    }

    /// The agent run is done. Refused while a question is still open.
    pub fn finish(
        &mut self,
        open_rounds: usize,
        now: DateTime<Utc>,
    ) -> Result<(), ManagedInputError> {
        if open_rounds > 0 {
            return Err(ManagedInputError::state(format!(
                "Session {} still has {open_rounds} open question(s); answer them or cancel the session.",
                self.id
            )));
        }
        self.status = SessionStatus::Finished;
        self.blocked_on_elicitation = false;
        self.updated_at = now;
        Ok(())
    }

    /// The session is cancelled (its open rounds fail `cancelled`).
    pub fn cancel(&mut self, now: DateTime<Utc>) {
        self.status = SessionStatus::Cancelled;
        self.blocked_on_elicitation = false;
        self.updated_at = now;
    }

    /// An `anteroom run` takes the session over: it runs again, whatever it was.
    pub fn start_run(&mut self, now: DateTime<Utc>) {
        self.resume(false, now);
    }

    /// Its run ended with `status` (finished, failed or cancelled); its open questions ended with it.
    pub fn end_run(&mut self, status: SessionStatus, now: DateTime<Utc>) {
        self.status = status;
        self.blocked_on_elicitation = false;
        self.updated_at = now;
    }

    /// A worker vanished mid-delivery: the execution ends as failed.
    pub fn on_recovery_failed(&mut self, now: DateTime<Utc>) {
        self.status = SessionStatus::Failed;
        self.blocked_on_elicitation = false;
        self.updated_at = now;
    }
}

/// How a round's change moves its session (docs/lifecycle.md#how-rounds-move-a-session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEffect {
    /// A round became active.
    Opened,
    /// A round was answered, or ended by its producer, while a person could still have answered it.
    Settled,
    /// A round ended with something lost: nobody answered in time, the token was revoked, or an answer never
    /// reached the agent.
    Lost(LostElicitation),
    /// A worker vanished mid-delivery.
    RecoveryFailed,
}

impl Session {
    /// Applies `effect`; `other_active` says whether another round of this session is still waiting.
    pub fn apply(&mut self, effect: SessionEffect, other_active: bool, now: DateTime<Utc>) {
        match effect {
            SessionEffect::Opened => self.on_round_opened(now),
            SessionEffect::Settled => self.on_round_settled(other_active, now),
            SessionEffect::Lost(lost) => self.on_round_lost(other_active, lost),
            SessionEffect::RecoveryFailed => self.on_recovery_failed(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_names_a_slack_channel_or_nothing() {
        for good in [
            None,
            Some("C0123ABCD"),
            Some("deploys"),
            Some("#team-ops_2"),
        ] {
            let settings = SessionSettings {
                slack_channel: good.map(str::to_owned),
                ..SessionSettings::default()
            };
            assert!(settings.validate().is_ok(), "{good:?}");
        }
        for bad in ["", "#", "<!channel>", "two words", "dé", &"a".repeat(81)] {
            let settings = SessionSettings {
                slack_channel: Some(bad.to_owned()),
                ..SessionSettings::default()
            };
            assert!(settings.validate().is_err(), "{bad}");
        }
    }
}
