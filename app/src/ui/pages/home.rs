//! `/`: the attention queue, every session that may need a person, most urgent first.

use leptos::prelude::*;

/// The homepage. Until questions can arrive, the queue shows its empty state.
#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <section class="attention-queue" aria-labelledby="queue-heading">
            <h1 id="queue-heading">"Attention queue"</h1>
            <p class="queue-empty" data-testid="queue-empty">
                "No agent is waiting for you. Questions from your agents' MCP servers appear here as they arrive."
            </p>
        </section>
    }
}
