//! The typed errors of the managed-input contract (docs/api.md#errors), each carrying a sentence a person can act on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A refused operation. The variant is the machine-readable code; `message` tells a person what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum ManagedInputError {
    /// Malformed ids, response maps, actions or schema content (`details` holds per-field errors).
    #[error("{message}")]
    ValidationError {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// Stale lease or owner, an idempotency key reused for another answer, a concurrent update, already answered.
    #[error("{message}")]
    ManagedInputConflict {
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// A transition that is invalid for the round's or session's current state.
    #[error("{message}")]
    ManagedInputState { message: String },
    /// The store cannot safely recover or reclaim the round.
    #[error("{message}")]
    ManagedInputRecovery { message: String },
    /// No such session or round.
    #[error("{message}")]
    NotFound { message: String },
}

impl ManagedInputError {
    pub fn validation(message: impl Into<String>) -> Self {
        Self::ValidationError {
            message: message.into(),
            details: None,
        }
    }

    pub fn validation_with(message: impl Into<String>, details: Value) -> Self {
        Self::ValidationError {
            message: message.into(),
            details: Some(details),
        }
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::ManagedInputConflict {
            message: message.into(),
            details: None,
        }
    }

    pub fn conflict_with(message: impl Into<String>, details: Value) -> Self {
        Self::ManagedInputConflict {
            message: message.into(),
            details: Some(details),
        }
    }

    pub fn state(message: impl Into<String>) -> Self {
        Self::ManagedInputState {
            message: message.into(),
        }
    }

    pub fn recovery(message: impl Into<String>) -> Self {
        Self::ManagedInputRecovery {
            message: message.into(),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound {
            message: message.into(),
        }
    }

    /// The code of docs/api.md#errors (`validation_error`, `managed_input_conflict`, …).
    pub fn code(&self) -> &'static str {
        match self {
            Self::ValidationError { .. } => "validation_error",
            Self::ManagedInputConflict { .. } => "managed_input_conflict",
            Self::ManagedInputState { .. } => "managed_input_state",
            Self::ManagedInputRecovery { .. } => "managed_input_recovery",
            Self::NotFound { .. } => "not_found",
        }
    }

    /// No such session or round: the one test for "not found".
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    pub fn message(&self) -> &str {
        match self {
            Self::ValidationError { message, .. }
            | Self::ManagedInputConflict { message, .. }
            | Self::ManagedInputState { message }
            | Self::ManagedInputRecovery { message }
            | Self::NotFound { message } => message,
        }
    }

    pub fn details(&self) -> Option<&Value> {
        match self {
            Self::ValidationError { details, .. } | Self::ManagedInputConflict { details, .. } => {
                details.as_ref()
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_the_spec_error_body() {
        let error = ManagedInputError::validation_with(
            "The answer does not match the form.",
            serde_json::json!({"fields": {"city": ["is required"]}}),
        );
        let body = serde_json::to_value(&error).expect("serialise");
        assert_eq!(body["error"], "validation_error");
        assert_eq!(body["message"], "The answer does not match the form.");
        assert_eq!(body["details"]["fields"]["city"][0], "is required");
        assert_eq!(error.code(), "validation_error");
        let back: ManagedInputError = serde_json::from_value(body).expect("deserialise");
        assert_eq!(back, error);
    }
}
