//! Command line and environment configuration: every flag has an environment variable of the same meaning.

use std::{net::SocketAddr, path::PathBuf};

use anteroom_domain::access::Role;
use clap::{
    Args, Parser, Subcommand,
    builder::{PossibleValuesParser, TypedValueParser},
};

use crate::{instance::defaults, jobs::Schedules};

mod provider_args;
mod run_args;
pub use provider_args::ProviderArgs;
pub use run_args::RunArgs;

/// Anteroom: where headless AI agents wait for a human.
#[derive(Debug, Parser)]
#[command(
    name = "anteroom",
    version,
    long_version = crate::build_info::LONG_VERSION,
    about,
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Settings for `serve`, accepted here too so that plain `anteroom` serves.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web app and the API (the default).
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit; with --status, list them and change nothing.
    Migrate(MigrateArgs),
    /// Write a consistent copy of a SQLite database (while it serves) to a new file, and check it.
    ///
    /// PostgreSQL is backed up with pg_dump (docs/operations.md#backup-and-restore).
    Backup(BackupArgs),
    /// Put a backup in place of a SQLite database that nothing is serving, after checking it.
    Restore(RestoreArgs),
    /// Ask a running Anteroom's /healthz (for a container's HEALTHCHECK, which has no curl); exit 0 when it
    /// answers.
    Healthcheck(HealthcheckArgs),
    /// Write this binary with a built site appended (what `cargo xtask dist` ships).
    #[command(hide = true, name = "site-bundle")]
    SiteBundle(SiteBundleArgs),
    /// Manage API keys.
    #[command(subcommand)]
    Apikey(ApikeyCommand),
    /// Manage sessions.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Manage the people who sign in to the web app.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage groups of people who answer together (docs/teams.md).
    #[command(subcommand)]
    Group(GroupCommand),
    /// Export or verify the record of decisions (docs/audit.md).
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Ask a person a question, like an MCP server would, and print the answer as JSON.
    ///
    /// Reads ELICITATION_REQUEST_URL, ELICITATION_POLL_URL, ELICITATION_SESSION_ID and ELICITATION_TTL_MS
    /// like the real client. Exit status: 0 accept, 2 decline, 3 cancel (dismissed), 4 expired, 1 error.
    Ask(AskArgs),
    /// Run a stdio MCP server and bring its own questions (`elicitation/create`) to a person through Anteroom.
    ///
    /// Put it in front of the server's command in the harness's configuration: `anteroom wrap --server github --
    /// npx -y @modelcontextprotocol/server-github`. Reads ELICITATION_REQUEST_URL (the session's environment
    /// block). Every other message passes unchanged; the server's stderr is the wrapper's.
    Wrap(WrapArgs),
    /// Print a session's environment block; with --rotate it issues the session a new token (the old one stops
    /// working). Tokens are stored hashed, so a block can only be printed when its token is issued.
    Env(EnvArgs),
    /// A harness's command hook: reads the hook's JSON on stdin, asks a person through Anteroom, prints the
    /// decision. For Codex, whose hooks are commands (docs/hooks.md).
    #[command(subcommand)]
    Hook(HookCommand),
    /// Run an agent under Anteroom: a session of its own (or --session), its hooks and environment for this
    /// run only, its output and life on the session's page, and a Stop that reaches it (docs/runs.md).
    ///
    /// `anteroom run -- claude -p "deploy the branch"`. Reads ANTEROOM_URL and ANTEROOM_API_KEY (a key that may
    /// register sessions). Changes no file of yours. Exit status: the agent's (128 + N when a signal ended it);
    /// 1 when Anteroom refused or could not be reached before the agent started.
    Run(RunArgs),
    /// Write Anteroom into harness configuration files: Claude Code's .mcp.json and Codex's config.toml.
    #[command(subcommand, name = "mcp-config")]
    McpConfig(McpConfigCommand),
}

#[derive(Debug, Clone, Args)]
pub struct MigrateArgs {
    /// List the migrations this binary carries and which the database has applied; apply nothing.
    #[arg(long)]
    pub status: bool,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// The file to write (it must not exist yet).
    #[arg(long)]
    pub to: PathBuf,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// A file `anteroom backup` wrote.
    #[arg(long)]
    pub from: PathBuf,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

#[derive(Debug, Clone, Args)]
pub struct HealthcheckArgs {
    /// The address `anteroom serve` listens on (an unspecified address is asked on loopback).
    #[arg(long, env = "ANTEROOM_ADDR", default_value_t = defaults().addr)]
    pub addr: SocketAddr,
}

#[derive(Debug, Clone, Args)]
pub struct SiteBundleArgs {
    /// The built site (`target/site`).
    #[arg(long)]
    pub site: PathBuf,
    /// The file to write.
    #[arg(long)]
    pub out: PathBuf,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// How `anteroom env` prints the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BlockFormat {
    /// KEY=VALUE lines (a `.env` file).
    Env,
    /// One JSON object.
    Json,
    /// `export KEY='VALUE'` lines for a shell.
    Shell,
}

impl BlockFormat {
    /// The block written this way.
    pub fn render(self, block: &[(&str, String)]) -> String {
        match self {
            Self::Env => block
                .iter()
                .map(|(key, value)| format!("{key}={value}\n"))
                .collect(),
            Self::Json => {
                let object: serde_json::Map<String, serde_json::Value> = block
                    .iter()
                    .map(|(key, value)| {
                        ((*key).to_owned(), serde_json::Value::String(value.clone()))
                    })
                    .collect();
                format!("{}\n", serde_json::Value::Object(object))
            }
            Self::Shell => block
                .iter()
                .map(|(key, value)| format!("export {key}='{}'\n", value.replace('\'', r"'\''")))
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct EnvArgs {
    #[arg(long)]
    pub session: String,
    /// Write the block for this MCP server's own route, so banners name the server.
    #[arg(long)]
    pub server: Option<String>,
    #[arg(long, value_enum, default_value_t = BlockFormat::Env)]
    pub format: BlockFormat,
    /// Issue a new token (required: a stored token cannot be shown again).
    #[arg(long)]
    pub rotate: bool,
    #[command(flatten)]
    pub public: PublicArgs,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

/// What `anteroom mcp-config` changes, and in which files.
#[derive(Debug, Clone, Args)]
pub struct McpConfigFiles {
    /// Only these servers (repeat the flag for several); every stdio server when absent.
    #[arg(long)]
    pub only: Vec<String>,
    /// Print the diff and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// `.mcp.json` / `*.json` (Claude Code; also Gemini CLI's `settings.json`, Copilot CLI's `mcp-config.json`
    /// and OpenCode's `opencode.json`) and `config.toml` / `*.toml` (Codex) files.
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum McpConfigCommand {
    /// Write the session's environment block into the `env` of every stdio server: the block's keys take
    /// Anteroom's values, every other key stays; remote servers are left alone.
    Inject {
        /// Write this session's block: the token the files already carry when it still works (so a second
        /// run changes nothing), else a newly issued one (the old one stops working).
        #[arg(
            long,
            conflicts_with = "env_file",
            required_unless_present = "env_file"
        )]
        session: Option<String>,
        /// Write this block instead (KEY=VALUE lines, as `anteroom env` prints them): a second run then
        /// changes nothing.
        #[arg(long)]
        env_file: Option<std::path::PathBuf>,
        /// The session's own `.env` file: a key it sets wins over Anteroom's value.
        #[arg(long)]
        dotenv: Option<std::path::PathBuf>,
        #[command(flatten)]
        files: McpConfigFiles,
        #[command(flatten)]
        public: PublicArgs,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Run every stdio server's command under `anteroom wrap --server NAME --`.
    Wrap {
        /// How the harness runs Anteroom.
        #[arg(long, default_value = "anteroom")]
        program: String,
        #[command(flatten)]
        files: McpConfigFiles,
    },
    /// Undo `wrap`.
    Unwrap {
        #[command(flatten)]
        files: McpConfigFiles,
    },
    /// Add Anteroom's hooks: Claude Code's `PreToolUse` and `Elicitation` HTTP hooks to its settings files
    /// (`.claude/settings.json`), Codex's `PreToolUse` command hook to its `hooks.json`; a missing file is
    /// created. Every other key and hook stays, and a second run changes nothing. The hooks name no session:
    /// the token in the harness's environment (ANTEROOM_SESSION_TOKEN for Claude Code, the environment block
    /// for Codex) decides which session asks.
    Hooks {
        /// The hooks' timeout in seconds (Anteroom answers before it).
        #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(10..=86_400))]
        timeout: u64,
        /// How Codex runs Anteroom (default: this binary's absolute path, so a `PATH` without it cannot turn
        /// the hook into a failure Codex ignores).
        #[arg(long)]
        program: Option<String>,
        /// Codex's home, whose `config.toml` records the trust in the Codex entry (default `~/.codex`).
        #[arg(long, env = "CODEX_HOME")]
        codex_home: Option<std::path::PathBuf>,
        /// Print the diff and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// `settings.json` / `settings.local.json` (Claude Code), `hooks.json` (Codex) and `.json` files in
        /// `~/.copilot/hooks/` or `.github/hooks/` (Copilot CLI).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        #[command(flatten)]
        public: PublicArgs,
    },
}

#[derive(Debug, Clone, Args)]
pub struct WrapArgs {
    /// The name questions carry (banners say "the NAME server asks…").
    #[arg(long)]
    pub server: Option<String>,
    /// The session's capability URL, from its environment block.
    #[arg(long, env = "ELICITATION_REQUEST_URL", hide_env_values = true)]
    pub request_url: String,
    /// Seconds between the progress notifications a waiting call hears (keep it under the harness's timeout
    /// when the harness resets its timeout on progress).
    #[arg(long, env = "ANTEROOM_WRAP_PROGRESS_SECONDS", default_value_t = anteroom_wrap::relay::PROGRESS_EVERY.as_secs_f64())]
    pub progress_seconds: f64,
    /// The server's command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `--role`: one of the domain's roles, by name (clap lists them in `--help` and in its refusal).
fn role_parser() -> impl TypedValueParser<Value = Role> {
    PossibleValuesParser::new(Role::ALL.iter().map(|role| role.as_str()))
        .try_map(|name| Role::parse(&name).ok_or("not a role"))
}

/// The hook's `timeout` as its harness's settings give it: Anteroom answers before it.
#[derive(Debug, Clone, Copy, Args)]
pub struct HookTimeout {
    /// The hook's timeout in seconds, as in the harness's settings (Gemini CLI's milliseconds divided by 1,000).
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
}

/// The harnesses' command hooks: each reads its event on stdin, asks the session of ELICITATION_REQUEST_URL (the
/// environment block) and prints the decision in its harness's JSON; when Anteroom cannot be reached or nobody
/// answers, it refuses the call saying so (docs/hooks.md).
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Codex's `PreToolUse`: Claude-compatible decision JSON on stdout, exit 0; a refusal is the reason on
    /// stderr and exit 2.
    CodexPreToolUse(HookTimeout),
    /// Codex's `PermissionRequest` (when Codex would ask its user): `decision.behavior` on stdout; a call the
    /// person allowed through the `PreToolUse` hook in the same turn is allowed at once.
    CodexPermissionRequest(HookTimeout),
    /// Copilot CLI's `permissionRequest`: `{"behavior": "allow" | "deny", "message"}` on stdout.
    CopilotPermissionRequest(HookTimeout),
    /// Copilot CLI's `preToolUse`: `{"permissionDecision", "permissionDecisionReason"}` for the calls the policy
    /// asks about, nothing for the others.
    CopilotPreToolUse(HookTimeout),
    /// Cursor's `beforeShellExecution`, `beforeMCPExecution` and `preToolUse`: `{"permission", "user_message",
    /// "agent_message"}`.
    Cursor(HookTimeout),
    /// Gemini CLI's `BeforeTool`, a guard that can only refuse: `{"decision": "deny", "reason"}` when a person
    /// denies, nothing when they allow (Gemini's own approval follows).
    GeminiBeforeTool(HookTimeout),
    /// The hook `anteroom run --offline-ok` gives an agent when Anteroom could not be reached: a call that would
    /// ask a person is refused (the reason on stderr, exit status 2, which Claude Code and Codex both read as a
    /// block); any other passes.
    #[command(hide = true)]
    Offline,
}

#[derive(Debug, Subcommand)]
pub enum ApikeyCommand {
    /// Create an API key and print only the key on stdout.
    Create {
        /// A name that says whose key it is (shown as who answered).
        #[arg(long)]
        name: String,
        /// What the holder may do.
        #[arg(long, default_value = "responder", value_parser = role_parser())]
        role: Role,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a person who can sign in. The password comes from ANTEROOM_PASSWORD, else from the first line
    /// of standard input.
    Add {
        #[arg(long)]
        username: String,
        /// What the holder may do.
        #[arg(long, default_value = "responder", value_parser = role_parser())]
        role: Role,
        /// Their e-mail: how the Slack app recognises them (docs/reach.md).
        #[arg(long)]
        email: Option<String>,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Set or clear a person's e-mail.
    Email {
        #[arg(long)]
        username: String,
        /// The address; leave it out to clear it.
        #[arg(long)]
        email: Option<String>,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Sign a person out in every browser at once and remove their passkeys (their next page asks them to sign
    /// in again).
    SignOut {
        #[arg(long)]
        username: String,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the record from a moment on, oldest first, one entry a line (jsonl) or as CSV.
    Export {
        /// From this moment (RFC 3339, or a date: 2026-12-01); default: the beginning.
        #[arg(long)]
        since: Option<String>,
        #[arg(long, default_value = "jsonl", value_parser = ["jsonl", "csv"])]
        format: String,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Check the whole chain; exits 1 naming the first entry deleted or edited.
    Verify {
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum GroupCommand {
    /// Add a group (if it is new) and the people named to it.
    Add {
        /// The group's name: 1 to 64 letters, digits, '.', '_', '-', '@'.
        name: String,
        /// Usernames to add to it.
        members: Vec<String>,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Take the people named out of a group, or with nobody named remove the group.
    Remove {
        name: String,
        members: Vec<String>,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Print every group and its members, one group a line.
    List {
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Register a session and print its environment block as KEY=VALUE lines.
    Create {
        #[arg(long)]
        id: String,
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        agent: Option<String>,
        /// Write the block for this MCP server's own route, so banners name the server.
        #[arg(long)]
        server: Option<String>,
        /// Post this session's questions to this Slack channel (ID or name) instead of ANTEROOM_SLACK_CHANNEL.
        #[arg(long)]
        slack_channel: Option<String>,
        /// Who answers its questions, comma-separated: user:NAME, group:NAME, key:NAME (default: every
        /// responder).
        #[arg(long, value_delimiter = ',')]
        responders: Vec<String>,
        #[command(flatten)]
        public: PublicArgs,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    /// The question.
    #[arg(long)]
    pub message: String,
    /// The form's JSON Schema, inline or as @FILE. Default: a single free-text answer.
    #[arg(long)]
    pub schema: Option<String>,
    /// The asking tool's name, shown on the banner.
    #[arg(long, default_value = "anteroom ask")]
    pub tool_name: String,
    /// How long to wait for a person, e.g. 90s, 10m, 2h: a fixed deadline (default: ELICITATION_TTL_MS, else
    /// Anteroom's deadline, which a person may extend).
    #[arg(long)]
    pub timeout: Option<String>,
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// Database URL: `sqlite://FILE` (embedded, created if missing) or `postgres://…` for several instances.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value_t = defaults().database_url().unwrap_or_default().to_owned()
    )]
    pub database_url: String,
}

/// How producers reach this instance.
#[derive(Debug, Clone, Args)]
pub struct PublicArgs {
    /// The base URL producers and browsers use (default: http://ADDR).
    #[arg(long, env = "ANTEROOM_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Address and port to listen on.
    #[arg(long, env = "ANTEROOM_ADDR", default_value_t = defaults().addr)]
    pub addr: SocketAddr,

    /// Default window of a question, in minutes, when its producer names no deadline (default 60).
    /// Blank means unset; a value that is not a positive whole number is logged and ignored.
    #[arg(long, env = "ELICITATION_EXPIRATION_MINUTES")]
    pub expiration_minutes: Option<String>,
}

impl PublicArgs {
    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| format!("http://{}", self.addr))
    }
}

/// Settings of the server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub public: PublicArgs,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub sign_in: ProviderArgs,

    /// Folder holding the built browser bundle (`pkg/`) and public files, instead of the site this binary
    /// carries (for development; a binary without one serves target/site).
    #[arg(long, env = "ANTEROOM_SITE_ROOT")]
    pub site_root: Option<PathBuf>,

    /// Accept anonymous producers on the bare /api/v1/elicitations routes (the original, insecure behaviour).
    #[arg(
        long,
        env = "ANTEROOM_ALLOW_UNAUTHENTICATED_PRODUCERS",
        default_value_t = defaults().allow_unauthenticated_producers,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub allow_unauthenticated_producers: bool,

    /// PostgreSQL only: the LISTEN/NOTIFY channel instances on one database share their events on.
    #[arg(
        long,
        env = "ANTEROOM_EVENT_CHANNEL",
        default_value_t = defaults().event_channel.clone()
    )]
    pub event_channel: String,

    /// Development mode: the gate probe does not run (the URL it would probe is your own machine) and the
    /// sign-in cookie is not marked `Secure`.
    #[arg(
        long,
        env = "ANTEROOM_DEVELOPMENT",
        default_value_t = defaults().development,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub development: bool,

    /// Schedule of the expiry sweep (cron, six fields, seconds first).
    #[arg(
        long,
        env = "ANTEROOM_EXPIRE_SCHEDULE",
        default_value_t = default_schedules().expire
    )]
    pub expire_schedule: String,

    /// Schedule of the stranded-marker sweep.
    #[arg(
        long,
        env = "ANTEROOM_STRANDED_SCHEDULE",
        default_value_t = default_schedules().sweep_stranded
    )]
    pub stranded_schedule: String,

    /// Schedule of lease recovery.
    #[arg(long, env = "ANTEROOM_RECOVER_SCHEDULE", default_value_t = default_schedules().recover_leases)]
    pub recover_schedule: String,

    /// Schedule of the gate probe.
    #[arg(long, env = "ANTEROOM_PROBE_SCHEDULE", default_value_t = default_schedules().probe_gate)]
    pub probe_schedule: String,

    /// Schedule of webhook delivery.
    #[arg(
        long,
        env = "ANTEROOM_WEBHOOK_SCHEDULE",
        default_value_t = default_schedules().deliver_webhooks
    )]
    pub webhook_schedule: String,

    /// Schedule of the purge of old finished rounds.
    #[arg(long, env = "ANTEROOM_PURGE_SCHEDULE", default_value_t = default_schedules().purge)]
    pub purge_schedule: String,

    /// Schedule of backups of a SQLite database (six fields, seconds first, e.g. `0 0 3 * * *`); none when unset.
    #[arg(long, env = "ANTEROOM_BACKUP_CRON")]
    pub backup_cron: Option<String>,

    /// Folder the scheduled backups are written to (default: `backups` beside the database file).
    #[arg(long, env = "ANTEROOM_BACKUP_DIR")]
    pub backup_dir: Option<PathBuf>,

    /// How many scheduled backups are kept (the oldest beyond it are removed).
    #[arg(long, env = "ANTEROOM_BACKUP_KEEP", default_value_t = 7)]
    pub backup_keep: usize,

    /// Log lines as `text` (for a terminal) or `json` (one object per line, for a log shipper).
    #[arg(
        long,
        env = "ANTEROOM_LOG_FORMAT",
        value_enum,
        ignore_case = true,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// Days resolved and failed rounds are kept.
    #[arg(long, env = "ANTEROOM_RETENTION_DAYS", default_value_t = defaults().retention_days)]
    pub retention_days: u32,

    /// Webhook receivers, comma-separated: `https://…` gets generic JSON, `slack:https://…` a Slack `{"text"}`.
    #[arg(long, env = "ANTEROOM_WEBHOOKS", value_delimiter = ',')]
    pub webhooks: Vec<String>,

    /// Key of the `X-Anteroom-Signature: sha256=<hmac>` header on webhooks.
    #[arg(long, env = "ANTEROOM_WEBHOOK_SECRET", hide_env_values = true)]
    pub webhook_secret: Option<String>,

    /// A Slack app's bot token (`xoxb-…`): questions are posted to Slack and answered from their buttons
    /// (docs/reach.md#slack). Needs the signing secret and a channel too.
    #[arg(long, env = "ANTEROOM_SLACK_BOT_TOKEN", hide_env_values = true)]
    pub slack_bot_token: Option<String>,

    /// The Slack app's signing secret: proves a button click came from Slack.
    #[arg(long, env = "ANTEROOM_SLACK_SIGNING_SECRET", hide_env_values = true)]
    pub slack_signing_secret: Option<String>,

    /// The Slack channel (id or name) questions are posted to.
    #[arg(long, env = "ANTEROOM_SLACK_CHANNEL")]
    pub slack_channel: Option<String>,

    /// The Slack Web API's base URL.
    #[arg(long, env = "ANTEROOM_SLACK_API_URL", default_value = DEFAULT_SLACK_API_URL)]
    pub slack_api_url: String,

    /// The SMTP server questions are mailed through: `smtps://user:password@host:465`,
    /// `smtp://host:587?tls=required`, or `smtp://host:25` (docs/reach.md#e-mail).
    #[arg(long, env = "ANTEROOM_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,

    /// The sender of those mails.
    #[arg(
        long,
        env = "ANTEROOM_SMTP_FROM",
        default_value = "Anteroom <anteroom@localhost>"
    )]
    pub smtp_from: String,

    /// Largest request body, in KiB.
    #[arg(long, env = "ANTEROOM_BODY_LIMIT_KIB", default_value_t = defaults().body_limit_kib)]
    pub body_limit_kib: usize,

    /// Connections open at once (more wait in the listen queue); kept below the process's file-descriptor
    /// limit.
    #[arg(long, env = "ANTEROOM_MAX_CONNECTIONS", default_value_t = defaults().connections.max_connections)]
    pub max_connections: usize,

    /// Seconds a client has to send a request's headers (and an idle keep-alive connection its next request).
    #[arg(
        long,
        env = "ANTEROOM_HEADER_READ_TIMEOUT_SECS",
        default_value_t = defaults().connections.header_read_timeout.as_secs()
    )]
    pub header_read_timeout_secs: u64,

    /// Seconds a response may take to start beyond its route's own longest wait (a long-poll, a hook, an MCP
    /// call); past them the request is answered 503 and logged with its route.
    #[arg(
        long,
        env = "ANTEROOM_RESPONSE_TIMEOUT_SECS",
        default_value_t = defaults().connections.response_timeout.as_secs()
    )]
    pub response_timeout_secs: u64,

    /// Bearer token a Prometheus scraper sends to read `/metrics` from another host. Without it, `/metrics`
    /// answers callers on this machine and admin API keys only.
    #[arg(long, env = "ANTEROOM_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,

    /// Log filter, in `tracing` env-filter syntax.
    #[arg(long, env = "RUST_LOG", default_value = "info")]
    pub log: String,
}

/// Slack's Web API.
pub const DEFAULT_SLACK_API_URL: &str = "https://slack.com/api";

/// The default job schedules, from [`crate::instance::Settings::default`].
fn default_schedules() -> Schedules {
    defaults().schedules.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::{Cli, defaults};

    /// The README's configuration table, as (environment variable, default) pairs.
    fn documented_defaults() -> Vec<(String, String)> {
        include_str!("../../README.md")
            .lines()
            .filter(|line| line.starts_with("| `--"))
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let env = cells.get(2)?.trim_matches('`').to_owned();
                let default = cells.get(3)?.trim_matches('`').to_owned();
                Some((env, default))
            })
            .collect()
    }

    #[test]
    fn the_documented_defaults_are_the_settings_defaults() {
        let command = Cli::command();
        let serve = command
            .find_subcommand("serve")
            .expect("a serve sub-command");
        let documented = documented_defaults();
        assert!(documented.len() >= 20, "the README's table was found");
        for (env, default) in documented {
            let arg = serve
                .get_arguments()
                .find(|arg| arg.get_env().is_some_and(|name| name == env.as_str()))
                .unwrap_or_else(|| panic!("{env} is documented but is not a setting of `serve`"));
            let actual: Vec<String> = arg
                .get_default_values()
                .iter()
                .map(|value| value.to_string_lossy().into_owned())
                .collect();
            match env.as_str() {
                // Derived at start-up, not a fixed default.
                "ANTEROOM_PUBLIC_URL" => assert_eq!(default, "http://ADDR"),
                "ELICITATION_EXPIRATION_MINUTES" => assert_eq!(
                    default,
                    defaults().expiry.default_window().num_minutes().to_string()
                ),
                _ if default == "none" => {
                    assert!(actual.is_empty(), "{env} has a default: {actual:?}");
                }
                _ => assert_eq!(
                    actual,
                    std::slice::from_ref(&default),
                    "{env}: README says {default}"
                ),
            }
        }
    }

    #[test]
    fn the_block_prints_in_each_format() {
        use super::BlockFormat;
        let block = [("A", "x'y".to_owned()), ("B", "2".to_owned())];
        assert_eq!(BlockFormat::Env.render(&block), "A=x'y\nB=2\n");
        assert_eq!(
            BlockFormat::Json.render(&block),
            "{\"A\":\"x'y\",\"B\":\"2\"}\n"
        );
        assert_eq!(
            BlockFormat::Shell.render(&block),
            "export A='x'\\''y'\nexport B='2'\n"
        );
    }
}
