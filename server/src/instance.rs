//! How a running Anteroom is made: [`Settings`] — every default in [`Settings::default`] — become an
//! [`Instance`] (store, state, router, event relay, scheduled jobs) through [`Instance::build`]. `anteroom serve`,
//! the test kit, the bench and the tests that need a bare instance all go through it.

use std::{
    future::Future,
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, LazyLock},
};

use anteroom_store::{
    Backend, PostgresStore, Store, StoreOptions,
    domain::{
        clock::{Clock, SystemClock},
        expiry::ExpiryPolicy,
        webhook::{WebhookEndpoint, WebhookFormat},
    },
};
use anyhow::Context;
use leptos::config::LeptosOptions;
use sqlx::{PgPool, postgres::PgPoolOptions};
use tokio::net::TcpListener;
use tokio_cron_scheduler::JobScheduler;

use crate::{
    ApiConfig, AppState, MailConfig, SlackConfig,
    events::EventHub,
    jobs::{self, Schedules},
    postgres_events,
    router::site_files::SiteFiles,
    state::ConnectionLimits,
};

/// Where an instance's data lives.
#[derive(Clone)]
pub enum Database {
    /// `sqlite://FILE` (created if missing) or `postgres://…`; on PostgreSQL the instance also opens a
    /// connection of its own for the event relay.
    Url(String),
    /// PostgreSQL pools already open (a test's own schema): one for the store and, when instances share
    /// events, one for the relay.
    Postgres {
        store: PgPool,
        relay: Option<PgPool>,
    },
}

/// Everything an instance is made from. [`Settings::default`] is the one home of every default: the command
/// line's defaults are read from it (`config.rs`), and docs/operations.md lists the same values.
#[derive(Clone)]
pub struct Settings {
    pub database: Database,
    /// Address and port to listen on (port 0: any free port).
    pub addr: SocketAddr,
    /// The base URL producers and browsers use; `http://ADDR` (the bound address) when unset.
    pub public_url: Option<String>,
    /// Folder holding the built browser bundle (`pkg/`) and public files (`ANTEROOM_SITE_ROOT`); `None`: the
    /// site this binary carries (`cargo xtask dist`), else `target/site`.
    pub site_root: Option<PathBuf>,
    /// Accept anonymous producers on the bare `/api/v1/elicitations` routes.
    pub allow_unauthenticated_producers: bool,
    /// PostgreSQL only: the LISTEN/NOTIFY channel instances on one database share their events on.
    pub event_channel: String,
    /// Development mode: no gate probe, and the sign-in cookie is not `Secure`.
    pub development: bool,
    /// The scheduled jobs; `None` runs none (tests drive the jobs themselves).
    pub schedules: Option<Schedules>,
    /// Days resolved and failed rounds are kept.
    pub retention_days: u32,
    pub webhooks: Vec<WebhookEndpoint>,
    /// Key of the `X-Anteroom-Signature` HMAC on outgoing webhooks (unsigned when absent).
    pub webhook_secret: Option<String>,
    /// Largest request body, in KiB.
    pub body_limit_kib: usize,
    pub connections: ConnectionLimits,
    /// Bearer token that admits a scraper to `/metrics` from another host.
    pub metrics_token: Option<String>,
    /// Question windows and their bounds (the operator's `ELICITATION_EXPIRATION_MINUTES`).
    pub expiry: ExpiryPolicy,
    /// Where time comes from (a manual clock in tests).
    pub clock: Arc<dyn Clock>,
    /// The Slack app questions are posted to and answered from.
    pub slack: Option<SlackConfig>,
    /// The SMTP server questions are mailed through.
    pub mail: Option<MailConfig>,
    /// Push questions to the browsers that turned push on.
    pub push: bool,
    /// How people sign in: the company's identity provider, local passwords, or both.
    pub sign_in: crate::pages::SignInConfig,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            database: Database::Url("sqlite://anteroom.sqlite3".to_owned()),
            addr: SocketAddr::from(([127, 0, 0, 1], 3000)),
            public_url: None,
            site_root: None,
            allow_unauthenticated_producers: false,
            event_channel: "anteroom_events".to_owned(),
            development: false,
            schedules: Some(Schedules::default()),
            retention_days: 30,
            webhooks: Vec::new(),
            webhook_secret: None,
            body_limit_kib: 256,
            connections: ConnectionLimits::default(),
            metrics_token: None,
            expiry: ExpiryPolicy::default(),
            clock: Arc::new(SystemClock),
            slack: None,
            mail: None,
            push: true,
            sign_in: crate::pages::SignInConfig::default(),
        }
    }
}

/// The defaults, for the command line to show and fall back on.
pub fn defaults() -> &'static Settings {
    static DEFAULTS: LazyLock<Settings> = LazyLock::new(Settings::default);
    &DEFAULTS
}

impl Settings {
    /// The database URL, when the settings name one.
    pub fn database_url(&self) -> Option<&str> {
        match &self.database {
            Database::Url(url) => Some(url),
            Database::Postgres { .. } => None,
        }
    }

    /// What the API and pages read at run time, for an instance reached at `public_url`.
    pub fn api_config(&self, public_url: &str) -> ApiConfig {
        ApiConfig {
            public_url: public_url.trim_end_matches('/').to_owned(),
            allow_unauthenticated_producers: self.allow_unauthenticated_producers,
            default_window_ms: self.expiry.default_window().num_milliseconds(),
            body_limit: self.body_limit_kib.saturating_mul(1024),
            webhook_secret: self
                .webhook_secret
                .clone()
                .filter(|secret| !secret.is_empty()),
            retention: chrono::Duration::days(i64::from(self.retention_days.max(1))),
            secure_cookies: !self.development,
            connections: self.connections,
            metrics_token: self.metrics_token.clone().filter(|token| !token.is_empty()),
            slack: self.slack.clone(),
            mail: self.mail.clone(),
            development: self.development,
            // Never shorter than a page's provider sign-in, or answers in a page would be refused inside it.
            provider_answers_for: self.sign_in.provider.as_ref().map(|provider| {
                chrono::Duration::hours(i64::from(provider.answer_elsewhere_hours.max(1))).max(
                    chrono::Duration::minutes(i64::from(provider.recheck_minutes)),
                )
            }),
        }
    }

    fn store_options(&self, events: &EventHub) -> StoreOptions {
        StoreOptions {
            clock: Arc::clone(&self.clock),
            expiry: self.expiry,
            observer: Some(Arc::new(events.clone())),
            webhooks: self
                .webhooks
                .iter()
                .cloned()
                .chain(self.slack.as_ref().map(|slack| WebhookEndpoint {
                    url: slack.channel.clone(),
                    format: WebhookFormat::SlackApp,
                }))
                .chain(self.mail.as_ref().map(|_| WebhookEndpoint {
                    url: anteroom_reach::mail::FAN_OUT_ENDPOINT.to_owned(),
                    format: WebhookFormat::Email,
                }))
                // Push needs no settings: a browser turns it on.
                .chain(self.push.then(|| WebhookEndpoint {
                    url: anteroom_reach::push::FAN_OUT_ENDPOINT.to_owned(),
                    format: WebhookFormat::Push,
                }))
                .collect(),
            ..StoreOptions::default()
        }
    }
}

/// Connects to the database at `url` and brings its schema up to date.
pub async fn open_store(url: &str, options: StoreOptions) -> anyhow::Result<Arc<dyn Store>> {
    let store = anteroom_store::connect(url, options)
        .await
        .with_context(|| format!("cannot open the database at {}", redact(url)))?;
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
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

/// A built instance: listening, its jobs scheduled, not yet serving.
pub struct Instance {
    pub state: AppState,
    leptos_options: LeptosOptions,
    /// Where the browser bundle and public files come from.
    pub site: SiteFiles,
    /// The address it listens on (the real port when the settings asked for port 0).
    pub local_addr: SocketAddr,
    listener: TcpListener,
    sign_in: crate::pages::SignInSettings,
    scheduler: Option<JobScheduler>,
    /// A SQLite database's file, marked in use while this instance lives (a restore refuses it meanwhile).
    _in_use: Option<crate::backup::InUse>,
}

impl Instance {
    /// Opens the database, binds the address, and starts the event relay and the scheduled jobs.
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let events = EventHub::default();
        let options = settings.store_options(&events);
        let mut in_use = None;
        let (store, relay_pool): (Arc<dyn Store>, Option<PgPool>) = match &settings.database {
            Database::Url(url) => {
                // Before the first connection: a restore in progress is waited for by nobody, refused here.
                in_use = crate::backup::InUse::mark(url)?;
                let store = open_store(url, options).await?;
                let relay_pool = if store.backend() == Backend::Postgres {
                    let pool = PgPoolOptions::new()
                        .max_connections(2)
                        .connect(url)
                        .await
                        .context("cannot open the event relay's connection")?;
                    Some(pool)
                } else {
                    None
                };
                (store, relay_pool)
            }
            Database::Postgres { store, relay } => {
                let store: Arc<dyn Store> =
                    Arc::new(PostgresStore::from_pool(store.clone(), options));
                store
                    .migrate()
                    .await
                    .context("cannot migrate the database")?;
                (store, relay.clone())
            }
        };

        let listener = TcpListener::bind(settings.addr)
            .await
            .with_context(|| format!("cannot listen on {}", settings.addr))?;
        let local_addr = listener.local_addr()?;
        let public_url = settings
            .public_url
            .clone()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| format!("http://{local_addr}"));
        let site = SiteFiles::choose(settings.site_root.as_deref());
        let leptos_options = LeptosOptions::builder()
            .output_name("anteroom")
            .site_root(match &site {
                SiteFiles::Folder(folder) => folder.to_string_lossy().into_owned(),
                SiteFiles::Embedded(_) => String::new(),
            })
            .site_pkg_dir("pkg")
            .site_addr(local_addr)
            .build();
        let sign_in = crate::pages::SignInSettings::new(&settings.sign_in, &public_url)?;
        let state = AppState::new(store, settings.api_config(&public_url), events);
        if let Some(pool) = relay_pool {
            postgres_events::start(
                &state.events,
                pool,
                &settings.event_channel,
                state.store.clone(),
            )
            .await
            .context("cannot LISTEN for other instances' events")?;
            tracing::info!(channel = %settings.event_channel, "sharing events with other instances");
        }
        let scheduler = match &settings.schedules {
            Some(schedules) => Some(
                jobs::start(&state, schedules, settings.development)
                    .await
                    .context("cannot start the scheduled jobs (check the *_SCHEDULE settings)")?,
            ),
            None => None,
        };
        Ok(Self {
            state,
            leptos_options,
            site,
            local_addr,
            listener,
            sign_in,
            scheduler,
            _in_use: in_use,
        })
    }

    /// Serves until `shutdown` completes, lets in-flight requests finish, then stops the jobs.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        crate::serve(
            self.listener,
            self.state,
            (self.leptos_options, self.site, self.sign_in),
            shutdown,
        )
        .await?;
        if let Some(mut scheduler) = self.scheduler
            && let Err(error) = scheduler.shutdown().await
        {
            tracing::warn!(%error, "scheduled jobs did not stop cleanly");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact("postgres://anteroom:s3cret@db:5432/anteroom"),
            "postgres://anteroom:***@db:5432/anteroom"
        );
        assert_eq!(
            redact("sqlite://anteroom.sqlite3"),
            "sqlite://anteroom.sqlite3"
        );
        assert_eq!(redact("postgres://user@db/x"), "postgres://user@db/x");
    }

    #[test]
    fn api_config_follows_the_settings() {
        let settings = Settings {
            development: true,
            body_limit_kib: 4,
            ..Settings::default()
        };
        let config = settings.api_config("https://anteroom.example/");
        assert_eq!(config.public_url, "https://anteroom.example");
        assert_eq!(config.body_limit, 4096);
        assert!(!config.secure_cookies);
        assert_eq!(config.default_window_ms, 60 * 60 * 1000);
    }
}
