//! `anteroom wrap`: runs a stdio MCP server between the harness and Anteroom (the relay is `anteroom-wrap`).

use anteroom_domain::{ids::OwnerId, round::check_server_name};
use anteroom_server::config::WrapArgs;
use anteroom_wrap::{
    anteroom::Anteroom,
    relay::{Wrapped, run as relay},
};
use anyhow::Context;
use std::time::Duration;

use super::init_logging;

/// Relays until the harness closes stdin, the server exits or a signal arrives; exits the process with the
/// server's exit code when it had one.
pub async fn run(args: WrapArgs) -> anyhow::Result<u8> {
    // stdout is the protocol's: logs go to stderr only.
    init_logging("warn", super::log_format_from_env());
    let (program, rest) = args
        .command
        .split_first()
        .context("name the server's command after `--`")?;
    // A bad name is refused here, before the server starts, rather than on its first question.
    if let Some(name) = &args.server {
        check_server_name(name)?;
    }
    let owner = OwnerId::parse(format!("wrap-{}", std::process::id()))?;
    let anteroom = Anteroom::new(&args.request_url, owner)?;
    let wrapped = Wrapped {
        program: program.clone(),
        args: rest.to_vec(),
        server: args.server,
        progress_every: progress_every(args.progress_seconds)?,
    };
    let code = relay(
        wrapped,
        anteroom,
        tokio::io::stdin(),
        tokio::io::stdout(),
        stop_signal()?,
    )
    .await
    .with_context(|| format!("cannot run {program}"))?;
    // The shell's view of the child's status: its low eight bits.
    Ok(u8::try_from(code.unwrap_or(0).rem_euclid(256)).unwrap_or(1))
}

/// The progress interval: a positive number of seconds, at least a tenth of one.
fn progress_every(seconds: f64) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        seconds.is_finite() && (0.1..=3600.0).contains(&seconds),
        "--progress-seconds must be between 0.1 and 3600 (it was {seconds})"
    );
    Ok(Duration::from_secs_f64(seconds))
}

/// Resolves with SIGTERM or SIGINT, whichever stops the wrapper first, so the relay passes it to the server
/// (and the server never outlives the wrapper).
fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = i32>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => SignalKind::terminate().as_raw_value(),
            _ = interrupt.recv() => SignalKind::interrupt().as_raw_value(),
        }
    })
}
