//! `anteroom healthcheck`: asks a running Anteroom's `/healthz`, for a container image that has no curl.

use std::{net::SocketAddr, time::Duration};

use anteroom_server::config::HealthcheckArgs;
use anyhow::{Context, bail};

pub async fn run(args: HealthcheckArgs) -> anyhow::Result<()> {
    let url = format!("http://{}/healthz", loopback(args.addr));
    let response = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?
        .get(&url)
        .send()
        .await
        .with_context(|| format!("{url} did not answer"))?;
    if !response.status().is_success() {
        bail!("{url} answered {}", response.status());
    }
    Ok(())
}

/// The address to ask: a server listening on every address (`0.0.0.0`, `::`) is asked on loopback.
fn loopback(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    addr
}
