//! `anteroom serve` (the default): the web app, the API and the scheduled jobs, until Ctrl-C or SIGTERM.

use anteroom_domain::webhook::WebhookEndpoint;
use anteroom_server::backup::BackupSchedule;
use anteroom_server::{
    MailConfig, SlackConfig,
    config::ServeArgs,
    instance::{Database, Instance, Settings},
    jobs::Schedules,
    pages::{ProviderConfig, SignInConfig},
    state::ConnectionLimits,
};
use anteroom_store::Backend;
use anyhow::{Context, bail};
use std::path::PathBuf;

use super::{expiry_policy, init_logging};

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

/// The settings the command line (flags and environment) describes.
fn settings(args: &ServeArgs) -> anyhow::Result<Settings> {
    let mut webhooks = Vec::new();
    for raw in args.webhooks.iter().filter(|raw| !raw.trim().is_empty()) {
        match WebhookEndpoint::parse(raw) {
            Some(endpoint) => webhooks.push(endpoint),
            None => bail!("ANTEROOM_WEBHOOKS: {raw:?} is not an http(s) URL (or slack:URL)"),
        }
    }
    Ok(Settings {
        slack: slack_app(args)?,
        mail: mail(args)?,
        database: Database::Url(args.database.database_url.clone()),
        addr: args.public.addr,
        public_url: Some(args.public.public_url()),
        site_root: args.site_root.clone(),
        allow_unauthenticated_producers: args.allow_unauthenticated_producers,
        event_channel: args.event_channel.clone(),
        development: args.development,
        schedules: Some(Schedules {
            expire: args.expire_schedule.clone(),
            sweep_stranded: args.stranded_schedule.clone(),
            recover_leases: args.recover_schedule.clone(),
            probe_gate: args.probe_schedule.clone(),
            deliver_webhooks: args.webhook_schedule.clone(),
            purge: args.purge_schedule.clone(),
            backup: backup_schedule(args)?,
            ..Schedules::default()
        }),
        retention_days: args.retention_days,
        webhooks,
        webhook_secret: args.webhook_secret.clone(),
        body_limit_kib: args.body_limit_kib,
        connections: ConnectionLimits {
            max_connections: connection_cap(args.max_connections),
            header_read_timeout: std::time::Duration::from_secs(
                args.header_read_timeout_secs.max(1),
            ),
            response_timeout: std::time::Duration::from_secs(args.response_timeout_secs.max(1)),
        },
        metrics_token: args.metrics_token.clone(),
        expiry: expiry_policy(args.public.expiration_minutes.as_deref()),
        sign_in: sign_in(args)?,
        ..Settings::default()
    })
}

/// The scheduled backup, when `ANTEROOM_BACKUP_CRON` asks for one (SQLite only: PostgreSQL has pg_dump).
fn backup_schedule(args: &ServeArgs) -> anyhow::Result<Option<BackupSchedule>> {
    let Some(cron) = args
        .backup_cron
        .clone()
        .filter(|cron| !cron.trim().is_empty())
    else {
        return Ok(None);
    };
    let url = &args.database.database_url;
    if Backend::from_url(url)? != Backend::Sqlite {
        bail!(
            "ANTEROOM_BACKUP_CRON backs up a SQLite database; back PostgreSQL up with pg_dump \
             (docs/operations.md#backup-and-restore)"
        );
    }
    let folder = match &args.backup_dir {
        Some(folder) => folder.clone(),
        None => anteroom_server::backup::sqlite_file(url)?
            .context("ANTEROOM_BACKUP_CRON: an in-memory database has nothing to back up")?
            .parent()
            .map_or_else(|| PathBuf::from("backups"), |parent| parent.join("backups")),
    };
    Ok(Some(BackupSchedule {
        cron,
        folder,
        keep: args.backup_keep,
    }))
}

/// The Slack app, when its token, secret and channel are all given (some but not all is a mistake worth
/// stopping for).
fn slack_app(args: &ServeArgs) -> anyhow::Result<Option<SlackConfig>> {
    let given = |value: &Option<String>| value.clone().filter(|value| !value.trim().is_empty());
    match (
        given(&args.slack_bot_token),
        given(&args.slack_signing_secret),
        given(&args.slack_channel),
    ) {
        (None, None, None) => Ok(None),
        (Some(bot_token), Some(signing_secret), Some(channel)) => {
            let api_url = url::Url::parse(&args.slack_api_url)
                .ok()
                .filter(|url| matches!(url.scheme(), "http" | "https"))
                .with_context(|| {
                    format!(
                        "ANTEROOM_SLACK_API_URL: {:?} is not an http(s) URL",
                        args.slack_api_url
                    )
                })?;
            Ok(Some(SlackConfig {
                bot_token,
                signing_secret,
                channel,
                api_url: api_url.as_str().trim_end_matches('/').to_owned(),
            }))
        }
        _ => bail!(
            "the Slack app needs ANTEROOM_SLACK_BOT_TOKEN, ANTEROOM_SLACK_SIGNING_SECRET and \
             ANTEROOM_SLACK_CHANNEL together"
        ),
    }
}

/// How people sign in: the identity provider when its issuer, client id and secret are given (some but not
/// all is a mistake worth stopping for), and whether passwords still sign in.
fn sign_in(args: &ServeArgs) -> anyhow::Result<SignInConfig> {
    let options = &args.sign_in;
    let given = |value: &Option<String>| value.clone().filter(|value| !value.trim().is_empty());
    let secret = match (
        &options.oidc_client_secret_file,
        given(&options.oidc_client_secret),
    ) {
        (Some(file), None) => Some(
            std::fs::read_to_string(file)
                .with_context(|| {
                    format!(
                        "ANTEROOM_OIDC_CLIENT_SECRET_FILE: cannot read {}",
                        file.display()
                    )
                })?
                .trim()
                .to_owned(),
        ),
        (Some(_), Some(_)) => {
            bail!("give ANTEROOM_OIDC_CLIENT_SECRET or ANTEROOM_OIDC_CLIENT_SECRET_FILE, not both")
        }
        (None, secret) => secret,
    };
    let provider = match (
        given(&options.oidc_issuer),
        given(&options.oidc_client_id),
        secret,
    ) {
        (None, None, None) => None,
        (Some(issuer), Some(client_id), Some(client_secret)) => Some(ProviderConfig {
            issuer,
            client_id,
            client_secret,
            scopes: options.oidc_scopes.clone(),
            groups_claim: options.oidc_groups_claim.clone(),
            mapping: options.oidc_groups.clone().unwrap_or_default(),
            default_role: options.oidc_default_role.clone(),
            name: options.oidc_name.clone(),
            recheck_minutes: options.oidc_recheck_minutes,
            answer_elsewhere_hours: options.oidc_answer_elsewhere_hours,
            max_age_minutes: options.oidc_max_age_minutes,
            prompt: given(&options.oidc_prompt),
        }),
        _ => bail!(
            "sign-in through an identity provider needs ANTEROOM_OIDC_ISSUER, ANTEROOM_OIDC_CLIENT_ID and \
             ANTEROOM_OIDC_CLIENT_SECRET (or _FILE) together"
        ),
    };
    if provider.is_none() && !options.password_sign_in {
        bail!(
            "ANTEROOM_PASSWORD_SIGN_IN=false needs an identity provider (ANTEROOM_OIDC_ISSUER), or nobody could sign in"
        );
    }
    Ok(SignInConfig {
        provider,
        passwords: options.password_sign_in,
    })
}

/// The SMTP server, checked now so a mistake stops the start rather than every mail.
fn mail(args: &ServeArgs) -> anyhow::Result<Option<MailConfig>> {
    let Some(smtp_url) = args.smtp_url.clone().filter(|url| !url.trim().is_empty()) else {
        return Ok(None);
    };
    let config = MailConfig {
        smtp_url,
        from: args.smtp_from.clone(),
    };
    anteroom_reach::mail::Mailer::new(&config)?;
    Ok(Some(config))
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&args.log, args.log_format);
    let settings = settings(&args)?;
    let instance = Instance::build(settings).await?;
    if !instance.site.has_bundle() {
        tracing::warn!(
            site = %instance.site.describe(),
            "no browser bundle found: pages render but will not hydrate; build with `cargo xtask build`, or \
             deploy the one-file binary `cargo xtask dist` makes"
        );
    }
    let config = &instance.state.config;
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
    tracing::info!(
        "Anteroom is listening on http://{} ({}); producers use {}",
        instance.local_addr,
        instance.state.store.backend().name(),
        config.public_url
    );
    anteroom_server::pages::announce_first_run(instance.state.store.as_ref(), &config.public_url)
        .await
        .context("cannot prepare the first-run sign-in link")?;
    instance.run(shutdown_signal()).await?;
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
