//! Identifiers and secrets as newtypes: an id is validated once, when it enters, and a secret never prints.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::ManagedInputError;

/// The longest id allowed (docs/api.md#limits).
pub const MAX_ID_LEN: usize = 128;

/// Checks the id rule (docs/api.md#limits): 1–128 characters of `[A-Za-z0-9._:-]`.
pub fn check_id(what: &str, value: &str) -> Result<(), ManagedInputError> {
    if value.is_empty() {
        return Err(ManagedInputError::validation(format!(
            "The {what} is empty; give 1 to {MAX_ID_LEN} characters of A-Z a-z 0-9 . _ : -."
        )));
    }
    if value.len() > MAX_ID_LEN {
        return Err(ManagedInputError::validation(format!(
            "The {what} is {} characters long; the limit is {MAX_ID_LEN}.",
            value.chars().count()
        )));
    }
    if let Some(bad) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
    {
        return Err(ManagedInputError::validation(format!(
            "The {what} contains {bad:?}; only A-Z a-z 0-9 . _ : - are allowed."
        )));
    }
    Ok(())
}

macro_rules! validated_id {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(try_from = "String", into = "String")]
        #[schema(value_type = String, pattern = "^[A-Za-z0-9._:-]{1,128}$")]
        pub struct $name(String);

        impl $name {
            /// What this id is called in error messages.
            pub const WHAT: &'static str = $what;

            pub fn parse(value: impl Into<String>) -> Result<Self, ManagedInputError> {
                let value = value.into();
                check_id($what, &value)?;
                Ok(Self(value))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = ManagedInputError;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::parse(value)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

validated_id!(
    /// A session's client-chosen id.
    SessionId,
    "session id"
);
validated_id!(
    /// The key of one request inside a round (for pulsemcp rounds, the producer's request id).
    RequestKey,
    "request key"
);
validated_id!(
    /// The id a producer polls by: the pulsemcp request id, or the round id for managed rounds.
    RequestId,
    "request id"
);
validated_id!(
    /// The caller's key that makes a response submission safe to retry.
    IdempotencyKey,
    "idempotency key"
);
validated_id!(
    /// The worker that holds (or asks for) a round's lease.
    OwnerId,
    "owner id"
);

/// A round's durable id: a UUIDv7, so ids sort by creation time.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(transparent)]
pub struct RoundId(pub Uuid);

impl RoundId {
    pub fn parse(value: &str) -> Result<Self, ManagedInputError> {
        Uuid::parse_str(value).map(Self).map_err(|_| {
            ManagedInputError::validation(format!("The round id {value:?} is not a UUID."))
        })
    }
}

impl fmt::Display for RoundId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A managed round is polled by its own id; a UUID's hex digits and dashes always satisfy the id rule.
impl From<RoundId> for RequestId {
    fn from(round_id: RoundId) -> Self {
        Self(round_id.to_string())
    }
}

/// The secret that proves a worker holds a round's lease. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
pub struct LeaseToken(String);

impl LeaseToken {
    pub fn from_secret(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LeaseToken(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accept_the_spec_alphabet_up_to_128_characters() {
        assert!(SessionId::parse("run-42.a_b:c").is_ok());
        assert!(SessionId::parse("x".repeat(128)).is_ok());
    }

    #[test]
    fn ids_refuse_empty_long_and_odd_characters_with_a_message() {
        for bad in ["", " ", "a b", "a/b", "é", "a\0b", &"x".repeat(129)] {
            let error = SessionId::parse(bad).expect_err(bad);
            assert_eq!(error.code(), "validation_error");
            assert!(
                error.message().contains("session id"),
                "{}",
                error.message()
            );
        }
    }

    #[test]
    fn ids_deserialise_only_when_valid() {
        assert!(serde_json::from_str::<RequestKey>("\"ok\"").is_ok());
        assert!(serde_json::from_str::<RequestKey>("\"not ok\"").is_err());
    }

    #[test]
    fn lease_token_debug_hides_the_secret() {
        let token = LeaseToken::from_secret("super-secret");
        assert_eq!(format!("{token:?}"), "LeaseToken(***)");
        assert_eq!(token.expose(), "super-secret");
    }
}
