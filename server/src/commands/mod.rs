//! What every sub-command shares: opening the database, reading the operator's expiry setting, logging, and
//! keeping database passwords out of messages.

use std::{io::IsTerminal, sync::Arc};

use anteroom_app::{
    domain::expiry::{ExpiryPolicy, OperatorMinutes},
    store::{self, Store, StoreOptions},
};
use anteroom_server::config::DatabaseArgs;
use anyhow::Context;

pub mod apikey;
pub mod serve;
pub mod session;
pub mod user;

/// Reads `ELICITATION_EXPIRATION_MINUTES`: a bad value is logged and ignored, never fatal (docs/operations.md#configuration).
pub(crate) fn expiry_policy(raw: Option<&str>) -> ExpiryPolicy {
    let parsed = OperatorMinutes::parse(raw);
    if let OperatorMinutes::Ignored { raw, reason } = &parsed {
        tracing::warn!(
            value = %raw,
            "ELICITATION_EXPIRATION_MINUTES ignored because {reason}; using the 60-minute default"
        );
    }
    parsed.into_policy()
}

/// Connects to the configured database and brings its schema up to date.
pub(crate) async fn open_store(
    args: &DatabaseArgs,
    options: StoreOptions,
) -> anyhow::Result<Arc<dyn Store>> {
    let store = store::connect(&args.database_url, options)
        .await
        .with_context(|| format!("cannot open the database at {}", redact(&args.database_url)))?;
    store
        .migrate()
        .await
        .context("cannot migrate the database")?;
    tracing::info!(
        database = store.backend().name(),
        "database schema is up to date"
    );
    Ok(store)
}

/// Hides a password in a database URL before it reaches a log or an error message.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _password)) => {
                    format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..])
                }
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Logs go to stderr, so sub-commands keep stdout for their output.
pub(crate) fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A second initialisation (tests) is harmless, so its error is ignored.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgres://anteroom:s3cret@db:5432/anteroom"),
            "postgres://anteroom:***@db:5432/anteroom"
        );
        assert_eq!(
            redact("postgres://postgres@127.0.0.1/test"),
            "postgres://postgres@127.0.0.1/test"
        );
        assert_eq!(
            redact("sqlite://anteroom.sqlite3"),
            "sqlite://anteroom.sqlite3"
        );
    }
}
