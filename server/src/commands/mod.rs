//! What every sub-command shares: opening the database, reading the operator's expiry setting, and logging.

use std::{io::IsTerminal, sync::Arc};

use anteroom_domain::expiry::{ExpiryPolicy, OperatorMinutes};
use anteroom_server::config::DatabaseArgs;
use anteroom_store::{Store, StoreOptions};

pub mod apikey;
pub mod audit;
pub mod env;
pub mod group;
pub mod hook;
pub mod mcp_config;
pub mod serve;
pub mod session;
pub mod user;
pub mod wrap;

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
    anteroom_server::instance::open_store(&args.database_url, options).await
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
