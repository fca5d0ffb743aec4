//! Slack's request signing, v0: `v0=` hex HMAC-SHA256 of `v0:{timestamp}:{raw body}` under the app's
//! signing secret, refused outside a five-minute window so a captured request cannot be replayed later.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a request's timestamp may be from now, either way.
pub const WINDOW_SECS: i64 = 5 * 60;

/// Why a request was not taken as Slack's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the request has no X-Slack-Signature or X-Slack-Request-Timestamp header")]
    Missing,
    #[error("the request's timestamp is more than five minutes from now")]
    Stale,
    #[error("the request's signature does not match its body")]
    Wrong,
}

/// Checks a request's signature headers against its raw body at `now` (Unix seconds).
pub fn verify_signature(
    secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(SignatureError::Missing);
    };
    let sent: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| SignatureError::Stale)?;
    if (now.saturating_sub(sent)).abs() > WINDOW_SECS {
        return Err(SignatureError::Stale);
    }
    let Some(hex) = signature.trim().strip_prefix("v0=") else {
        return Err(SignatureError::Wrong);
    };
    let Some(claimed) = decode_hex(hex) else {
        return Err(SignatureError::Wrong);
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return Err(SignatureError::Wrong);
    };
    mac.update(b"v0:");
    mac.update(timestamp.trim().as_bytes());
    mac.update(b":");
    mac.update(body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&claimed)
        .map_err(|_| SignatureError::Wrong)
}

/// `v0=` and the hex HMAC of `body` at `timestamp`: what Slack sends (and the tests send as Slack).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("v0={hex}")
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Slack's "Verifying requests from Slack" page.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TIMESTAMP: &str = "1531420618";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    #[test]
    fn slacks_published_example_verifies() {
        assert_eq!(sign(SECRET, 1_531_420_618, BODY.as_bytes()), SIGNATURE);
        assert_eq!(
            verify_signature(
                SECRET,
                Some(TIMESTAMP),
                Some(SIGNATURE),
                BODY.as_bytes(),
                1_531_420_700
            ),
            Ok(())
        );
    }

    #[test]
    fn missing_wrong_and_stale_signatures_are_refused() {
        let at = 1_531_420_618;
        let check = |timestamp: Option<&str>, signature: Option<&str>, body: &str, now: i64| {
            verify_signature(SECRET, timestamp, signature, body.as_bytes(), now)
        };
        assert_eq!(
            check(None, Some(SIGNATURE), BODY, at),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            check(Some(TIMESTAMP), None, BODY, at),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            check(Some(TIMESTAMP), Some(SIGNATURE), "token=changed", at),
            Err(SignatureError::Wrong)
        );
        assert_eq!(
            check(Some(TIMESTAMP), Some("v0=zz"), BODY, at),
            Err(SignatureError::Wrong)
        );
        assert_eq!(
            check(Some(TIMESTAMP), Some("v1=abc"), BODY, at),
            Err(SignatureError::Wrong)
        );
        assert_eq!(
            check(Some(TIMESTAMP), Some(SIGNATURE), BODY, at + 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            check(Some(TIMESTAMP), Some(SIGNATURE), BODY, at - 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            check(Some("soon"), Some(SIGNATURE), BODY, at),
            Err(SignatureError::Stale)
        );
        let other_secret = verify_signature(
            "another",
            Some(TIMESTAMP),
            Some(SIGNATURE),
            BODY.as_bytes(),
            at,
        );
        assert_eq!(other_secret, Err(SignatureError::Wrong));
    }
}
