//! Who may do what: the roles of people and API keys (docs/api.md#roles).

use serde::{Deserialize, Serialize};

use super::ManagedInputError;

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

/// A person who signs in to the web app. Answers they give are recorded under their username.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub username: String,
    pub role: Role,
}

/// A signed-in person as each of their requests reads them: who they are, the time zone their pages write
/// times in (when they chose one), and the groups they answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    pub user: User,
    pub time_zone: Option<String>,
    pub groups: Vec<String>,
}

/// The one normalisation of a typed username, for looking it up, limiting attempts on it and storing it:
/// surrounding whitespace is not part of a name.
pub fn normalise_username(raw: &str) -> &str {
    raw.trim()
}

/// Checks a username: 1 to 64 characters of letters, digits and `.`, `_`, `-`, `@`.
pub fn check_username(raw: &str) -> Result<(), ManagedInputError> {
    let ok = !raw.is_empty()
        && raw.chars().count() <= 64
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ManagedInputError::validation(
            "A username is 1 to 64 characters of letters, digits and . _ - @.",
        ))
    }
}

/// The one form of a person's e-mail address, or why it is not one: trimmed, lower-cased, at most 254
/// characters, one `@` with something on each side, no spaces or control characters. Good enough to match
/// the address Slack reports and to send mail to; the mail server is the real judge.
pub fn normalise_email(raw: &str) -> Result<String, ManagedInputError> {
    let email = raw.trim().to_lowercase();
    let well_formed = email.chars().count() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@')
        });
    if well_formed {
        Ok(email)
    } else {
        Err(ManagedInputError::validation(
            "An e-mail address looks like name@example.com (at most 254 characters, no spaces).",
        ))
    }
}

/// Checks a new password: at least 8 characters and at most 1024 (hashing cost grows with length).
pub fn check_password(raw: &str) -> Result<(), ManagedInputError> {
    let length = raw.chars().count();
    if (8..=1024).contains(&length) {
        Ok(())
    } else {
        Err(ManagedInputError::validation(
            "A password needs at least 8 characters (and at most 1024).",
        ))
    }
}

/// A stored API key (its secret is kept only as a hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    pub role: Role,
}

/// Whether a principal is a person or an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    Person,
    ApiKey,
}

/// Who is acting: a person signed in to the web app, or an API key. What they may do follows from the role;
/// answers they give are recorded under [`Principal::label`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The user's or the key's id.
    pub id: String,
    /// The username, or the key's name.
    pub name: String,
    pub role: Role,
    pub kind: PrincipalKind,
}

impl Principal {
    pub fn person(user: &User) -> Self {
        Self {
            id: user.id.clone(),
            name: user.username.clone(),
            role: user.role,
            kind: PrincipalKind::Person,
        }
    }

    pub fn api_key(key: &ApiKey) -> Self {
        Self {
            id: key.id.clone(),
            name: key.name.clone(),
            role: key.role,
            kind: PrincipalKind::ApiKey,
        }
    }

    /// Who answered, as the history and the API record it: a person by username, a key as "api key NAME".
    pub fn label(&self) -> String {
        match self.kind {
            PrincipalKind::Person => self.name.clone(),
            PrincipalKind::ApiKey => format!("api key {}", self.name),
        }
    }

    /// The bucket a rate limit counts this principal's calls in.
    pub fn limit_key(&self) -> String {
        match self.kind {
            PrincipalKind::Person => format!("user:{}", self.id),
            PrincipalKind::ApiKey => format!("key:{}", self.id),
        }
    }
}

/// The stored form of a secret handed out once (a token, a key, a link). A plain SHA-256 suffices: the
/// secrets are long and random, not passwords.
pub fn hash_secret(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    // Every producer poll hashes its token: one allocation, not one per byte.
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(secret.as_bytes()) {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
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

    #[test]
    fn usernames_and_passwords_are_checked() {
        assert!(check_username("ada.lovelace@example").is_ok());
        assert!(check_username("").is_err());
        assert!(check_username("has space").is_err());
        assert!(check_username(&"a".repeat(65)).is_err());
        assert!(check_password("correct horse").is_ok());
        assert!(check_password("short").is_err());
    }

    #[test]
    fn emails_are_normalised_or_refused() {
        assert_eq!(
            normalise_email(" Rita@Example.COM ").ok().as_deref(),
            Some("rita@example.com")
        );
        for bad in [
            "",
            "rita",
            "@example.com",
            "rita@",
            "a@b@c",
            "ri ta@example.com",
            "a\u{0}@b",
        ] {
            assert!(normalise_email(bad).is_err(), "{bad:?}");
        }
        assert!(normalise_email(&format!("{}@example.com", "a".repeat(250))).is_err());
    }
}
