//! The WebAuthn relying party Anteroom is, through `webauthn_rp`: ceremonies started and checked, their state
//! kept as bytes in the browser's session (so any instance can finish what another started), and credentials
//! kept as the library encodes them.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL};
use webauthn_rp::{
    AuthenticatedCredential, DiscoverableAuthentication16, DiscoverableAuthenticationServerState,
    DiscoverableCredentialRequestOptions, PublicKeyCredentialCreationOptions, Registration,
    RegistrationServerState,
    bin::{Decode, Encode},
    request::{
        AsciiDomain, ExtensionInfo, PublicKeyCredentialDescriptor, RpId,
        auth::AuthenticationVerificationOptions,
        register::{
            CredProtect, PublicKeyCredentialUserEntity, RegistrationVerificationOptions,
            UserHandle16, Username,
        },
    },
    response::{
        AuthTransports, CredentialId,
        register::{CompressedPubKey, DynamicState, StaticState},
    },
};

/// A stored passkey's public key as the library decodes it (Ed25519, P-256, P-384 or RSA).
type StoredKey = StaticState<CompressedPubKey<[u8; 32], [u8; 32], [u8; 48], Vec<u8>>>;

/// The user handle's length: 16 random bytes name a person to their authenticators, and nothing else.
const USER_HANDLE_BYTES: usize = 16;

/// Anteroom as a WebAuthn relying party: its RP ID (the public URL's host) and the one origin it accepts.
pub struct PasskeyParty {
    rp_id: RpId,
    origin: String,
}

/// Why a passkey ceremony was refused, in words for the person.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn refused(why: &str, error: impl std::fmt::Display) -> Refused {
    Refused(format!("{why} ({error})"))
}

/// What a new passkey leaves to store, base64url each.
#[derive(Debug)]
pub struct AddedPasskey {
    pub id: String,
    pub public_key: String,
    pub counters: String,
}

/// A sign-in's answer from the browser, read but not yet checked.
pub struct SignInResponse {
    authentication: DiscoverableAuthentication16,
}

impl SignInResponse {
    /// The credential id it names, base64url (to find the stored passkey by).
    pub fn credential_id(&self) -> String {
        BASE64URL.encode(self.authentication.raw_id().as_ref())
    }

    /// The user handle the authenticator returned, base64url (it must be the stored passkey's).
    pub fn user_handle(&self) -> String {
        BASE64URL.encode(self.authentication.response().user_handle().as_ref())
    }
}

impl PasskeyParty {
    /// The relying party for an Anteroom reached at `public_url`; why not, when browsers refuse passkeys there
    /// (an IP address, or plain `http` anywhere but `localhost`).
    pub fn for_public_url(public_url: &str) -> Result<Self, String> {
        let url = url::Url::parse(public_url).map_err(|error| format!("{public_url}: {error}"))?;
        let Some(host) = url.domain() else {
            return Err(format!(
                "{public_url} names its host by address; passkeys need a domain name (ANTEROOM_PUBLIC_URL)"
            ));
        };
        let local = host == "localhost" || host.ends_with(".localhost");
        if url.scheme() != "https" && !local {
            return Err(format!(
                "{public_url} is not https; browsers offer passkeys only to https sites and localhost"
            ));
        }
        let domain = AsciiDomain::try_from(host.to_ascii_lowercase())
            .map_err(|error| format!("{host} is not a domain passkeys accept: {error}"))?;
        Ok(Self {
            rp_id: RpId::Domain(domain),
            origin: url.origin().ascii_serialization(),
        })
    }

    /// A fresh user handle for a person's first passkey, base64url.
    pub fn new_user_handle() -> String {
        BASE64URL.encode(UserHandle16::new().as_ref())
    }

    /// Starts adding a passkey for `username`: the options for the browser's `navigator.credentials.create`
    /// (the WebAuthn JSON form) and the state to keep until it answers. `existing` (base64url credential ids)
    /// are the person's passkeys, which the authenticator is told not to make again.
    pub fn start_adding(
        &self,
        username: &str,
        user_handle: &str,
        existing: &[String],
    ) -> Result<(serde_json::Value, Vec<u8>), Refused> {
        let handle = decode_user_handle(user_handle)?;
        let name = Username::try_from(username).map_err(|error| refused("The username", error))?;
        let exclude = existing
            .iter()
            .filter_map(|id| BASE64URL.decode(id).ok())
            .filter_map(|id| CredentialId::decode(id).ok())
            .filter_map(|id| {
                AuthTransports::decode(0)
                    .ok()
                    .map(|transports| PublicKeyCredentialDescriptor { id, transports })
            })
            .collect();
        let user = PublicKeyCredentialUserEntity {
            name,
            id: &handle,
            display_name: None,
        };
        let mut options = PublicKeyCredentialCreationOptions::passkey(&self.rp_id, user, exclude);
        // Asked for, not enforced: authenticators without the credProtect extension (Chromium's own, some
        // platforms') would refuse to make the passkey at all, and every sign-in requires user verification anyway.
        options.extensions.cred_protect =
            CredProtect::UserVerificationRequired(ExtensionInfo::AllowDontEnforceValue);
        let (server, client) = options
            .start_ceremony()
            .map_err(|error| refused("The passkey's options", error))?;
        let options = serde_json::to_value(&client)
            .map_err(|error| refused("The passkey's options", error))?;
        let kept = server
            .encode()
            .map_err(|error| refused("The passkey's options", error))?;
        Ok((options, kept))
    }

    /// Checks the browser's new credential (`response`, the JSON of `PublicKeyCredential.toJSON()`) against
    /// the state kept when it started.
    pub fn finish_adding(&self, kept: &[u8], response: &[u8]) -> Result<AddedPasskey, Refused> {
        let started = RegistrationServerState::<USER_HANDLE_BYTES>::decode(kept)
            .map_err(|error| refused("This passkey was not started here", error))?;
        let registration = Registration::from_json_relaxed(response)
            .map_err(|error| refused("The browser's passkey could not be read", error))?;
        let origins = [self.origin.as_str()];
        let options = RegistrationVerificationOptions::<&str, &str> {
            allowed_origins: &origins,
            ..RegistrationVerificationOptions::default()
        };
        let credential = started
            .verify(&self.rp_id, &registration, &options)
            .map_err(|error| refused("The passkey was refused", error))?;
        let public_key = credential
            .static_state()
            .encode()
            .map_err(|error| refused("The passkey's key", error))?;
        let counters = credential
            .dynamic_state()
            .encode()
            .map_err(|error| refused("The passkey's counters", error))?;
        Ok(AddedPasskey {
            id: BASE64URL.encode(credential.id().as_ref()),
            public_key: BASE64URL.encode(public_key),
            counters: BASE64URL.encode(counters),
        })
    }

    /// Starts a sign-in with any passkey of this site the browser holds: the options for
    /// `navigator.credentials.get` and the state to keep.
    pub fn start_sign_in(&self) -> Result<(serde_json::Value, Vec<u8>), Refused> {
        let (server, client) = DiscoverableCredentialRequestOptions::passkey(&self.rp_id)
            .start_ceremony()
            .map_err(|error| refused("The sign-in's options", error))?;
        let options = serde_json::to_value(&client)
            .map_err(|error| refused("The sign-in's options", error))?;
        let kept = server
            .encode()
            .map_err(|error| refused("The sign-in's options", error))?;
        Ok((options, kept))
    }

    /// Reads the browser's answer to a sign-in (the JSON of `PublicKeyCredential.toJSON()`).
    pub fn read_sign_in(response: &[u8]) -> Result<SignInResponse, Refused> {
        DiscoverableAuthentication16::from_json_relaxed(response)
            .map(|authentication| SignInResponse { authentication })
            .map_err(|error| refused("The browser's passkey answer could not be read", error))
    }

    /// Checks a sign-in's answer against the state kept when it started and the stored passkey; the passkey's
    /// new counters (base64url) to store.
    pub fn finish_sign_in(
        &self,
        kept: &[u8],
        response: &SignInResponse,
        user_handle: &str,
        public_key: &str,
        counters: &str,
    ) -> Result<String, Refused> {
        let started = DiscoverableAuthenticationServerState::decode(kept)
            .map_err(|error| refused("This sign-in was not started here", error))?;
        let handle = decode_user_handle(user_handle)?;
        let stored_key = BASE64URL
            .decode(public_key)
            .map_err(|error| refused("The stored passkey", error))?;
        let static_state = StoredKey::decode(stored_key.as_slice())
            .map_err(|error| refused("The stored passkey", error))?;
        let stored_counters: [u8; 7] = BASE64URL
            .decode(counters)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| Refused("The stored passkey's counters are damaged".to_owned()))?;
        let dynamic_state = DynamicState::decode(stored_counters)
            .map_err(|error| refused("The stored passkey", error))?;
        let mut credential = AuthenticatedCredential::new(
            response.authentication.raw_id(),
            &handle,
            static_state,
            dynamic_state,
        )
        .map_err(|error| refused("The stored passkey", error))?;
        let origins = [self.origin.as_str()];
        let options = AuthenticationVerificationOptions::<&str, &str> {
            allowed_origins: &origins,
            ..AuthenticationVerificationOptions::default()
        };
        started
            .verify(
                &self.rp_id,
                &response.authentication,
                &mut credential,
                &options,
            )
            .map_err(|error| refused("The passkey did not sign in", error))?;
        let counters = credential
            .dynamic_state()
            .encode()
            .map_err(|error| refused("The passkey's counters", error))?;
        Ok(BASE64URL.encode(counters))
    }
}

fn decode_user_handle(user_handle: &str) -> Result<UserHandle16, Refused> {
    let bytes: [u8; USER_HANDLE_BYTES] = BASE64URL
        .decode(user_handle)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| Refused("The person's passkey handle is damaged".to_owned()))?;
    UserHandle16::decode(bytes).map_err(|error| refused("The person's passkey handle", error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passkeys_need_a_domain_and_https_or_localhost() {
        assert!(PasskeyParty::for_public_url("https://anteroom.example.com").is_ok());
        assert!(PasskeyParty::for_public_url("http://localhost:8080").is_ok());
        assert!(PasskeyParty::for_public_url("http://127.0.0.1:8080").is_err());
        assert!(PasskeyParty::for_public_url("https://[::1]:8080").is_err());
        assert!(PasskeyParty::for_public_url("http://anteroom.example.com").is_err());
        assert!(PasskeyParty::for_public_url("not a url").is_err());
    }

    #[test]
    fn a_sign_in_starts_with_options_for_the_browser_and_state_to_keep() {
        let party = PasskeyParty::for_public_url("https://anteroom.example.com").expect("party");
        let (options, kept) = party.start_sign_in().expect("start");
        assert_eq!(options["rpId"], "anteroom.example.com", "{options}");
        assert!(!kept.is_empty());
        assert!(DiscoverableAuthenticationServerState::decode(kept.as_slice()).is_ok());
    }

    #[test]
    fn garbage_is_refused_with_words_not_a_panic() {
        let party = PasskeyParty::for_public_url("https://anteroom.example.com").expect("party");
        assert!(PasskeyParty::read_sign_in(b"{\"id\": 1}").is_err());
        assert!(party.finish_adding(b"\x00\x01", b"{}").is_err());
        let (_, kept) = party
            .start_adding("ada", &PasskeyParty::new_user_handle(), &[])
            .expect("start");
        assert!(party.finish_adding(&kept, b"[]").is_err());
        assert!(party.start_adding("ada", "not-a-handle", &[]).is_err());
    }
}
