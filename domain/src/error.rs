//! The typed errors of the managed-input contract (docs/api.md#errors), each carrying a sentence a person can act on.

use serde_json::Value;

/// What kind of refusal a [`ManagedInputError`] is; its code on the wire is spelled here and nowhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    Validation,
    Conflict,
    State,
    Recovery,
    NotFound,
}

impl RefusalKind {
    /// The code of docs/api.md#errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validation => "validation_error",
            Self::Conflict => "managed_input_conflict",
            Self::State => "managed_input_state",
            Self::Recovery => "managed_input_recovery",
            Self::NotFound => "not_found",
        }
    }
}

/// A refused operation. The variant is the kind of refusal; `message` tells a person what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ManagedInputError {
    /// Malformed ids, response maps, actions or schema content (`details` holds per-field errors).
    #[error("{message}")]
    ValidationError {
        message: String,
        details: Option<Value>,
    },
    /// Stale lease or owner, an idempotency key reused for another answer, a concurrent update, already answered.
    #[error("{message}")]
    ManagedInputConflict {
        message: String,
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

    pub fn kind(&self) -> RefusalKind {
        match self {
            Self::ValidationError { .. } => RefusalKind::Validation,
            Self::ManagedInputConflict { .. } => RefusalKind::Conflict,
            Self::ManagedInputState { .. } => RefusalKind::State,
            Self::ManagedInputRecovery { .. } => RefusalKind::Recovery,
            Self::NotFound { .. } => RefusalKind::NotFound,
        }
    }

    /// The code of docs/api.md#errors (`validation_error`, `managed_input_conflict`, …).
    pub fn code(&self) -> &'static str {
        self.kind().as_str()
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
    fn each_refusal_names_its_kind_and_keeps_its_details() {
        let error = ManagedInputError::validation_with(
            "The answer does not match the form.",
            serde_json::json!({"fields": {"city": ["is required"]}}),
        );
        assert_eq!(error.kind(), RefusalKind::Validation);
        assert_eq!(error.code(), "validation_error");
        assert_eq!(error.message(), "The answer does not match the form.");
        assert_eq!(
            error.details().map(|details| &details["fields"]["city"][0]),
            Some(&serde_json::json!("is required"))
        );
        assert_eq!(ManagedInputError::not_found("gone").code(), "not_found");
        assert!(ManagedInputError::state("no").details().is_none());
    }
}
