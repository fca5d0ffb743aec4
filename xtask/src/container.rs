//! `cargo xtask container`: the static one file (`dist --musl`), then the image the Containerfile makes of it,
//! built and run with Podman: `/readyz` answers through the published port, the image's own `HEALTHCHECK`
//! passes, and it runs as the user the Containerfile names.

use std::{net::TcpListener, process::Command, time::Duration};

use anyhow::{Context, Result, bail};

use crate::{dist, run, step, workspace_root};

/// `podman_flags` go before podman's sub-command (`--runtime runc --cgroup-manager cgroupfs` where crun cannot
/// manage this machine's cgroups).
pub fn container(podman_flags: &[String]) -> Result<()> {
    dist::dist(&["--musl".to_owned()])?;
    let version = env!("CARGO_PKG_VERSION");
    let tag = format!("localhost/anteroom:{version}");
    let podman = || {
        let mut command = Command::new("podman");
        command.args(podman_flags).current_dir(workspace_root());
        command
    };

    step(&format!("podman build {tag} (FROM scratch)"));
    run(podman().args([
        "build",
        "--format",
        "docker",
        "--build-arg",
        &format!("VERSION={version}"),
        "-f",
        "Containerfile",
        "-t",
        &tag,
        ".",
    ]))?;

    step("podman run: the image serves, is healthy, and is not root");
    let name = format!("anteroom-check-{}", std::process::id());
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let volume = format!("{name}-data");
    run(podman().args([
        "run",
        "--detach",
        "--name",
        &name,
        "--publish",
        &format!("127.0.0.1:{port}:3000"),
        "--volume",
        &format!("{volume}:/data"),
        // Lowered, never raised: a container may not raise a limit above its runner's.
        "--ulimit",
        "nofile=4096:4096",
        "--ulimit",
        "nproc=4096:4096",
        &tag,
    ]))?;
    let outcome = check(&podman, &name, port);
    let logs = podman().args(["logs", &name]).output();
    let _ = podman().args(["rm", "--force", &name]).output();
    let _ = podman().args(["volume", "rm", "--force", &volume]).output();
    if outcome.is_err()
        && let Ok(logs) = logs
    {
        eprintln!("{}", String::from_utf8_lossy(&logs.stderr));
    }
    outcome
}

fn check(podman: &dyn Fn() -> Command, name: &str, port: u16) -> Result<()> {
    let address = format!("127.0.0.1:{port}");
    let ready = dist::wait_for(&address, "/readyz", Duration::from_secs(30), None)
        .context("/readyz on the container's published port")?;
    let body = ready.split("\r\n\r\n").nth(1).unwrap_or_default();
    println!("xtask: /readyz through the published port: {body}");
    run(podman().args(["healthcheck", "run", name]))
        .context("the image's HEALTHCHECK (`anteroom healthcheck`) failed")?;
    println!("xtask: HEALTHCHECK passed");
    let user = podman()
        .args(["inspect", "--format", "{{.Config.User}}", name])
        .output()?;
    let user = String::from_utf8_lossy(&user.stdout).trim().to_owned();
    if user != "65532:65532" {
        bail!("the container runs as {user:?}, not 65532:65532");
    }
    let files = podman()
        .args(["exec", name, "/anteroom", "--version"])
        .output()?;
    print!("{}", String::from_utf8_lossy(&files.stdout));
    println!("xtask: the container runs as {user}; its database is in the /data volume");
    Ok(())
}
