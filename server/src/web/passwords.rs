//! Password hashing with Argon2id (the `argon2` crate's defaults), in PHC strings that carry their own salt.

use argon2::{
    Argon2,
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng},
};

/// Hashes a new password. Slow by design: call it off the async executor.
pub fn hash(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| anyhow::anyhow!("cannot hash the password: {error}"))
}

/// Whether `password` matches the stored hash (an unreadable hash matches nothing).
pub fn verify(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash to verify against when the username is unknown, so a wrong name costs as long as a wrong password.
pub fn decoy() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash("decoy password that matches nothing").unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_own_password_only() {
        let stored = hash("correct horse battery").expect("hash");
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify("correct horse battery", &stored));
        assert!(!verify("correct horse battery!", &stored));
        assert!(!verify("anything", "not a phc string"));
        assert_ne!(
            stored,
            hash("correct horse battery").expect("hash"),
            "salted"
        );
    }
}
