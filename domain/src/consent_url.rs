//! URL-mode consent addresses as a browser reads them: parsed with a WHATWG URL parser (the `url` crate), so
//! the host a person is shown is the host the browser opens.

use url::Url;

use super::ManagedInputError;

/// Parses a URL-mode address, refusing what a person could be fooled by: anything but http(s), user
/// credentials (`https://docs.github.com@evil.example/`), and backslashes, which browsers read as `/` in
/// the authority (`https://evil.example\@docs.github.com/` opens `evil.example`).
pub fn parse(raw: &str) -> Result<Url, String> {
    if raw.contains('\\') {
        return Err("must not contain a backslash (browsers read it as `/`)".to_owned());
    }
    let url = Url::parse(raw).map_err(|error| format!("is not a URL: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http(s) URL".to_owned());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password before the host".to_owned());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("must name a host".to_owned());
    }
    Ok(url)
}

/// Refuses a URL-mode request's address with a `validation_error` naming the request.
pub fn check(key: &str, raw: &str) -> Result<(), ManagedInputError> {
    parse(raw).map(drop).map_err(|problem| {
        ManagedInputError::validation_with(
            format!("Request {key}: `url` {problem}."),
            serde_json::json!({ "property": format!("requests.{key}.url") }),
        )
    })
}

/// The host the browser will open, lower-case (IDNs in punycode), or empty when the address does not parse.
pub fn host(raw: &str) -> String {
    parse(raw)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_mode_host_spoofing_is_refused() {
        for spoof in [
            "https://evil.example\\@docs.github.com/login",
            "https://docs.github.com@evil.example/login",
            "https://user:pw@example.com/",
            "javascript:alert(1)",
            "ftp://example.com/",
            "https://",
        ] {
            assert!(parse(spoof).is_err(), "{spoof}");
        }
    }

    #[test]
    fn the_shown_host_is_the_opened_host() {
        assert_eq!(host("https://Example.COM:8443/a?b#c"), "example.com");
        assert_eq!(host("https://xn--pple-43d.com/login"), "xn--pple-43d.com");
        assert_eq!(host("https://аpple.com/"), "xn--pple-43d.com");
        assert_eq!(host("https://[::1]:8080/"), "[::1]");
        assert_eq!(host("https://evil.example\\@docs.github.com/"), "");
    }
}
