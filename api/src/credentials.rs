//! Secrets handed out once and stored only as hashes: producer session tokens and API keys.

use uuid::Uuid;

/// A signed-in browser session's CSRF token, as the web layer hands it to the API on each request.
#[derive(Debug, Clone)]
pub struct CsrfToken(pub String);

/// Prefix of a session's producer token (it travels in the URL path).
pub const SESSION_TOKEN_PREFIX: &str = "ars_";
/// Prefix of an API key (it travels in `Authorization: Bearer`).
pub const API_KEY_PREFIX: &str = "ark_";
/// Prefix of a single-use answer token (it travels in the path of `/answer/{token}`, in mails and pushes).
pub const ANSWER_TOKEN_PREFIX: &str = "ara_";
/// Prefix of a single-use offer to link a Slack account (it travels in the query of `/profile?slack_link=`).
pub const SLACK_LINK_TOKEN_PREFIX: &str = "arl_";

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

/// `text` with every credential in it cut to its prefix (`/api/v1/s/ars_…/elicitations`, `ark_…`), for logs
/// and for anything printed where others may read it. A prefix is recognised as a client could have sent it:
/// any case, the `_` possibly percent-encoded (`ars%5F…`); the credential is everything up to the next
/// character that cannot be part of one.
pub fn mask_credentials(text: &str) -> String {
    MaskedCredentials(text).to_string()
}

/// `text` as [`mask_credentials`] prints it, written straight into the formatter: every request's path is
/// logged through this, and a span that nobody records never formats it at all.
pub struct MaskedCredentials<'a>(pub &'a str);

impl std::fmt::Display for MaskedCredentials<'_> {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut rest = self.0;
        while let Some((at, prefix, prefix_len)) = next_credential(rest) {
            let (before, from) = rest.split_at(at);
            out.write_str(before)?;
            out.write_str(prefix)?;
            out.write_str("…")?;
            let secret = from.as_bytes().get(prefix_len..).unwrap_or_default();
            let secret_len = secret
                .iter()
                .take_while(|&&byte| {
                    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'%')
                })
                .count();
            // Both lengths count ASCII bytes only, so the split falls on a character boundary.
            rest = from.split_at(prefix_len + secret_len).1;
        }
        out.write_str(rest)
    }
}

/// Where the first credential prefix in `text` starts, which one it is, and how many bytes it takes there.
fn next_credential(text: &str) -> Option<(usize, &'static str, usize)> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|at| {
        let candidate = bytes.get(at..)?;
        [
            SESSION_TOKEN_PREFIX,
            API_KEY_PREFIX,
            ANSWER_TOKEN_PREFIX,
            SLACK_LINK_TOKEN_PREFIX,
        ]
        .into_iter()
        .find_map(|prefix| {
            let stem = prefix.trim_end_matches('_');
            let (head, after) = candidate.split_at_checked(stem.len())?;
            if !head.eq_ignore_ascii_case(stem.as_bytes()) {
                return None;
            }
            if after.starts_with(b"_") {
                Some(stem.len() + 1)
            } else if after
                .get(..3)
                .is_some_and(|code| code.eq_ignore_ascii_case(b"%5f"))
            {
                Some(stem.len() + 3)
            } else {
                None
            }
            .map(|len| (at, prefix, len))
        })
    })
}

/// The shapes of other services' secrets an agent may print (provider API keys, GitHub and Slack tokens, cloud
/// keys, bearer headers, private keys): each match keeps its first group, the part that says what it was.
static OTHER_SECRETS: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"\b(sk-(?:ant-|proj-)?)[A-Za-z0-9_-]{20,}",
        r"|\b(gh[pousr]_)[A-Za-z0-9]{30,}",
        r"|\b(github_pat_)[A-Za-z0-9_]{30,}",
        r"|\b(xox[abposr]-|xapp-)[A-Za-z0-9-]{10,}",
        r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\b(AIza)[0-9A-Za-z_-]{35}",
        r"|\b((?:sk|rk)_live_)[0-9A-Za-z]{20,}",
        r"|\b((?i:bearer)\s+)[A-Za-z0-9._~+/-]{20,}=*",
        r"|(-----BEGIN [A-Z ]*PRIVATE KEY-----)[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)",
    ))
    .ok()
});

/// `text` with Anteroom's credentials cut to their prefix ([`mask_credentials`]) and other services' secrets
/// too (an OpenAI or Anthropic key, a GitHub or Slack token, an AWS access key id, a bearer header, a private
/// key block): for what an agent prints or runs, which the session's viewers read. A secret split across two
/// reports of output is not recognised.
pub fn mask_secrets(text: &str) -> String {
    let masked = mask_credentials(text);
    let Some(secrets) = OTHER_SECRETS.as_ref() else {
        return masked;
    };
    secrets
        .replace_all(&masked, |found: &regex::Captures<'_>| {
            let kind = found
                .iter()
                .skip(1)
                .flatten()
                .next()
                .map_or("", |group| group.as_str());
            format!("{kind}…")
        })
        .into_owned()
}

/// The stored form of a secret (see [`anteroom_domain::access::hash_secret`]).
pub fn hash(secret: &str) -> String {
    anteroom_domain::access::hash_secret(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_services_secrets_in_an_agents_output_keep_only_what_they_were() {
        let aws = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
        let output = format!(
            "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123\n\
             ANTHROPIC_API_KEY=sk-ant-api03-AAAABBBBCCCCDDDDEEEE-ffff\n\
             token ghp_0123456789abcdefghijABCDEFGHIJ0123 and {aws}\n\
             curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig' https://x\n\
             -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n\
             done: see /api/v1/s/ars_0123456789abcdef/run"
        );
        let masked = mask_secrets(&output);
        for secret in [
            "abcdefghijklmnopqrstuvwxyz0123",
            "AAAABBBBCCCC",
            "0123456789abcdefghij",
            "IOSFODNN7EXAMPLE",
            "eyJhbGciOiJIUzI1NiJ9",
            "b3BlbnNzaC1rZXk",
            "0123456789abcdef",
        ] {
            assert!(!masked.contains(secret), "{secret} in {masked}");
        }
        for kept in [
            "OPENAI_API_KEY=sk-proj-…",
            "sk-ant-…",
            "ghp_…",
            "AKIA…",
            "Bearer …",
            "-----BEGIN OPENSSH PRIVATE KEY-----…",
            "ars_…",
            "done: see",
        ] {
            assert!(masked.contains(kept), "{kept} not in {masked}");
        }
        assert_eq!(mask_secrets("sk-short and ghp_x"), "sk-short and ghp_x");
    }

    #[test]
    fn answer_tokens_in_paths_are_masked() {
        let token = generate(ANSWER_TOKEN_PREFIX);
        assert_eq!(
            mask_credentials(&format!("/answer/{token}")),
            "/answer/ara_…"
        );
    }

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

    #[test]
    fn credentials_are_cut_to_their_prefix_wherever_they_appear() {
        assert_eq!(
            mask_credentials("/api/v1/s/ars_SECRETSECRET/servers/gh/elicitations/r1"),
            "/api/v1/s/ars_…/servers/gh/elicitations/r1"
        );
        assert_eq!(mask_credentials("/api/v1/s/ark_abc"), "/api/v1/s/ark_…");
        assert_eq!(
            mask_credentials("/api/v1/s/ars%5Fabc/x"),
            "/api/v1/s/ars_…/x"
        );
        assert_eq!(mask_credentials("/sessions/s1"), "/sessions/s1");
        assert_eq!(
            mask_credentials("/x/ARS_abc/ArK%5fz/ars"),
            "/x/ars_…/ark_…/ars"
        );
        assert_eq!(mask_credentials("/ars%5/arsX/é/"), "/ars%5/arsX/é/");
        assert_eq!(mask_credentials(""), "");
        assert_eq!(
            mask_credentials("+  \"URL\": \"http://h/api/v1/s/ars_0f9e-x/servers/a\",\n é ars_"),
            "+  \"URL\": \"http://h/api/v1/s/ars_…/servers/a\",\n é ars_…"
        );
    }
}
