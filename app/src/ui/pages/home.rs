//! `/`: the attention queue, every session that may need a person, most urgent first, updated live.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    domain::session::LostReason,
    ui::{
        browser::Live,
        components::countdown::Countdown,
        model::{QueueItem, QueueView},
        server_fns::load_queue,
    },
};

/// The homepage: sessions with open questions (oldest wait first), then lost questions, then the rest.
#[component]
pub fn HomePage() -> impl IntoView {
    let live = expect_context::<Live>();
    let queue = Resource::new(move || live.changes.get(), |_| load_queue());

    view! {
        <section class="attention-queue" aria-labelledby="queue-heading">
            <h1 id="queue-heading">"Attention queue"</h1>
            <Transition fallback=|| view! { <p class="loading">"Loading the queue…"</p> }>
                {move || {
                    queue
                        .get()
                        .map(|result| match result {
                            Ok(view) => queue_view(view).into_any(),
                            Err(error) => {
                                view! {
                                    <p class="error-box" role="alert">
                                        {error.to_string()}
                                    </p>
                                }
                                    .into_any()
                            }
                        })
                }}
            </Transition>
        </section>
    }
}

fn queue_view(view: QueueView) -> impl IntoView {
    let open = view.open_questions();
    let title = if open == 0 {
        "Anteroom".to_owned()
    } else {
        format!("({open}) Anteroom")
    };
    let now_ms = view.now_ms;
    let (waiting, rest): (Vec<QueueItem>, Vec<QueueItem>) = view
        .items
        .into_iter()
        .partition(|item| item.open_rounds > 0);
    let (lost, others): (Vec<QueueItem>, Vec<QueueItem>) =
        rest.into_iter().partition(|item| item.lost.is_some());
    let nothing = waiting.is_empty() && lost.is_empty() && others.is_empty();
    view! {
        <Title text=title />
        {nothing
            .then(|| {
                view! {
                    <p class="queue-empty" data-testid="queue-empty">
                        "No agent is waiting for you. Questions from your agents' MCP servers appear here as they arrive."
                    </p>
                }
            })}
        {section("Waiting for you", "waiting", waiting, now_ms)}
        {section("Questions nobody answered", "lost", lost, now_ms)}
        {section("Other sessions", "other", others, now_ms)}
    }
}

fn section(
    heading: &'static str,
    kind: &'static str,
    items: Vec<QueueItem>,
    now_ms: i64,
) -> Option<impl IntoView> {
    if items.is_empty() {
        return None;
    }
    let heading_id = format!("queue-{kind}");
    let labelled_by = heading_id.clone();
    Some(view! {
        <section class="queue-section" data-section=kind aria-labelledby=labelled_by>
            <h2 id=heading_id class="queue-heading">
                {heading}
                " "
                <span class="count">{items.len()}</span>
            </h2>
            <ol class="queue">
                {items.into_iter().map(|item| queue_item(item, now_ms)).collect_view()}
            </ol>
        </section>
    })
}

fn queue_item(item: QueueItem, now_ms: i64) -> impl IntoView {
    let href = format!("/sessions/{}", item.session_id);
    let state = if item.open_rounds > 0 {
        "waiting"
    } else if item.lost.is_some() {
        "lost"
    } else {
        "other"
    };
    let title = if item.title.is_empty() {
        item.session_id.clone()
    } else {
        item.title.clone()
    };
    let detail = match (&item.question, &item.lost) {
        (Some(question), _) => {
            let more = (item.open_rounds > 1).then(|| format!(" · {} open", item.open_rounds));
            view! {
                <span class="queue-question">{question.message.clone()}</span>
                <span class="queue-meta">
                    {question.asker.describe()}
                    {more}
                    " · "
                    <Countdown deadline_ms=question.deadline_ms server_now_ms=now_ms />
                </span>
            }
            .into_any()
        }
        (None, Some(lost)) => {
            let reason = match lost.reason {
                LostReason::Expired => "Expired unanswered: ",
                LostReason::Stranded => "Left without an answer: ",
            };
            view! {
                <span class="queue-question">{reason} {lost.summary.clone()}</span>
            }
            .into_any()
        }
        (None, None) => view! {
            <span class="queue-meta">
                {item.status.as_str().replace('_', " ")}
                {item.agent.clone().map(|agent| format!(" · {agent}"))}
            </span>
        }
        .into_any(),
    };
    view! {
        <li class="queue-item" data-state=state data-session-id=item.session_id.clone()>
            <a class="queue-link" href=href data-queue-link="">
                <span class="queue-title">{title}</span>
                {detail}
            </a>
        </li>
    }
}
