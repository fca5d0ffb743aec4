//! Entry point of the `anteroom` binary: parses the command line and runs the chosen sub-command.

use std::{io::IsTerminal, process::ExitCode, sync::Arc};

use anteroom_app::{
    domain::{
        access::{ApiKey, Role},
        expiry::{ExpiryPolicy, OperatorMinutes},
        ids::SessionId,
        session::NewSession,
        webhook::WebhookEndpoint,
    },
    store::{self, Store, StoreOptions},
};
use anteroom_server::{
    ApiConfig, AppState,
    api::views::environment_block,
    ask,
    config::{
        ApikeyCommand, Cli, Command, DatabaseArgs, PublicArgs, ServeArgs, SessionCommand,
        UserCommand,
    },
    credentials,
    events::EventHub,
    jobs::{self, Schedules},
    state::ConnectionLimits,
};
use anyhow::{Context, bail};
use clap::Parser;
use leptos::config::LeptosOptions;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Some(Command::Serve(args)) => serve(*args).await.map(|()| 0),
        None => serve(cli.serve).await.map(|()| 0),
        Some(Command::Migrate(args)) => {
            init_logging("info");
            open_store(&args, StoreOptions::default()).await.map(|_| 0)
        }
        Some(Command::Apikey(ApikeyCommand::Create {
            name,
            role,
            database,
        })) => create_api_key(&name, &role, &database).await.map(|()| 0),
        Some(Command::Session(SessionCommand::Create {
            id,
            title,
            agent,
            server,
            public,
            database,
        })) => create_session(id, title, agent, server, &public, &database)
            .await
            .map(|()| 0),
        Some(Command::User(UserCommand::Add {
            username,
            role,
            database,
        })) => add_user(&username, &role, &database).await.map(|()| 0),
        Some(Command::Ask(args)) => ask::run(args).await,
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("anteroom: {error:#}");
            ExitCode::from(ask::EXIT_ERROR)
        }
    }
}

/// The connection cap, lowered below the file-descriptor limit (raised to its hard limit first) so that the
/// database, the log and accept itself always have descriptors left.
fn connection_cap(configured: usize) -> usize {
    const HEADROOM: u64 = 256;
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => {
            let fits =
                usize::try_from(limit.saturating_sub(HEADROOM).max(16)).unwrap_or(usize::MAX);
            if fits < configured {
                tracing::warn!(
                    configured,
                    file_descriptors = limit,
                    "ANTEROOM_MAX_CONNECTIONS is above what the file-descriptor limit allows; using {fits}"
                );
            }
            configured.min(fits)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot read the file-descriptor limit");
            configured
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&args.log);
    let expiry = expiry_policy(args.public.expiration_minutes.as_deref());
    let events = EventHub::default();
    let mut webhooks = Vec::new();
    for raw in args.webhooks.iter().filter(|raw| !raw.trim().is_empty()) {
        match WebhookEndpoint::parse(raw) {
            Some(endpoint) => webhooks.push(endpoint),
            None => bail!("ANTEROOM_WEBHOOKS: {raw:?} is not an http(s) URL (or slack:URL)"),
        }
    }
    let store = open_store(
        &args.database,
        StoreOptions {
            expiry,
            observer: Some(Arc::new(events.clone())),
            webhooks,
            ..StoreOptions::default()
        },
    )
    .await?;

    let site_root = args.site_root.to_string_lossy().into_owned();
    if !args.site_root.join("pkg").is_dir() {
        tracing::warn!(
            site_root,
            "no browser bundle found: pages render but will not hydrate; build with `cargo xtask build`"
        );
    }
    let addr = args.public.addr;
    let leptos_options = LeptosOptions::builder()
        .output_name("anteroom")
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let mut config = ApiConfig::new(&args.public.public_url());
    config.allow_unauthenticated_producers = args.allow_unauthenticated_producers;
    config.default_window_ms = expiry.default_window().num_milliseconds();
    config.body_limit = args.body_limit_kib.saturating_mul(1024);
    config.webhook_secret = args.webhook_secret.clone().filter(|s| !s.is_empty());
    config.retention = chrono::Duration::days(i64::from(args.retention_days.max(1)));
    config.secure_cookies = !args.development;
    config.connections = ConnectionLimits {
        max_connections: connection_cap(args.max_connections),
        header_read_timeout: std::time::Duration::from_secs(args.header_read_timeout_secs.max(1)),
    };
    config.metrics_token = args.metrics_token.clone().filter(|token| !token.is_empty());
    if config.secure_cookies && !is_https_or_loopback(&config.public_url) {
        tracing::warn!(
            public_url = %config.public_url,
            "the sign-in cookie is Secure, so browsers only send it over HTTPS (or to localhost): serve \
             Anteroom behind HTTPS and set ANTEROOM_PUBLIC_URL=https://…, or use --development"
        );
    }
    if config.allow_unauthenticated_producers {
        tracing::warn!(
            "ANTEROOM_ALLOW_UNAUTHENTICATED_PRODUCERS is on: anyone who can reach this host can post questions \
             to any existing session and poll any question by id on /api/v1/elicitations"
        );
    }

    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local_addr = listener.local_addr()?;
    tracing::info!(
        "Anteroom is listening on http://{local_addr} ({}); producers use {}",
        store.backend().name(),
        config.public_url
    );
    anteroom_server::pages::announce_first_run(store.as_ref(), &config.public_url)
        .await
        .context("cannot prepare the first-run sign-in link")?;
    let state = AppState::new(leptos_options, store, config, events);
    if args.database.database_url.starts_with("postgres") {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .connect(&args.database.database_url)
            .await
            .context("cannot open the event relay's connection")?;
        anteroom_server::relay::start(&state.events, pool, &args.event_channel)
            .await
            .context("cannot LISTEN for other instances' events")?;
        tracing::info!(channel = %args.event_channel, "sharing events with other instances");
    }
    let schedules = Schedules {
        expire: args.expire_schedule.clone(),
        sweep_stranded: args.stranded_schedule.clone(),
        recover_leases: args.recover_schedule.clone(),
        probe_gate: args.probe_schedule.clone(),
        deliver_webhooks: args.webhook_schedule.clone(),
        purge: args.purge_schedule.clone(),
    };
    let mut scheduler = jobs::start(&state, &schedules, args.development)
        .await
        .context("cannot start the scheduled jobs (check the *_SCHEDULE settings)")?;
    anteroom_server::serve(listener, state, shutdown_signal()).await?;
    if let Err(error) = scheduler.shutdown().await {
        tracing::warn!(%error, "scheduled jobs did not stop cleanly");
    }
    tracing::info!("Anteroom stopped");
    Ok(())
}

/// Reads `ELICITATION_EXPIRATION_MINUTES`: a bad value is logged and ignored, never fatal (docs/operations.md#configuration).
fn expiry_policy(raw: Option<&str>) -> ExpiryPolicy {
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
async fn open_store(args: &DatabaseArgs, options: StoreOptions) -> anyhow::Result<Arc<dyn Store>> {
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

async fn create_api_key(name: &str, role: &str, database: &DatabaseArgs) -> anyhow::Result<()> {
    let Some(role) = Role::parse(role) else {
        bail!("--role must be admin, responder or viewer");
    };
    if name.trim().is_empty() || name.len() > 100 {
        bail!("--name must be 1 to 100 characters");
    }
    let store = open_store(database, StoreOptions::default()).await?;
    let secret = credentials::generate(credentials::API_KEY_PREFIX);
    let key = ApiKey {
        id: uuid::Uuid::now_v7().to_string(),
        name: name.to_owned(),
        role,
    };
    store
        .create_api_key(&key, &credentials::hash(&secret))
        .await?;
    println!("{secret}");
    Ok(())
}

async fn add_user(username: &str, role: &str, database: &DatabaseArgs) -> anyhow::Result<()> {
    let Some(role) = Role::parse(role) else {
        bail!("--role must be admin, responder or viewer");
    };
    let password = match std::env::var("ANTEROOM_PASSWORD") {
        Ok(password) => password,
        Err(_) => {
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .context("cannot read the password from standard input")?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        }
    };
    let store = open_store(database, StoreOptions::default()).await?;
    let user = anteroom_server::pages::add_user(store.as_ref(), username, &password, role).await?;
    eprintln!("added {} ({})", user.username, user.role.as_str());
    Ok(())
}

/// Whether browsers will send a `Secure` cookie to this URL.
fn is_https_or_loopback(url: &str) -> bool {
    url.starts_with("https://")
        || ["http://127.", "http://localhost", "http://[::1]"]
            .iter()
            .any(|prefix| url.starts_with(prefix))
}

async fn create_session(
    id: String,
    title: Option<String>,
    agent: Option<String>,
    server: Option<String>,
    public: &PublicArgs,
    database: &DatabaseArgs,
) -> anyhow::Result<()> {
    let store = open_store(database, StoreOptions::default()).await?;
    let id = SessionId::parse(id)?;
    store
        .register_session(NewSession {
            id: id.clone(),
            title,
            agent,
        })
        .await?;
    let token = credentials::generate(credentials::SESSION_TOKEN_PREFIX);
    store
        .set_producer_token(&id, Some(&credentials::hash(&token)))
        .await?;
    let mut config = ApiConfig::new(&public.public_url());
    config.default_window_ms = expiry_policy(public.expiration_minutes.as_deref())
        .default_window()
        .num_milliseconds();
    for (key, value) in environment_block(&config, id.as_str(), &token, server.as_deref()) {
        println!("{key}={value}");
    }
    Ok(())
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

/// Logs go to stderr, so sub-commands keep stdout for their output.
fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A second initialisation (tests) is harmless, so its error is ignored.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
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
