//! `anteroom serve` (the default): the web app, the API and the scheduled jobs, until Ctrl-C or SIGTERM.

use std::sync::Arc;

use anteroom_app::{domain::webhook::WebhookEndpoint, store::StoreOptions};
use anteroom_server::{
    ApiConfig, AppState,
    config::ServeArgs,
    events::EventHub,
    jobs::{self, Schedules},
    state::ConnectionLimits,
};
use anyhow::{Context, bail};
use leptos::config::LeptosOptions;
use tokio::net::TcpListener;

use super::{expiry_policy, init_logging, open_store};

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

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
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

/// Whether browsers will send a `Secure` cookie to this URL.
fn is_https_or_loopback(url: &str) -> bool {
    url.starts_with("https://")
        || ["http://127.", "http://localhost", "http://[::1]"]
            .iter()
            .any(|prefix| url.starts_with(prefix))
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
