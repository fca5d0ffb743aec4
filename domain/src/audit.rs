//! The record: an append-only log of every decision and every change of who may decide, each entry chained to
//! the one before by a hash, so that a deleted or edited entry is found (docs/audit.md).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    expiry::wire_time,
    round::{FailureCode, Round},
};

/// What the first entry chains to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Who acts when nobody does: the deadline, a job.
pub const ANTEROOM: &str = "anteroom";

/// An entry about to be written: who did what to what, and the facts worth keeping (never an answer's values,
/// never a secret).
#[derive(Debug, Clone, PartialEq)]
pub struct NewAuditEntry {
    pub actor: String,
    pub action: &'static str,
    pub subject: String,
    pub detail: Value,
}

impl NewAuditEntry {
    pub fn new(
        actor: impl Into<String>,
        action: &'static str,
        subject: impl Into<String>,
        detail: Value,
    ) -> Self {
        Self {
            actor: actor.into(),
            action,
            subject: subject.into(),
            detail,
        }
    }

    /// A question was asked.
    pub fn question_created(round: &Round) -> Self {
        Self::new(
            format!("session {}", round.session_id),
            "question.created",
            round.round_id.to_string(),
            json!({
                "session_id": round.session_id,
                "server": round.server,
                "tool": round.operation_name,
                "summary": round.summary,
                "deadline": wire_time(round.deadline),
            }),
        )
    }

    /// A question was answered: by whom (a person, a key, a rule; the channel is in the name, "rita via
    /// Slack") and how, never with what.
    pub fn question_answered(round: &Round) -> Self {
        let actions: Vec<&str> = round
            .responses
            .iter()
            .flat_map(|responses| responses.values())
            .map(|response| response.action.as_str())
            .collect();
        Self::new(
            round
                .responded_by
                .clone()
                .unwrap_or_else(|| ANTEROOM.to_owned()),
            "question.answered",
            round.round_id.to_string(),
            json!({"session_id": round.session_id, "actions": actions}),
        )
    }

    /// A question ended without an answer reaching its agent: expired, undelivered, cancelled, revoked…
    pub fn question_ended(round: &Round) -> Option<Self> {
        let failure = round.failure.as_ref()?;
        let action = match failure.code {
            FailureCode::Expired => "question.expired",
            FailureCode::Undelivered => "question.undelivered",
            _ => "question.failed",
        };
        Some(Self::new(
            ANTEROOM,
            action,
            round.round_id.to_string(),
            json!({"session_id": round.session_id, "code": failure.code.as_str(), "message": failure.message}),
        ))
    }
}

/// A sealed entry, as stored and exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub seq: i64,
    #[serde(with = "super::wire::time")]
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub subject: String,
    /// JSON text, exactly as hashed.
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// The hash of an entry: SHA-256 over its fields and the hash before it, written as one JSON array so no two
/// different entries write the same text.
pub fn entry_hash(
    prev_hash: &str,
    seq: i64,
    at_ms: i64,
    actor: &str,
    action: &str,
    subject: &str,
    detail: &str,
) -> String {
    let text = json!([prev_hash, seq, at_ms, actor, action, subject, detail]).to_string();
    super::access::hash_secret(&text)
}

/// Where a chain breaks, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBreak {
    pub seq: i64,
    pub problem: String,
}

/// Checks `entries` (in order) as the continuation of a chain whose last entry was `prev_seq` with hash
/// `prev_hash`; returns the last entry's number and hash.
pub fn verify_chain(
    entries: &[AuditEntry],
    mut prev_seq: i64,
    mut prev_hash: String,
) -> Result<(i64, String), ChainBreak> {
    for entry in entries {
        if entry.seq != prev_seq + 1 {
            return Err(ChainBreak {
                seq: prev_seq + 1,
                problem: format!(
                    "entries {} to {} are missing (deleted)",
                    prev_seq + 1,
                    entry.seq - 1
                ),
            });
        }
        if entry.prev_hash != prev_hash {
            return Err(ChainBreak {
                seq: entry.seq,
                problem:
                    "its link to the entry before does not match (an entry before it was changed)"
                        .to_owned(),
            });
        }
        let expected = entry_hash(
            &entry.prev_hash,
            entry.seq,
            entry.at.timestamp_millis(),
            &entry.actor,
            &entry.action,
            &entry.subject,
            &entry.detail,
        );
        if entry.hash != expected {
            return Err(ChainBreak {
                seq: entry.seq,
                problem: "its content does not match its hash (edited)".to_owned(),
            });
        }
        prev_seq = entry.seq;
        prev_hash = entry.hash.clone();
    }
    Ok((prev_seq, prev_hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<AuditEntry> {
        let mut prev = GENESIS.to_owned();
        (1..=n)
            .map(|seq| {
                let at = DateTime::from_timestamp_millis(1_700_000_000_000 + seq).expect("time");
                let detail = json!({"n": seq}).to_string();
                let hash = entry_hash(
                    &prev,
                    seq,
                    at.timestamp_millis(),
                    "rita",
                    "question.answered",
                    "r1",
                    &detail,
                );
                let entry = AuditEntry {
                    seq,
                    at,
                    actor: "rita".to_owned(),
                    action: "question.answered".to_owned(),
                    subject: "r1".to_owned(),
                    detail,
                    prev_hash: prev.clone(),
                    hash: hash.clone(),
                };
                prev = hash;
                entry
            })
            .collect()
    }

    #[test]
    fn an_intact_chain_verifies_and_any_change_is_named() {
        let entries = chain(5);
        let (last, _) = verify_chain(&entries, 0, GENESIS.to_owned()).expect("intact");
        assert_eq!(last, 5);

        let mut edited = entries.clone();
        edited[2].actor = "mallory".to_owned();
        assert_eq!(
            verify_chain(&edited, 0, GENESIS.to_owned()).map_err(|b| b.seq),
            Err(3)
        );

        let mut deleted = entries.clone();
        deleted.remove(1);
        let broken = verify_chain(&deleted, 0, GENESIS.to_owned()).expect_err("gap");
        assert_eq!(broken.seq, 2);
        assert!(broken.problem.contains("missing"), "{}", broken.problem);

        // Re-hashing an edited entry does not help: the next one's link no longer matches.
        let mut rehashed = entries.clone();
        rehashed[1].detail = "{}".to_owned();
        rehashed[1].hash = entry_hash(
            &rehashed[1].prev_hash,
            2,
            rehashed[1].at.timestamp_millis(),
            "rita",
            "question.answered",
            "r1",
            "{}",
        );
        assert_eq!(
            verify_chain(&rehashed, 0, GENESIS.to_owned()).map_err(|b| b.seq),
            Err(3)
        );
    }

    #[test]
    fn fields_cannot_run_into_each_other() {
        assert_ne!(
            entry_hash(GENESIS, 1, 0, "ab", "c", "d", "{}"),
            entry_hash(GENESIS, 1, 0, "a", "bc", "d", "{}")
        );
    }
}
