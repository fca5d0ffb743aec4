//! `anteroom run -- COMMAND`: runs an agent under Anteroom (docs/runs.md). It takes a session (`anteroom`),
//! starts the agent with what the run gives it (`harness`: the environment block, and for Claude Code and Codex
//! hooks and wrapped MCP servers in files of the run's own, changing no file of the user's), tees its output to
//! the terminal and to the session (`output`), passes signals and a Stop on to it, and reports how it ended; the
//! agent's exit status is `run`'s.

#![allow(
    clippy::print_stderr,
    reason = "what `anteroom run` says about the run goes to the terminal's stderr, beside the agent's"
)]

mod acp;
mod anteroom;
mod codex_app;
mod harness;
mod output;
mod stdio_peer;

use std::{
    os::unix::process::ExitStatusExt,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use anteroom_server::config::RunArgs;
use anyhow::Context;
use serde_json::json;

use anteroom::{Client, RunSession, cut, host_name, run_command, shown_command, take_session};
use harness::agent_command;
use output::{Pending, hear_stop, pump, report};

/// How long a stop waits after SIGINT before SIGTERM, and after SIGTERM before SIGKILL.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

pub async fn run(args: RunArgs) -> anyhow::Result<u8> {
    anyhow::ensure!(
        !args.command.is_empty(),
        "name the agent's command (with --codex: the prompt) after `--`"
    );
    let client = Client::new(&args.url, &args.api_key)?;
    let host = host_name();
    // Nothing is started unless Anteroom took the run (or --offline-ok says to start it with hooks that refuse):
    // an agent that would ask nobody is what this command prevents.
    let taken = async {
        let session = take_session(&client, &args, &host).await?;
        let started = client
            .post(
                &format!("/api/v1/s/{}/run", session.token),
                &json!({"command": cut(&shown_command(&run_command(&args)), 2_000), "host": cut(&host, 255)}),
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

    let tail = Arc::new(Mutex::new(Pending::default()));
    let run_path = format!("/api/v1/s/{}/run/{run_id}", session.token);
    let stop = Arc::new(tokio::sync::Notify::new());
    let reported = Arc::new(tokio::sync::Notify::new());
    let mut reporter = tokio::spawn(report(
        client.clone(),
        run_path.clone(),
        Arc::clone(&tail),
        Arc::clone(&stop),
        Arc::clone(&reported),
    ));
    let listener = tokio::spawn(hear_stop(
        client.clone(),
        run_path.clone(),
        Arc::clone(&stop),
    ));
    let ended = if args.codex {
        codex_app::run(&args, &client, &session, Arc::clone(&tail), stop).await
    } else if args.acp {
        acp::run(&args, &client, &session, Arc::clone(&tail), stop).await
    } else {
        run_agent(&args, &session, Arc::clone(&tail), stop).await
    };
    // A send under way finishes (its lines would be lost with it); the rest goes with the end.
    reported.notify_one();
    if tokio::time::timeout(Duration::from_secs(10), &mut reporter)
        .await
        .is_err()
    {
        reporter.abort();
    }
    listener.abort();
    let ended = match ended {
        Ok(ended) => ended,
        Err(error) => {
            // The agent never ran (or could not be waited for): the session says so, and so does `run`.
            let said = format!("anteroom run: {error:#}");
            tail.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(&said);
            Ended {
                exit_code: Some(1),
                signal: None,
                stopped: false,
                said: Some(said),
            }
        }
    };
    let rest = tail
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let end = json!({
        "exit_code": ended.exit_code,
        "signal": ended.signal,
        "stopped": ended.stopped,
        "output": rest,
    });
    let mut told = false;
    for attempt in 0..5u32 {
        match client.post(&format!("{run_path}/end"), &end).await {
            Ok(_) => {
                told = true;
                break;
            }
            Err(error) if attempt == 4 => {
                eprintln!("anteroom run: could not tell Anteroom how the agent ended: {error:#}");
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1 << attempt)).await,
        }
    }
    if let Some(said) = &ended.said {
        eprintln!("{said}");
    }
    if told {
        eprintln!(
            "anteroom run: the agent {}; the session says so",
            ended.words()
        );
    }
    Ok(ended.exit_status())
}

/// How the agent ended, as the session is told and the shell sees it.
pub(super) struct Ended {
    pub(super) exit_code: Option<i32>,
    pub(super) signal: Option<i32>,
    /// Ended because Anteroom asked it to stop.
    pub(super) stopped: bool,
    /// What `run` says about it on the terminal.
    pub(super) said: Option<String>,
}

impl Ended {
    fn of(status: std::process::ExitStatus, stopped: bool) -> Self {
        Self {
            exit_code: status.code(),
            signal: status.signal(),
            stopped,
            said: None,
        }
    }

    /// The shell's view of how the agent ended.
    fn exit_status(&self) -> u8 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => u8::try_from(code.rem_euclid(256)).unwrap_or(1),
            (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
            (None, None) => 1,
        }
    }

    fn words(&self) -> String {
        match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was ended by signal {signal}"),
            (None, None) => "ended".to_owned(),
        }
    }
}

/// The agent's command run as the run's agent: its output teed, signals and a Stop passed on, until it exits.
async fn run_agent(
    args: &RunArgs,
    session: &RunSession,
    tail: Arc<Mutex<Pending>>,
    stop: Arc<tokio::sync::Notify>,
) -> anyhow::Result<Ended> {
    let program = args.command.first().map_or("the agent", String::as_str);
    let scratch = tempfile::Builder::new()
        .prefix("anteroom-run-")
        .tempdir()
        .context("cannot make the run's scratch folder")?;
    let mut command = agent_command(args, Some(session), scratch.path().to_path_buf())?;
    let group = Agent::group_of_its_own(&mut command);
    let mut child = tokio::process::Command::from(command)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let agent = Agent::of(&child, group);
    let stdout = child.stdout.take().context("the agent's stdout")?;
    let stderr = child.stderr.take().context("the agent's stderr")?;
    let pumps = [
        tokio::spawn(pump(stdout, tokio::io::stdout(), Arc::clone(&tail))),
        tokio::spawn(pump(stderr, tokio::io::stderr(), Arc::clone(&tail))),
    ];
    let mut signals = Signals::new()?;
    // A stop goes SIGINT, then SIGTERM five seconds later, then SIGKILL five seconds after that.
    let mut stop_signals =
        [rustix::process::Signal::TERM, rustix::process::Signal::KILL].into_iter();
    let mut stopped = false;
    let mut next_step: Option<tokio::time::Instant> = None;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.context("cannot wait for the agent")?,
            signal = signals.next() => agent.send(signal),
            () = stop.notified(), if !stopped => {
                eprintln!("anteroom run: stopped from Anteroom; interrupting the agent");
                agent.send(rustix::process::Signal::INT);
                stopped = true;
                next_step = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
            }
            () = sleep_until(next_step) => match stop_signals.next() {
                Some(signal) => {
                    agent.send(signal);
                    next_step = Some(tokio::time::Instant::now() + INTERRUPT_GRACE);
                }
                None => next_step = None,
            },
        }
    };
    // What the agent printed last: its pipes close with it, unless something it started holds them.
    for pump in pumps {
        let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
    }
    drop(scratch);
    Ok(Ended::of(status, stopped))
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
    let group = Agent::group_of_its_own(&mut command);
    let mut child = tokio::process::Command::from(command)
        .spawn()
        .with_context(|| format!("cannot start {}", args.command.join(" ")))?;
    let agent = Agent::of(&child, group);
    let mut signals = Signals::new()?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.context("cannot wait for the agent")?,
            signal = signals.next() => agent.send(signal),
        }
    };
    drop(scratch);
    Ok(Ended::of(status, false).exit_status())
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Where the agent's signals go. Run headless (stdin not a terminal), the agent gets a process group of its own
/// and every signal goes to the group, so a Stop reaches what a wrapper script started too (`sh -c '… ; agent'`
/// defers SIGINT while its child runs). Sharing a terminal, the agent stays in the terminal's foreground group,
/// which an interactive agent needs to read its keyboard, and a signal goes to it alone: the terminal's own
/// Ctrl-C already reaches every process of the group.
#[derive(Debug, Clone, Copy)]
struct Agent {
    pid: Option<i32>,
    group: bool,
}

impl Agent {
    /// Gives `command` a process group of its own when the run is headless; returns whether it did.
    fn group_of_its_own(command: &mut std::process::Command) -> bool {
        use std::{io::IsTerminal, os::unix::process::CommandExt};
        let headless = !std::io::stdin().is_terminal();
        if headless {
            command.process_group(0);
        }
        headless
    }

    fn of(child: &tokio::process::Child, group: bool) -> Self {
        Self {
            pid: child.id().and_then(|pid| i32::try_from(pid).ok()),
            group,
        }
    }

    fn send(self, signal: rustix::process::Signal) {
        // The child has not been reaped (its `wait` has not returned), so the pid — and the group it leads — is
        // still its own.
        if let Some(pid) = self.pid.and_then(rustix::process::Pid::from_raw) {
            let _ = if self.group {
                rustix::process::kill_process_group(pid, signal)
            } else {
                rustix::process::kill_process(pid, signal)
            };
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_status_is_the_agents() {
        let status = |raw: i32| Ended::of(std::process::ExitStatus::from_raw(raw), false);
        assert_eq!(status(3 << 8).exit_status(), 3);
        assert_eq!(status(9).exit_status(), 137);
        assert_eq!(status(2).words(), "was ended by signal 2");
    }
}
