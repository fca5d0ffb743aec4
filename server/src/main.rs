//! Entry point of the `anteroom` binary: parses the command line and runs the chosen sub-command.

use std::io::IsTerminal;

use anteroom_app::{
    domain::expiry::{ExpiryPolicy, OperatorMinutes},
    store::{self, StoreOptions},
};
use anteroom_server::{
    AppState,
    config::{Cli, Command, DatabaseArgs, ServeArgs},
};
use anyhow::Context;
use clap::Parser;
use leptos::config::LeptosOptions;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Serve(args)) => serve(args).await,
        None => serve(cli.serve).await,
        Some(Command::Migrate(args)) => {
            init_logging("info");
            migrate(&args, StoreOptions::default()).await.map(drop)
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&args.log);
    let options = StoreOptions {
        expiry: expiry_policy(args.expiration_minutes.as_deref()),
        ..StoreOptions::default()
    };
    let store = migrate(&args.database, options).await?;

    let site_root = args.site_root.to_string_lossy().into_owned();
    if !args.site_root.join("pkg").is_dir() {
        tracing::warn!(
            site_root,
            "no browser bundle found: pages render but will not hydrate; build with `cargo xtask build`"
        );
    }
    let leptos_options = LeptosOptions::builder()
        .output_name("anteroom")
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .site_addr(args.addr)
        .build();

    let listener = TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let local_addr = listener.local_addr()?;
    tracing::info!(
        "Anteroom is listening on http://{local_addr} ({})",
        store.backend().name()
    );

    anteroom_server::serve(
        listener,
        AppState {
            leptos_options,
            store,
        },
        shutdown_signal(),
    )
    .await?;
    tracing::info!("Anteroom stopped");
    Ok(())
}

/// Reads `ELICITATION_EXPIRATION_MINUTES`: a bad value is logged and ignored, never fatal (SPEC §3).
fn expiry_policy(raw: Option<&str>) -> ExpiryPolicy {
    let parsed = OperatorMinutes::parse(raw);
    if let OperatorMinutes::Ignored { raw, reason } = &parsed {
        tracing::warn!(
            value = %raw,
            "ELICITATION_EXPIRATION_MINUTES ignored because {reason}; using the 60-minute default"
        );
    }
    let policy = parsed.into_policy();
    tracing::info!(
        minutes = policy.default_window().num_minutes(),
        "default question window"
    );
    policy
}

/// Connects to the configured database and brings its schema up to date.
async fn migrate(
    args: &DatabaseArgs,
    options: StoreOptions,
) -> anyhow::Result<std::sync::Arc<dyn store::Store>> {
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
fn redact(url: &str) -> String {
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

fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A second initialisation (tests) is harmless, so its error is ignored.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal())
        .try_init();
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();

    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
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
