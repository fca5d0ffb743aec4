//! Probe the gate: request `<public base>/api/v1/elicitations/health-probe` as a producer would. Any HTTP
//! response proves the route reachable (a 401 or 404 included); only a transport failure is a broken gate.

use std::time::Duration;

use anteroom_domain::gate::GateChange;

use crate::AppState;

/// Probes `url` once: `true` when anything answered over HTTP.
pub async fn reachable(client: &reqwest::Client, url: &str) -> bool {
    client.get(url).send().await.is_ok()
}

/// One tick: probe, record (the instance that flips the gate queues the incident webhook), and log — a warning
/// on every failing tick, an error once per outage.
pub async fn run(state: AppState) -> Option<GateChange> {
    let url = format!(
        "{}/api/v1/elicitations/health-probe",
        state.config.public_url
    );
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(%error, "gate probe: cannot build an HTTP client");
            return None;
        }
    };
    let healthy = reachable(&client, &url).await;
    let change = match state.store.record_gate_probe(healthy, &url).await {
        Ok((change, _)) => change,
        Err(error) => {
            tracing::warn!(%error, healthy, "gate probe: cannot record the result");
            return None;
        }
    };
    match change {
        GateChange::StillHealthy => tracing::debug!(url, "gate probe: healthy"),
        GateChange::IncidentOpened => tracing::error!(
            url,
            "gate probe: INCIDENT OPENED — producers cannot reach Anteroom; their questions fail as denials"
        ),
        GateChange::StillBroken => tracing::warn!(url, "gate probe: still broken"),
        GateChange::IncidentClosed => {
            tracing::info!(url, "gate probe: incident closed, the gate works again");
        }
    }
    Some(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn any_http_answer_is_reachable_and_a_closed_port_is_not() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let app = axum::Router::new();
            let _ = axum::serve(listener, app).await;
        });
        let client = reqwest::Client::new();
        assert!(
            reachable(
                &client,
                &format!("http://{addr}/api/v1/elicitations/health-probe")
            )
            .await,
            "a 404 is healthy"
        );

        let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let closed_addr = closed.local_addr().expect("address");
        drop(closed);
        assert!(!reachable(&client, &format!("http://{closed_addr}/")).await);
    }
}
