//! A live countdown to a question's deadline.

use leptos::prelude::*;

use crate::ui::{
    browser::Live,
    model::{clock_time, countdown},
};

/// Under five minutes left, the countdown asks for attention.
const URGENT_MS: i64 = 5 * 60 * 1000;

/// "expires in 4 min 05 s" (or, when the deadline is the asking server's own, "the asking server stops waiting
/// in 18 s"), ticking each second once the page is live. Until then (and on the server) it counts from the
/// server's clock, so the first render in the browser matches the server's HTML.
#[component]
pub fn Countdown(
    deadline_ms: i64,
    server_now_ms: i64,
    /// The deadline is the asking server's: say whose it is.
    #[prop(optional)]
    askers: bool,
) -> impl IntoView {
    let live = use_context::<Live>();
    let now = move || {
        live.and_then(|live| live.now_ms.get())
            .unwrap_or(server_now_ms)
    };
    let text = move || {
        let now = now();
        match (deadline_ms <= now, askers) {
            (true, true) => "the asking server has stopped waiting".to_owned(),
            (true, false) => "expiring now".to_owned(),
            (false, true) => format!(
                "the asking server stops waiting in {}",
                countdown(deadline_ms, now)
            ),
            (false, false) => format!("expires in {}", countdown(deadline_ms, now)),
        }
    };
    let datetime = chrono::DateTime::from_timestamp_millis(deadline_ms)
        .map(|at| at.to_rfc3339())
        .unwrap_or_default();
    view! {
        <time
            class="countdown"
            datetime=datetime
            title=format!("Deadline {}", clock_time(deadline_ms))
            data-urgent=move || (deadline_ms - now() < URGENT_MS).to_string()
            data-askers=askers.to_string()
            data-testid="countdown"
        >
            {text}
        </time>
    }
}
