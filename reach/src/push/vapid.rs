//! The instance's VAPID key pair (RFC 8292): made on first start, kept in the database so every instance and
//! every restart signs as the same application server, and the `Authorization: vapid t=…, k=…` header.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::{DateTime, Duration, Utc};
use p256::ecdsa::{Signature, SigningKey, signature::Signer};
use serde_json::json;

use anteroom_api::AppState;

/// The `instance_keys` name of the private key (base64url of its 32 bytes).
const KEY_NAME: &str = "vapid_private_key";
/// How long a signature stays good; RFC 8292 allows at most 24 hours.
const VALIDITY: Duration = Duration::hours(12);

/// The key push services know this Anteroom by.
pub struct Vapid {
    signing: SigningKey,
}

impl Vapid {
    /// The stored key pair, made now if this is the first start.
    pub async fn load(state: &AppState) -> anyhow::Result<Self> {
        let candidate = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let stored = state
            .store
            .instance_key(KEY_NAME, &URL_SAFE_NO_PAD.encode(candidate.to_bytes()))
            .await?;
        let bytes = URL_SAFE_NO_PAD.decode(stored.trim())?;
        Ok(Self {
            signing: SigningKey::from_slice(&bytes)?,
        })
    }

    /// The public key as `applicationServerKey` wants it: base64url of the uncompressed point.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(
            self.signing
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes(),
        )
    }

    pub fn signing_key(&self) -> &SigningKey {
        &self.signing
    }
}

/// `vapid t=<ES256 JWT>, k=<public key>` for a push to `endpoint`: the JWT's audience is the push service's
/// origin, it expires [`VALIDITY`] after `now`, and names `contact` as its subject.
pub fn vapid_authorization(
    key: &SigningKey,
    endpoint: &url::Url,
    contact: &str,
    now: DateTime<Utc>,
) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"typ": "JWT", "alg": "ES256"}).to_string());
    let claims = json!({
        "aud": endpoint.origin().ascii_serialization(),
        "exp": (now + VALIDITY).timestamp(),
        "sub": contact,
    });
    let signing_input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
    let signature: Signature = key.sign(signing_input.as_bytes());
    let public = URL_SAFE_NO_PAD.encode(key.verifying_key().to_encoded_point(false).as_bytes());
    format!(
        "vapid t={signing_input}.{}, k={public}",
        URL_SAFE_NO_PAD.encode(signature.to_bytes())
    )
}

#[cfg(test)]
mod tests {
    use p256::ecdsa::{VerifyingKey, signature::Verifier};

    use super::*;

    #[test]
    fn the_header_is_a_verifiable_es256_jwt_for_the_push_services_origin() {
        let key = SigningKey::from_slice(&[7; 32]).expect("key");
        let endpoint = url::Url::parse("https://push.example:8443/send/abc?x=1").expect("url");
        let now = DateTime::from_timestamp(1_800_000_000, 0).expect("time");
        let header = vapid_authorization(&key, &endpoint, "mailto:ops@example.com", now);
        let (token, public) = header
            .strip_prefix("vapid t=")
            .and_then(|rest| rest.split_once(", k="))
            .expect("vapid t=…, k=…");
        let public = VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(public).expect("b64"))
            .expect("point");
        assert_eq!(&public, key.verifying_key());
        let (signed, signature) = token.rsplit_once('.').expect("three parts");
        let signature =
            Signature::from_slice(&URL_SAFE_NO_PAD.decode(signature).expect("b64")).expect("r||s");
        public
            .verify(signed.as_bytes(), &signature)
            .expect("the signature verifies");
        let claims: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(signed.split('.').nth(1).expect("claims"))
                .expect("b64"),
        )
        .expect("json");
        assert_eq!(claims["aud"], "https://push.example:8443");
        assert_eq!(claims["exp"], 1_800_000_000 + 12 * 3600);
        assert_eq!(claims["sub"], "mailto:ops@example.com");
    }
}
