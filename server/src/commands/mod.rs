//! What every sub-command shares: opening the database, reading the operator's expiry setting, and logging.

use std::{io::IsTerminal, sync::Arc};

use anteroom_domain::expiry::{ExpiryPolicy, OperatorMinutes};
use anteroom_server::config::{DatabaseArgs, LogFormat};
use anteroom_store::{Store, StoreOptions};

pub mod apikey;
pub mod audit;
pub mod backup;
pub mod env;
pub mod group;
pub mod healthcheck;
pub mod hook;
pub mod mcp_config;
pub mod migrate;
pub mod run;
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

/// Connects to the database without migrating it, for commands that only read it (`backup`, `migrate
/// --status`): a SQLite path where there is no database is an error, not a new empty one.
pub(crate) async fn connect_existing(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    use anyhow::Context;
    if anteroom_store::Backend::from_url(url)? == anteroom_store::Backend::Sqlite {
        anteroom_server::backup::existing_sqlite_file(url)?;
    }
    anteroom_store::connect(url, StoreOptions::default())
        .await
        .with_context(|| {
            format!(
                "cannot open the database at {}",
                anteroom_server::instance::redact(url)
            )
        })
}

/// Logs go to stderr, so sub-commands keep stdout for their output: as text, or as one JSON object per line
/// (`ANTEROOM_LOG_FORMAT=json`: the message, the level, the target and every field a key of its own).
pub(crate) fn init_logging(filter: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logger = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second initialisation (tests) is harmless, so its error is ignored.
    let _ = match format {
        LogFormat::Text => logger.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => logger
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// `ANTEROOM_LOG_FORMAT` for the commands that take no `--log-format` (every one but `serve`).
pub(crate) fn log_format_from_env() -> LogFormat {
    match std::env::var("ANTEROOM_LOG_FORMAT") {
        Ok(format) if format.trim().eq_ignore_ascii_case("json") => LogFormat::Json,
        _ => LogFormat::Text,
    }
}
