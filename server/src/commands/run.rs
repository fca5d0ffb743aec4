//! `anteroom run -- COMMAND`: runs an agent under Anteroom (docs/runs.md). It takes a session (a new one, or
//! `--session`), starts the agent with the session's environment block and, for Claude Code, hooks of this run's
//! own (changing no file of the user's), tees the agent's output to the terminal and to the session's page, keeps
//! a heartbeat and a stop request open, and reports how the agent ended; the agent's exit status is its own.

#![allow(
    clippy::print_stderr,
    reason = "what `anteroom run` says about the run goes to the terminal's stderr, beside the agent's"
)]

use std::{
    collections::BTreeMap,
    os::unix::process::ExitStatusExt,
    path::PathBuf,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use anteroom_domain::run::{
    HEARTBEAT_EVERY, LINE_CHARS, OUTPUT_KEPT, next_boundary, readable_line,
};
use anteroom_installers::{Change, Format, HookFile, HookInstall, install_hooks, rewrite};
use anteroom_server::config::RunArgs;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How often output is sent while the agent prints.
const REPORT_EVERY: Duration = Duration::from_secs(1);
/// How long a stop waits after SIGINT before SIGTERM, and after SIGTERM before SIGKILL.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// The longest line read before it is taken as a line anyway (a harness's JSON event can be large).
const LINE_BYTES: usize = 256 * 1024;

pub async fn run(args: RunArgs) -> anyhow::Result<u8> {
    let (program, _) = args
        .command
        .split_first()
        .context("name the agent's command after `--`")?;
    let client = Client::new(&args.url, &args.api_key)?;
    let host = host_name();
    // Nothing is started unless Anteroom took the run (or --offline-ok says to start it with hooks that refuse):
    // an agent that would ask nobody is what this command prevents.
    let taken = async {
        let session = take_session(&client, &args, &host).await?;
        let started = client
            .post(
                &format!("/api/v1/s/{}/run", session.token),
                &json!({"command": cut(&shown_command(&args.command), 2_000), "host": cut(&host, 255)}),
            )
            .await?;
        anyhow::Ok((session, started))
    }
    .await;
    let (session, started) = match taken {
        Ok(taken) => taken,
        Err(error) if args.offline_ok => return run_offline(&args, &client.base, &error).await,
        Err(error) => {
            return Err(error.context(format!(
                "Anteroom at {} did not take this run, so the agent was not started",
                client.base
            )));
        }
    };
    let run_id = started["run_id"]
        .as_str()
        .context("Anteroom's reply to the run's start has no run_id")?
        .to_owned();
    eprintln!(
        "anteroom run: session {} — {}/sessions/{}",
        session.id, session.public_base, session.id
    );

    let scratch = tempfile::Builder::new()
        .prefix("anteroom-run-")
        .tempdir()
        .context("cannot make the run's scratch folder")?;
    let command = agent_command(&args, Some(&session), scratch.path().to_path_buf())?;
    let mut child = tokio::process::Command::from(command)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok());

    let tail = Arc::new(Mutex::new(Pending::default()));
    let stdout = child.stdout.take().context("the agent's stdout")?;
    let stderr = child.stderr.take().context("the agent's stderr")?;
    let pumps = [
        tokio::spawn(pump(stdout, tokio::io::stdout(), Arc::clone(&tail))),
        tokio::spawn(pump(stderr, tokio::io::stderr(), Arc::clone(&tail))),
    ];
    let run_path = format!("/api/v1/s/{}/run/{run_id}", session.token);
    let stop = Arc::new(tokio::sync::Notify::new());
    let reporter = tokio::spawn(report(
        client.clone(),
        run_path.clone(),
        Arc::clone(&tail),
        Arc::clone(&stop),
    ));
    let listener = tokio::spawn(hear_stop(
        client.clone(),
        run_path.clone(),
        Arc::clone(&stop),
    ));

    let mut signals = Signals::new()?;
    // A stop goes SIGINT, then SIGTERM five seconds later, then SIGKILL five seconds after that.
    let mut stop_signals =
        [rustix::process::Signal::TERM, rustix::process::Signal::KILL].into_iter();
    let mut stopped = false;
    let mut next_step: Option<tokio::time::Instant> = None;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.context("cannot wait for the agent")?,
            signal = signals.next() => send(pid, signal),
            () = stop.notified(), if !stopped => {
                eprintln!("anteroom run: stopped from Anteroom; interrupting the agent");
                send(pid, rustix::process::Signal::INT);
                stopped = true;
                next_step = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
            }
            () = sleep_until(next_step) => match stop_signals.next() {
                Some(signal) => {
                    send(pid, signal);
                    next_step = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
                }
                None => next_step = None,
            },
        }
    };
    reporter.abort();
    listener.abort();
    // What the agent printed last: its pipes close with it, unless something it started holds them.
    for pump in pumps {
        let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
    }
    let rest = tail
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let end = json!({
        "exit_code": status.code(),
        "signal": status.signal(),
        "stopped": stopped,
        "output": rest,
    });
    let mut said = false;
    for attempt in 0..5u32 {
        match client.post(&format!("{run_path}/end"), &end).await {
            Ok(_) => {
                said = true;
                break;
            }
            Err(error) if attempt == 4 => {
                eprintln!("anteroom run: could not tell Anteroom how the agent ended: {error:#}");
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1 << attempt)).await,
        }
    }
    if said {
        eprintln!(
            "anteroom run: the agent {}; the session says so",
            ended(&status)
        );
    }
    drop(scratch);
    Ok(exit_status(&status))
}

/// `--offline-ok` when Anteroom did not take the run: the agent starts without a session, its hooks refuse every
/// call that would ask a person with the reason, and its exit status is `run`'s. Nothing is reported.
async fn run_offline(args: &RunArgs, base: &str, why: &anyhow::Error) -> anyhow::Result<u8> {
    eprintln!(
        "anteroom run: Anteroom at {base} did not take this run ({why:#}); --offline-ok: the agent starts, and \
         every call that would ask a person is refused"
    );
    let scratch = tempfile::Builder::new()
        .prefix("anteroom-run-")
        .tempdir()
        .context("cannot make the run's scratch folder")?;
    let mut command = agent_command(args, None, scratch.path().to_path_buf())?;
    command.env(
        super::hook::OFFLINE_REASON,
        format!(
            "Anteroom ({base}) could not be reached when this run started, so nobody can be asked and the call is \
             not allowed"
        ),
    );
    let mut child = tokio::process::Command::from(command)
        .spawn()
        .with_context(|| format!("cannot start {}", args.command.join(" ")))?;
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
    let mut signals = Signals::new()?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.context("cannot wait for the agent")?,
            signal = signals.next() => send(pid, signal),
        }
    };
    drop(scratch);
    Ok(exit_status(&status))
}

/// The shell's view of how the agent ended.
fn exit_status(status: &std::process::ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code.rem_euclid(256)).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}

fn ended(status: &std::process::ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was ended by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn send(pid: Option<i32>, signal: rustix::process::Signal) {
    // The child has not been reaped (its `wait` has not returned), so the pid is still its own.
    if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// The signals `run` passes on to the agent, so it never outlives `run`.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("cannot watch SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("cannot watch SIGTERM")?,
            hangup: signal(SignalKind::hangup()).context("cannot watch SIGHUP")?,
        })
    }

    async fn next(&mut self) -> rustix::process::Signal {
        use rustix::process::Signal;
        tokio::select! {
            _ = self.interrupt.recv() => Signal::INT,
            _ = self.terminate.recv() => Signal::TERM,
            _ = self.hangup.recv() => Signal::HUP,
        }
    }
}

/// Anteroom's API, as `run` calls it: every call bounded in time, every refusal read as its message.
#[derive(Clone)]
struct Client {
    base: String,
    api_key: String,
    http: reqwest::Client,
}

impl Client {
    fn new(url: &str, api_key: &str) -> anyhow::Result<Self> {
        let parsed =
            url::Url::parse(url).with_context(|| format!("ANTEROOM_URL {url:?} is not a URL"))?;
        anyhow::ensure!(
            matches!(parsed.scheme(), "http" | "https"),
            "ANTEROOM_URL must be an http or https URL"
        );
        anyhow::ensure!(!api_key.is_empty(), "ANTEROOM_API_KEY is empty");
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .timeout(Duration::from_secs(45))
                .build()?,
        })
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let reply = request
            .bearer_auth(&self.api_key)
            .send()
            .await
            .context("Anteroom is not reachable")?;
        let status = reply.status();
        let body: Value = reply.json().await.unwrap_or_default();
        if !status.is_success() {
            bail!(
                "{status}: {}",
                body["message"].as_str().unwrap_or("no reason given")
            );
        }
        Ok(body)
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }
}

/// The session the run asks in: its id, producer token, environment block, and the URL people open it at.
struct RunSession {
    id: String,
    token: String,
    environment: BTreeMap<String, String>,
    public_base: String,
}

async fn take_session(client: &Client, args: &RunArgs, host: &str) -> anyhow::Result<RunSession> {
    let issued = match &args.session {
        Some(id) => match client.get(&format!("/api/v1/sessions/{id}")).await {
            Ok(existing) => {
                let live = matches!(
                    existing["run"]["state"].as_str(),
                    Some("running" | "needs_input")
                );
                if live {
                    bail!(
                        "session {id} already has a live run on {}; stop it first",
                        existing["run"]["host"]
                            .as_str()
                            .unwrap_or("another machine")
                    );
                }
                let query = args
                    .server_name
                    .as_ref()
                    .map(|server| {
                        format!(
                            "?server={}",
                            url::form_urlencoded::byte_serialize(server.as_bytes())
                                .collect::<String>()
                        )
                    })
                    .unwrap_or_default();
                client
                    .post(&format!("/api/v1/sessions/{id}/token{query}"), &json!({}))
                    .await?
            }
            Err(error) if error.to_string().starts_with("404") => {
                register(client, args, id).await?
            }
            Err(error) => return Err(error),
        },
        None => {
            let id = new_session_id(host);
            register(client, args, &id).await?
        }
    };
    let token = issued["producer_token"]
        .as_str()
        .context("Anteroom's reply has no producer_token")?
        .to_owned();
    let environment: BTreeMap<String, String> = issued["environment"]
        .as_object()
        .context("Anteroom's reply has no environment block")?
        .iter()
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
        .collect();
    let id = environment
        .get("ELICITATION_SESSION_ID")
        .cloned()
        .context("the environment block names no session")?;
    let public_base = environment
        .get("ELICITATION_REQUEST_URL")
        .and_then(|url| url.split_once("/api/v1/s/"))
        .map(|(base, _)| base.to_owned())
        .context("the environment block has no request URL")?;
    Ok(RunSession {
        id,
        token,
        environment,
        public_base,
    })
}

async fn register(client: &Client, args: &RunArgs, id: &str) -> anyhow::Result<Value> {
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| cut(&shown_command(&args.command), 200));
    let agent = args
        .command
        .first()
        .map(|program| cut(program.rsplit('/').next().unwrap_or(program), 100));
    client
        .post(
            "/api/v1/sessions",
            &json!({"id": id, "title": title, "agent": agent, "server": args.server_name}),
        )
        .await
}

/// A session id of the host, the time and a random part, within the ids Anteroom takes.
fn new_session_id(host: &str) -> String {
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(40)
        .collect();
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "run-{}-{}-{}",
        if host.is_empty() { "host" } else { &host },
        anteroom_domain::clock::Clock::now(&anteroom_domain::clock::SystemClock)
            .format("%Y%m%d-%H%M%S"),
        random.get(..6).unwrap_or_default()
    )
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

/// The command line as Anteroom shows it: words quoted where a shell would need it (the server masks credentials).
fn shown_command(command: &[String]) -> String {
    command
        .iter()
        .map(|word| {
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
            {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn host_name() -> String {
    let name = rustix::system::uname();
    name.nodename().to_string_lossy().into_owned()
}

/// The agent's command with what this run gives it: the environment block, and for Claude Code a settings file
/// of the run's own with Anteroom's hooks (Claude Code merges `--settings` over the user's own settings).
fn agent_command(
    args: &RunArgs,
    session: Option<&RunSession>,
    scratch: PathBuf,
) -> anyhow::Result<std::process::Command> {
    let (program, rest) = args
        .command
        .split_first()
        .context("name the agent's command after `--`")?;
    let mut command = std::process::Command::new(program);
    if let Some(session) = session {
        command.envs(&session.environment);
    }
    let install = HookInstall {
        public_url: session
            .map(|session| session.public_base.clone())
            .unwrap_or_default(),
        timeout_seconds: args.hook_timeout,
        program: super::mcp_config::this_binary()?,
        token_variable: anteroom_api::views::SESSION_TOKEN_VARIABLE.to_owned(),
    };
    match program.rsplit('/').next().unwrap_or(program) {
        "claude" => {
            let settings = match session {
                Some(_) => install_hooks("", HookFile::ClaudeSettings, &install)?,
                // Offline: a command hook that refuses what would ask a person, with the reason.
                None => json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{
                    "type": "command", "command": format!("{} hook offline", install.program), "timeout": 30
                }]}]}})
                .to_string(),
            };
            let path = scratch.join("claude-settings.json");
            std::fs::write(&path, settings)
                .with_context(|| format!("cannot write {}", path.display()))?;
            command.arg("--settings").arg(&path);
            let cwd = std::env::current_dir().context("cannot read the working folder")?;
            if let (Some(session), Some(servers)) = (
                session,
                claude_servers(&cwd, std::env::home_dir().as_deref())?,
            ) {
                let config = run_servers(Format::Json, &servers, session)?;
                let path = scratch.join("claude-mcp.json");
                std::fs::write(&path, config)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                command
                    .arg("--mcp-config")
                    .arg(&path)
                    .arg("--strict-mcp-config");
            }
        }
        "codex" => {
            let user_home = match std::env::var_os("CODEX_HOME") {
                Some(home) => PathBuf::from(home),
                None => std::env::home_dir()
                    .context("no home folder to find Codex's in: set CODEX_HOME")?
                    .join(".codex"),
            };
            let home =
                layered_codex_home(&user_home, &scratch.join("codex-home"), &install, session)?;
            command.env("CODEX_HOME", home);
        }
        _ => {}
    }
    command.args(rest);
    Ok(command)
}

/// A `CODEX_HOME` of the run's own, layered over the user's: every entry of the user's home is linked into it
/// (so logins, sessions and logs are the user's own), except `hooks.json`, which is the user's with Anteroom's
/// entry added, and `config.toml`, a copy of the user's that trusts that entry and carries the user's trust in
/// their own entries over to the new file's path. The user's files are read, never written; their trust
/// setting is not weakened (no bypass flag): the run's entry is trusted by its hash, as `mcp-config hooks`
/// would record it.
fn layered_codex_home(
    user_home: &std::path::Path,
    home: &std::path::Path,
    install: &HookInstall,
    session: Option<&RunSession>,
) -> anyhow::Result<PathBuf> {
    use anteroom_installers::{codex, is_anteroom_handler};

    std::fs::create_dir_all(home).with_context(|| format!("cannot make {}", home.display()))?;
    if let Ok(entries) = std::fs::read_dir(user_home) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == "config.toml" || name == "hooks.json" {
                continue;
            }
            std::os::unix::fs::symlink(entry.path(), home.join(&name)).with_context(|| {
                format!(
                    "cannot link {} into the run's Codex home",
                    entry.path().display()
                )
            })?;
        }
    }
    let read = |name: &str| std::fs::read_to_string(user_home.join(name)).unwrap_or_default();
    let hooks_path = home.join("hooks.json");
    let hooks = install_hooks(&read("hooks.json"), HookFile::CodexHooks, install)?;
    std::fs::write(&hooks_path, &hooks)
        .with_context(|| format!("cannot write {}", hooks_path.display()))?;
    // Trust keys name the hooks.json's path: the user's own entries keep their places (Anteroom's is added
    // after them, or replaces its own in place), so their trust moves to the run's file as it is.
    let user_hooks = format!("\"{}:", user_home.join("hooks.json").display());
    let run_hooks = format!("\"{}:", hooks_path.display());
    let config = read("config.toml").replace(&user_hooks, &run_hooks);
    // Its stdio MCP servers ask in the run's session, under `anteroom wrap` (offline: as they are).
    let config = match session {
        Some(session) => run_servers(Format::Toml, &config, session)?,
        None => config,
    };
    let entries = codex::entries_to_trust(&hooks, &hooks_path, is_anteroom_handler);
    let config = codex::record_trust(&config, &entries)?;
    std::fs::write(home.join("config.toml"), config)
        .with_context(|| format!("cannot write {}", home.join("config.toml").display()))?;
    Ok(home.to_path_buf())
}

/// `config` (a `.mcp.json`-shaped text or a Codex `config.toml`) with every stdio server given the run's
/// environment block and put under `anteroom wrap` (this binary, by its absolute path), so a server's own
/// questions reach the run's session; remote servers are left alone.
fn run_servers(format: Format, config: &str, session: &RunSession) -> anyhow::Result<String> {
    let block: Vec<(String, String)> = session
        .environment
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let injected = rewrite(
        format,
        config,
        &Change::Inject {
            block,
            dotenv: BTreeMap::new(),
        },
        &[],
    )?;
    let program = std::env::current_exe()
        .context("cannot find this binary's path to wrap the MCP servers with")?;
    Ok(rewrite(
        format,
        &injected,
        &Change::Wrap {
            program: program.display().to_string(),
        },
        &[],
    )?)
}

/// The MCP servers Claude Code would start in `cwd`, as one `.mcp.json`-shaped text, or `None` when it has
/// none: the user's (`~/.claude.json` `mcpServers`), the project's `.mcp.json` servers the user approved
/// (`enableAllProjectMcpServers` or `enabledMcpjsonServers` in a settings file; a project's servers never start
/// unapproved because a run listed them), and the local ones (`~/.claude.json` `projects[cwd].mcpServers`), a
/// later scope's server replacing an earlier one of the same name, as Claude Code does. The run passes them
/// with `--strict-mcp-config`, so each is started once, wrapped.
fn claude_servers(
    cwd: &std::path::Path,
    home: Option<&std::path::Path>,
) -> anyhow::Result<Option<String>> {
    let read = |path: PathBuf| -> Value {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null)
    };
    let user = home
        .map(|home| read(home.join(".claude.json")))
        .unwrap_or(Value::Null);
    let settings: Vec<Value> = [
        Some(cwd.join(".claude/settings.local.json")),
        Some(cwd.join(".claude/settings.json")),
        home.map(|home| home.join(".claude/settings.json")),
    ]
    .into_iter()
    .flatten()
    .map(read)
    .collect();
    let project_entry = &user["projects"][cwd.display().to_string()];
    let approved = |name: &str| {
        let listed = |value: &Value, key: &str| {
            value[key]
                .as_array()
                .is_some_and(|names| names.iter().any(|listed| listed == name))
        };
        let all = settings
            .iter()
            .chain(std::iter::once(project_entry))
            .any(|value| value["enableAllProjectMcpServers"] == true);
        let denied = settings
            .iter()
            .chain(std::iter::once(project_entry))
            .any(|value| listed(value, "disabledMcpjsonServers"));
        !denied
            && (all
                || settings
                    .iter()
                    .chain(std::iter::once(project_entry))
                    .any(|value| listed(value, "enabledMcpjsonServers")))
    };
    let mut servers = serde_json::Map::new();
    let mut add = |found: &Value, keep: &dyn Fn(&str) -> bool| {
        for (name, server) in found.as_object().into_iter().flatten() {
            if keep(name) {
                servers.insert(name.clone(), server.clone());
            }
        }
    };
    add(&user["mcpServers"], &|_| true);
    add(&read(cwd.join(".mcp.json"))["mcpServers"], &approved);
    add(&project_entry["mcpServers"], &|_| true);
    if servers.is_empty() {
        return Ok(None);
    }
    Ok(Some(serde_json::to_string_pretty(&json!({
        "mcpServers": servers
    }))?))
}

/// Output read from the agent and not yet sent: whole readable lines, at most [`OUTPUT_KEPT`] bytes (older
/// lines give way), and how much gave way while Anteroom could not be reached.
#[derive(Default)]
struct Pending {
    text: String,
    dropped: usize,
}

impl Pending {
    fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        // Trimmed only once it holds twice the tail: a flood of short lines costs one move per 64 KiB, not one
        // per line.
        if self.text.len() > 2 * OUTPUT_KEPT {
            self.trim();
        }
    }

    /// Puts back what could not be sent, before what came since.
    fn restore(&mut self, unsent: String) {
        let since = std::mem::replace(&mut self.text, unsent);
        self.text.push_str(&since);
        self.trim();
    }

    /// Keeps the last [`OUTPUT_KEPT`] bytes, in whole lines, and counts what gave way.
    fn trim(&mut self) {
        if self.text.len() <= OUTPUT_KEPT {
            return;
        }
        let from = next_boundary(&self.text, self.text.len() - OUTPUT_KEPT);
        let cut = self
            .text
            .get(from..)
            .and_then(|rest| rest.find('\n'))
            .map_or(self.text.len(), |at| from + at + 1);
        self.dropped += cut;
        self.text.drain(..cut);
    }

    /// What to send: the kept tail, after a line saying how much gave way since the last send.
    fn take(&mut self) -> String {
        self.trim();
        let mut text = std::mem::take(&mut self.text);
        if self.dropped > 0 {
            text.insert_str(
                0,
                &format!(
                    "[anteroom run: {} bytes of output were not sent: more came in a second than the session keeps, or \
                     Anteroom could not be reached]\n",
                    std::mem::take(&mut self.dropped)
                ),
            );
        }
        text
    }
}

/// Copies one of the agent's streams to the terminal as it comes, and its lines, made readable, to `tail`.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    tail: Arc<Mutex<Pending>>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut terminal_gone = false;
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let bytes = &buffer[..read];
        if !terminal_gone && (to.write_all(bytes).await.is_err() || to.flush().await.is_err()) {
            // Nobody reads `run`'s own output any more: the agent's still goes to Anteroom.
            terminal_gone = true;
        }
        for piece in bytes.split_inclusive(|byte| *byte == b'\n') {
            line.extend_from_slice(piece);
            if piece.ends_with(b"\n") || line.len() >= LINE_BYTES {
                keep_line(&line, &tail);
                line.clear();
            }
        }
    }
    if !line.is_empty() {
        keep_line(&line, &tail);
    }
}

fn keep_line(line: &[u8], tail: &Mutex<Pending>) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    // Parsed before the lock is taken: the agent's output is not ours to trust with a held lock.
    if let Some(readable) = readable_line(text) {
        let readable: String = readable.chars().take(LINE_CHARS * 4).collect();
        tail.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(&readable);
    }
}

/// Sends the output each second while the agent prints, a heartbeat every 30 s when it does not, and hears
/// about a stop in each reply; while Anteroom cannot be reached it backs off and keeps the newest output.
async fn report(
    client: Client,
    run_path: String,
    tail: Arc<Mutex<Pending>>,
    stop: Arc<tokio::sync::Notify>,
) {
    let mut last_sent = tokio::time::Instant::now();
    let mut failures: u32 = 0;
    let mut next_try = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(REPORT_EVERY).await;
        let now = tokio::time::Instant::now();
        if now < next_try {
            continue;
        }
        let output = tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if output.is_empty() && now.duration_since(last_sent) < HEARTBEAT_EVERY {
            continue;
        }
        match client
            .post(&format!("{run_path}/report"), &json!({"output": output}))
            .await
        {
            Ok(reply) => {
                if failures > 0 {
                    eprintln!("anteroom run: Anteroom is reachable again");
                }
                failures = 0;
                last_sent = now;
                if reply["stop_requested_by"].is_string() {
                    stop.notify_one();
                }
            }
            Err(error) => {
                if failures == 0 {
                    eprintln!(
                        "anteroom run: cannot report to Anteroom ({error:#}); the agent goes on, its questions \
                         cannot be asked until Anteroom is back, and its output is kept for then"
                    );
                }
                failures += 1;
                next_try = now + Duration::from_secs(1 << failures.min(5));
                tail.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .restore(output);
            }
        }
    }
}

/// Holds a long-poll open for a stop, so a Stop pressed anywhere reaches the agent within a second.
async fn hear_stop(client: Client, run_path: String, stop: Arc<tokio::sync::Notify>) {
    let mut failures: u32 = 0;
    loop {
        match client.get(&format!("{run_path}/control?wait=25")).await {
            Ok(reply) if reply["stop_requested_by"].is_string() => {
                stop.notify_one();
                return;
            }
            Ok(reply)
                if reply["run"]["state"]
                    .as_str()
                    .is_some_and(|state| !matches!(state, "running" | "needs_input")) =>
            {
                return;
            }
            Ok(_) => failures = 0,
            Err(_) => {
                failures += 1;
                tokio::time::sleep(Duration::from_secs(1 << failures.min(5))).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_shown_as_a_shell_would_read_it() {
        let words = ["claude", "-p", "deploy it", "--x=1", "it's"].map(str::to_owned);
        assert_eq!(
            shown_command(&words),
            r"claude -p 'deploy it' --x=1 'it'\''s'"
        );
    }

    #[test]
    fn new_session_ids_are_ids_anteroom_takes() {
        let id = new_session_id("build box.example/7");
        assert!(id.starts_with("run-buildboxexample7-"), "{id}");
        assert!(anteroom_domain::ids::SessionId::parse(id).is_ok());
        assert!(new_session_id("").starts_with("run-host-"));
    }

    #[test]
    fn pending_output_stays_bounded_and_says_what_gave_way() {
        let mut pending = Pending::default();
        let line = "x".repeat(999);
        for _ in 0..1_000 {
            pending.push(&line);
            assert!(pending.text.len() <= 2 * OUTPUT_KEPT);
        }
        let unsent = pending.take();
        assert!(unsent.len() <= OUTPUT_KEPT + 200);
        assert!(
            unsent.starts_with("[anteroom run: "),
            "{}",
            unsent.lines().next().unwrap_or_default()
        );
        pending.restore(unsent);
        assert!(pending.text.len() <= OUTPUT_KEPT);
        assert!(!pending.take().is_empty());
        assert!(pending.take().is_empty());
    }

    #[test]
    fn the_runs_codex_home_trusts_its_hook_and_leaves_the_users_alone() {
        let user = tempfile::tempdir().expect("user's home");
        let scratch = tempfile::tempdir().expect("scratch");
        let user_hooks = user.path().join("hooks.json");
        let own_hook = r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "audit.sh"}]}]}}"#;
        std::fs::write(&user_hooks, own_hook).expect("hooks.json");
        let config = format!(
            "model = \"m\"\n\n[mcp_servers.github]\ncommand = \"npx\"\nargs = [\"server-github\"]\n\n\
             [hooks.state.\"{}:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:mine\"\n",
            user_hooks.display()
        );
        std::fs::write(user.path().join("config.toml"), &config).expect("config.toml");
        std::fs::write(user.path().join("auth.json"), "{}").expect("auth.json");
        let install = HookInstall {
            public_url: "http://anteroom".into(),
            timeout_seconds: 60,
            program: "/bin/anteroom".into(),
            token_variable: "ANTEROOM_SESSION_TOKEN".into(),
        };
        let session = RunSession {
            id: "s1".into(),
            token: "ars_x".into(),
            environment: BTreeMap::from([(
                "ELICITATION_REQUEST_URL".to_owned(),
                "http://anteroom/api/v1/s/ars_x/elicitations".to_owned(),
            )]),
            public_base: "http://anteroom".into(),
        };
        let home = layered_codex_home(
            user.path(),
            &scratch.path().join("codex"),
            &install,
            Some(&session),
        )
        .expect("layered");
        // The user's files are as they were.
        assert_eq!(
            std::fs::read_to_string(&user_hooks).expect("read"),
            own_hook
        );
        assert_eq!(
            std::fs::read_to_string(user.path().join("config.toml")).expect("read"),
            config
        );
        // Their login is linked, not copied.
        assert!(
            std::fs::symlink_metadata(home.join("auth.json"))
                .expect("auth")
                .file_type()
                .is_symlink()
        );
        let hooks = std::fs::read_to_string(home.join("hooks.json")).expect("run's hooks");
        assert!(
            hooks.contains("audit.sh") && hooks.contains("/bin/anteroom hook codex-pre-tool-use")
        );
        let run_config = std::fs::read_to_string(home.join("config.toml")).expect("run's config");
        let run_hooks = home.join("hooks.json").display().to_string();
        assert!(
            run_config.contains(&format!("{run_hooks}:pre_tool_use:0:0")),
            "{run_config}"
        );
        assert!(run_config.contains("sha256:mine"));
        assert!(
            run_config.contains(&format!("{run_hooks}:pre_tool_use:1:0")),
            "{run_config}"
        );
        assert!(!run_config.contains(&user_hooks.display().to_string()));
        // Its MCP server asks in the run's session, wrapped.
        assert!(
            run_config.contains("\"wrap\", \"--server\", \"github\", \"--\", \"npx\""),
            "{run_config}"
        );
        assert!(
            run_config.contains("ars_x/servers/github/elicitations"),
            "{run_config}"
        );
    }

    #[test]
    fn claudes_servers_are_the_users_the_approved_projects_and_the_local_ones() {
        let home = tempfile::tempdir().expect("home");
        let cwd = tempfile::tempdir().expect("project");
        let server = |command: &str| json!({"command": command});
        assert!(
            claude_servers(cwd.path(), Some(home.path()))
                .expect("none")
                .is_none()
        );
        std::fs::write(
            cwd.path().join(".mcp.json"),
            json!({"mcpServers": {"approved": server("a"), "unapproved": server("u"), "same": server("project")}})
                .to_string(),
        )
        .expect(".mcp.json");
        std::fs::create_dir_all(cwd.path().join(".claude")).expect(".claude");
        std::fs::write(
            cwd.path().join(".claude/settings.local.json"),
            json!({"enabledMcpjsonServers": ["approved", "same"]}).to_string(),
        )
        .expect("settings");
        let projects =
            json!({cwd.path().display().to_string(): {"mcpServers": {"same": server("local")}}});
        std::fs::write(
            home.path().join(".claude.json"),
            json!({"mcpServers": {"mine": server("m")}, "projects": projects}).to_string(),
        )
        .expect(".claude.json");
        let text = claude_servers(cwd.path(), Some(home.path()))
            .expect("read")
            .expect("servers");
        let servers: Value = serde_json::from_str(&text).expect("JSON");
        let names: Vec<&String> = servers["mcpServers"]
            .as_object()
            .expect("servers")
            .keys()
            .collect();
        assert_eq!(names, ["mine", "approved", "same"]);
        assert_eq!(servers["mcpServers"]["same"]["command"], "local");
    }

    #[test]
    fn the_exit_status_is_the_agents() {
        let status = |raw: i32| std::process::ExitStatus::from_raw(raw);
        assert_eq!(exit_status(&status(3 << 8)), 3);
        assert_eq!(exit_status(&status(9)), 137);
        assert_eq!(ended(&status(2)), "was ended by signal 2");
    }
}
