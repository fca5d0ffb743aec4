//! `/admin/webhooks`: the webhook delivery log, for admins.

use crate::ui::components::page_title::PageTitle;
use leptos::prelude::*;

use crate::{
    domain::webhook::{DELIVERY_LOG_SHOWN, MAX_ATTEMPTS},
    ui::{model::DeliveryRow, server_fns::load_deliveries},
};

#[component]
pub fn WebhookLogPage() -> impl IntoView {
    let deliveries = Resource::new(|| (), |_| load_deliveries());
    view! {
        <PageTitle text="Webhook deliveries · Anteroom" />
        <section aria-labelledby="webhooks-heading">
            <h1 id="webhooks-heading">"Webhook deliveries"</h1>
            <p class="muted">
                {format!(
                    "The {DELIVERY_LOG_SHOWN} most recent deliveries, newest first. Failed attempts are retried with growing pauses, up to {MAX_ATTEMPTS} times.",
                )}
            </p>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || {
                    deliveries
                        .get()
                        .map(|result| match result {
                            Err(error) => super::load_error(error).into_any(),
                            Ok(rows) if rows.is_empty() => view! {
                                <p class="queue-empty">
                                    "No webhook has been sent yet. Set "
                                    <code>"ANTEROOM_WEBHOOKS=https://…"</code>
                                    " (or "
                                    <code>"slack:https://…"</code>
                                    ") and restart, and each question's deliveries appear here."
                                </p>
                            }
                            .into_any(),
                            Ok(rows) => delivery_table(rows).into_any(),
                        })
                }}
            </Suspense>
        </section>
    }
}

fn delivery_table(rows: Vec<DeliveryRow>) -> impl IntoView {
    view! {
        // Focusable and named, so a keyboard can scroll it on a narrow screen.
        <div class="table-scroll" tabindex="0" role="region" aria-label="Webhook deliveries">
            <table class="deliveries">
                <thead>
                    <tr>
                        <th scope="col">"Queued"</th>
                        <th scope="col">"Event"</th>
                        <th scope="col">"Receiver"</th>
                        <th scope="col">"Status"</th>
                        <th scope="col">"Attempts"</th>
                        <th scope="col">"Last problem"</th>
                    </tr>
                </thead>
                <tbody>
                    {rows
                        .into_iter()
                        .map(|row| {
                            let problem = match (row.last_status, row.last_error) {
                                (Some(status), Some(error)) => format!("HTTP {status}: {error}"),
                                (None, Some(error)) => error,
                                (Some(status), None) => format!("HTTP {status}"),
                                (None, None) => String::new(),
                            };
                            let status = row.status.clone();
                            view! {
                                <tr data-status=status>
                                    <td>{row.queued_at}</td>
                                    <td>{row.event}</td>
                                    <td><code>{row.endpoint}</code></td>
                                    <td>{row.status}</td>
                                    <td>{row.attempts}</td>
                                    <td>{problem}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}
