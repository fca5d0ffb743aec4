//! `/`: the attention queue, every session that may need a person, most urgent first, updated live.

use crate::ui::components::page_title::PageTitle;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::{
    domain::{responders::describe, session::LostReason},
    ui::{
        browser::Live,
        components::countdown::Countdown,
        model::{QueueItem, QueueView, Viewer},
        server_fns::load_queue,
    },
};

/// The homepage: sessions with open questions (oldest wait first), then lost questions, then the rest.
#[component]
pub fn HomePage() -> impl IntoView {
    let queue = Resource::new(|| (), |_| load_queue());
    let live = expect_context::<Live>();
    // The stream sends the queue after every change; it is fetched only after a reconnection.
    let fetched = super::refreshed_on(live.reconnects, load_queue);
    let fresh = Memo::new(move |_| newest(fetched.get(), live.queue.get()));

    view! {
        <section class="attention-queue" aria-labelledby="queue-heading">
            <h1 id="queue-heading">"Attention queue"</h1>
            <Transition fallback=|| view! { <p class="loading">"Loading the queue…"</p> }>
                {move || {
                    queue
                        .get()
                        .map(|result| match result {
                            Ok(first) => queue_view(first, fresh).into_any(),
                            Err(error) => super::load_error(error).into_any(),
                        })
                }}
            </Transition>
        </section>
    }
}

/// The later of two views by the server's clock: a fetch that started before a change must not hide the
/// view the stream sent after it.
fn newest(fetched: Option<QueueView>, pushed: Option<QueueView>) -> Option<QueueView> {
    match (fetched, pushed) {
        (Some(fetched), Some(pushed)) if fetched.now_ms > pushed.now_ms => Some(fetched),
        (fetched, None) => fetched,
        (_, pushed) => pushed,
    }
}

/// Which part of the queue an entry belongs to.
fn part(item: &QueueItem) -> &'static str {
    if item.open_rounds > 0 {
        "waiting"
    } else if item.lost.is_some() {
        "lost"
    } else {
        "other"
    }
}

/// The queue, updated in place: rows are keyed by what they show, so focus (j/k) survives updates.
fn queue_view(first: QueueView, fresh: Memo<Option<QueueView>>) -> impl IntoView {
    let now_ms = first.now_ms;
    // "Mine" (the default) leaves out questions the person may not answer; "All" shows every one.
    let query = use_query_map();
    let all = Memo::new(move |_| query.with(|query| query.get("show").as_deref() == Some("all")));
    let shown = Shown {
        viewer: StoredValue::new(first.viewer.clone()),
        all,
    };
    let current = Memo::new(move |_| fresh.get().unwrap_or_else(|| first.clone()));
    let title = move || match current.with(QueueView::open_questions) {
        0 => "Anteroom".to_owned(),
        open => format!("({open}) Anteroom"),
    };
    view! {
        <PageTitle text=title />
        <Show when=move || current.with(|queue| queue.items.is_empty())>
            <div class="queue-empty" data-testid="queue-empty">
                <p>"No agent has asked anything yet. Questions from your agents' MCP servers appear here as they arrive."</p>
                <p>
                    "To connect one: "
                    <code>"anteroom session create --id my-agent --server NAME"</code>
                    " prints the environment block its MCP server reads; or run the server under "
                    <code>"anteroom wrap"</code>
                    " ("
                    <code>"anteroom mcp-config wrap"</code>
                    " rewrites .mcp.json or config.toml), or add Claude Code's or Codex's hooks with "
                    <code>"anteroom mcp-config hooks"</code>
                    ". The README's \"Connecting agents\" says how, step by step."
                </p>
            </div>
        </Show>
        <Show when=move || {
            current.with(|queue| !queue.items.is_empty() && queue.open_questions() == 0)
        }>
            <p class="queue-empty" data-testid="queue-nothing-waiting">
                "Nothing is waiting for you: every question has been answered or has ended. New ones appear here at once."
            </p>
        </Show>
        <nav class="queue-filter" aria-label="Which questions">
            <a href="/" aria-current=move || (!all.get()).then_some("page")>"Mine"</a>
            <a href="/?show=all" aria-current=move || all.get().then_some("page")>"All"</a>
        </nav>
        {move || {
            let others = current
                .with(|queue| {
                    queue.items.iter().filter(|item| !shown.shows(item)).map(|item| item.open_rounds).sum::<u32>()
                });
            (others > 0)
                .then(|| {
                    let count = if others == 1 {
                        "1 question waits for others".to_owned()
                    } else {
                        format!("{others} questions wait for others")
                    };
                    view! {
                        <p class="queue-others" data-testid="queue-others">
                            {count}
                            ": "
                            <a href="/?show=all">"show all"</a>
                            "."
                        </p>
                    }
                })
        }}
        {section("Waiting for you", "waiting", current, now_ms, shown)}
        {section("Questions nobody answered", "lost", current, now_ms, shown)}
        {section("Other sessions", "other", current, now_ms, shown)}
    }
}

/// Which queue entries the page shows: all, or the person's own.
#[derive(Clone, Copy)]
struct Shown {
    viewer: StoredValue<Option<Viewer>>,
    all: Memo<bool>,
}

impl Shown {
    /// An entry whose question the person may not answer is left out of "Mine".
    fn shows(&self, item: &QueueItem) -> bool {
        self.all.get()
            || item.question.as_ref().is_none_or(|question| {
                self.viewer.with_value(|viewer| {
                    viewer
                        .as_ref()
                        .is_none_or(|viewer| viewer.may_answer(&question.responders))
                })
            })
    }
}

fn section(
    heading: &'static str,
    kind: &'static str,
    current: Memo<QueueView>,
    now_ms: i64,
    shown: Shown,
) -> impl IntoView {
    let items = Memo::new(move |_| {
        current.with(|queue| {
            queue
                .items
                .iter()
                .filter(|item| part(item) == kind && shown.shows(item))
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let heading_id = format!("queue-{kind}");
    view! {
        <Show when=move || items.with(|items| !items.is_empty())>
            <section class="queue-section" data-section=kind aria-labelledby=heading_id.clone()>
                <h2 id=heading_id.clone() class="queue-heading">
                    {heading}
                    " "
                    <span class="count">{move || items.with(Vec::len)}</span>
                </h2>
                <ol class="queue">
                    <For
                        each=move || items.get()
                        key=|item| {
                            (
                                item.session_id.clone(),
                                item.question.as_ref().map(|q| q.round_id.clone()),
                                item.open_rounds,
                                item.lost.as_ref().map(|lost| lost.at),
                                item.status,
                            )
                        }
                        children=move |item| queue_item(item, now_ms)
                    />
                </ol>
            </section>
        </Show>
    }
}

fn queue_item(item: QueueItem, now_ms: i64) -> impl IntoView {
    let href = format!("/sessions/{}", item.session_id);
    let state = part(&item);
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
                    {(!question.responders.is_empty())
                        .then(|| format!(" · for {}", describe(&question.responders)))}
                    " · "
                    <Countdown
                        deadline_ms=question.deadline_ms
                        server_now_ms=now_ms
                        askers=question.askers_deadline
                    />
                </span>
            }
            .into_any()
        }
        (None, Some(lost)) => {
            let reason = match lost.reason {
                LostReason::Expired => "Expired unanswered: ",
                LostReason::Stranded => "Left without an answer: ",
                LostReason::AskerStopped => "The asker stopped waiting: ",
                LostReason::Revoked => "Ended by a revoked token: ",
                LostReason::Undelivered => "Answered, never delivered: ",
                LostReason::NobodyAvailable => "Nobody was available: ",
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
