//! A moment as people read it: "4 min ago", kept current while the page is live, with the exact time in the
//! person's own zone as its title and the instant in `datetime` for machines.

use leptos::prelude::*;

use crate::ui::{
    browser::Live,
    model::{relative_time, zoned_time},
};

/// `at_ms` relative to now: until the page is live (and on the server) relative to `server_now_ms`, so the
/// browser's first render matches the server's HTML; then to the browser's clock, each second. The title is
/// in `zone` (the person's saved zone); without one, in UTC on the server and in the browser's own zone once
/// the page is live.
#[component]
pub fn Moment(
    at_ms: i64,
    server_now_ms: i64,
    /// The person's saved zone, if any.
    zone: Option<String>,
) -> impl IntoView {
    let live = use_context::<Live>();
    let now = move || {
        live.and_then(|live| live.now_ms.get())
            .unwrap_or(server_now_ms)
    };
    // Only whether the page is live, so the title is not formatted again every second.
    let is_live = Memo::new(move |_| live.is_some_and(|live| live.now_ms.get().is_some()));
    let title = move || match (&zone, is_live.get()) {
        (Some(zone), _) => zoned_time(at_ms, Some(zone)),
        (None, true) => zoned_time(at_ms, crate::ui::model::browser_time_zone().as_deref()),
        (None, false) => zoned_time(at_ms, None),
    };
    let datetime = chrono::DateTime::from_timestamp_millis(at_ms)
        .map(|at| at.to_rfc3339())
        .unwrap_or_default();
    view! {
        <time class="moment" datetime=datetime title=title>
            {move || relative_time(at_ms, now())}
        </time>
    }
}
