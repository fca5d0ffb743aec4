//! Who may do what: the roles of people and API keys (SPEC §6).

use serde::{Deserialize, Serialize};

/// A role. Viewers read; responders also answer; admins also manage sessions, tokens and keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    Responder,
    Admin,
}

text_names!(Role { Viewer => "viewer", Responder => "responder", Admin => "admin" });

impl Role {
    /// Answering questions (and asking them through the bare producer routes).
    pub fn can_answer(self) -> bool {
        self >= Self::Responder
    }

    /// Creating, cancelling and re-keying sessions; creating API keys.
    pub fn can_manage(self) -> bool {
        self == Self::Admin
    }
}

/// A stored API key (its secret is kept only as a hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    pub role: Role,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_grow_in_power() {
        assert!(!Role::Viewer.can_answer());
        assert!(Role::Responder.can_answer() && !Role::Responder.can_manage());
        assert!(Role::Admin.can_answer() && Role::Admin.can_manage());
        assert_eq!(Role::parse("responder"), Some(Role::Responder));
        assert_eq!(Role::parse("root"), None);
    }
}
