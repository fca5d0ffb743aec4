//! Secrets handed out once and stored only as hashes: producer session tokens and API keys.

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// Prefix of a session's producer token (it travels in the URL path).
/// A signed-in browser session's CSRF token, as the web layer hands it to the API on each request.
#[derive(Debug, Clone)]
pub struct CsrfToken(pub String);

pub const SESSION_TOKEN_PREFIX: &str = "ars_";
/// Prefix of an API key (it travels in `Authorization: Bearer`).
pub const API_KEY_PREFIX: &str = "ark_";

/// A fresh secret: the prefix and 244 random bits in hex (two v4 UUIDs), safe in a URL path.
pub fn generate(prefix: &str) -> String {
    format!(
        "{prefix}{}{}",
        Uuid::new_v4().simple(),
        Uuid::new_v4().simple()
    )
}

/// Whether `token` could be a session token at all (checked before any hashing or database work).
pub fn is_session_token(token: &str) -> bool {
    token.len() <= 200 && token.starts_with(SESSION_TOKEN_PREFIX)
}

/// The stored form of a secret. A plain SHA-256 suffices: the secrets are long and random, not passwords.
pub fn hash(secret: &str) -> String {
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
    fn secrets_are_unique_prefixed_and_hash_stably() {
        let a = generate(SESSION_TOKEN_PREFIX);
        let b = generate(SESSION_TOKEN_PREFIX);
        assert_ne!(a, b);
        assert!(a.starts_with("ars_") && a.len() == 4 + 64);
        assert_eq!(hash(&a), hash(&a));
        assert_ne!(hash(&a), hash(&b));
        assert_eq!(hash(&a).len(), 64);
        // Stored hashes must not change: SHA-256 in lower-case hex, as before.
        assert_eq!(
            hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_session_token(&a));
        assert!(!is_session_token("ark_not_a_session_token"));
        assert!(!is_session_token(&format!("ars_{}", "0".repeat(300))));
    }
}
