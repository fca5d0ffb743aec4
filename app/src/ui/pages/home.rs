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
        server_fns::{load_queue, triage},
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

/// One card of the queue: an entry, and for a waiting question the entries of other sessions asking exactly
/// the same (merged: "asked by 10 agents").
#[derive(Debug, Clone, PartialEq)]
struct Card {
    head: QueueItem,
    alike: Vec<QueueItem>,
}

impl Card {
    /// The waiting questions the card stands for (what selecting it selects).
    fn round_ids(&self) -> Vec<String> {
        std::iter::once(&self.head)
            .chain(&self.alike)
            .filter_map(|item| {
                item.question
                    .as_ref()
                    .map(|question| question.round_id.clone())
            })
            .collect()
    }
}

/// Merges identical waiting questions into one card, in queue order (the first one asked leads).
fn cards(items: Vec<QueueItem>) -> Vec<Card> {
    let mut cards: Vec<Card> = Vec::new();
    for item in items {
        let same = item
            .question
            .as_ref()
            .and_then(|question| question.same_as.clone());
        let merged = same.as_ref().and_then(|key| {
            cards.iter_mut().find(|card| {
                card.head
                    .question
                    .as_ref()
                    .and_then(|question| question.same_as.as_ref())
                    == Some(key)
            })
        });
        match merged {
            Some(card) => card.alike.push(item),
            None => cards.push(Card {
                head: item,
                alike: Vec::new(),
            }),
        }
    }
    cards
}

/// The queue's batch triage: the waiting questions selected (checkbox, `x`, Shift-click for a range), and
/// the last card clicked, where a range starts.
#[derive(Clone, Copy)]
struct Selection {
    selected: RwSignal<Vec<String>>,
    anchor: RwSignal<Option<usize>>,
    order: Memo<Vec<Vec<String>>>,
}

impl Selection {
    fn is_selected(&self, ids: &[String]) -> bool {
        !ids.is_empty()
            && self
                .selected
                .with(|selected| ids.iter().all(|id| selected.contains(id)))
    }

    /// A click on card `index`: toggles it, or with Shift selects every card from the last one clicked.
    fn click(&self, index: usize, range: bool) {
        let order = self.order.get_untracked();
        let Some(ids) = order.get(index) else {
            return;
        };
        let select = !self.is_selected(ids);
        let span = match (range, self.anchor.get_untracked()) {
            (true, Some(anchor)) => anchor.min(index)..=anchor.max(index),
            _ => index..=index,
        };
        self.selected.update(|selected| {
            for ids in order.get(span).into_iter().flatten() {
                for id in ids {
                    selected.retain(|known| known != id);
                    if select {
                        selected.push(id.clone());
                    }
                }
            }
        });
        self.anchor.set(Some(index));
    }
}

fn section(
    heading: &'static str,
    kind: &'static str,
    current: Memo<QueueView>,
    now_ms: i64,
    shown: Shown,
) -> impl IntoView {
    let cards = Memo::new(move |_| {
        current.with(|queue| {
            let items: Vec<QueueItem> = queue
                .items
                .iter()
                .filter(|item| part(item) == kind && shown.shows(item))
                .cloned()
                .collect();
            if kind == "waiting" {
                cards(items)
            } else {
                items
                    .into_iter()
                    .map(|head| Card {
                        head,
                        alike: Vec::new(),
                    })
                    .collect()
            }
        })
    });
    let selection = Selection {
        selected: RwSignal::new(Vec::new()),
        anchor: RwSignal::new(None),
        order: Memo::new(move |_| cards.with(|cards| cards.iter().map(Card::round_ids).collect())),
    };
    let heading_id = format!("queue-{kind}");
    let triage = (kind == "waiting").then(|| triage_bar(selection, shown.viewer));
    view! {
        {triage}
        <Show when=move || cards.with(|cards| !cards.is_empty())>
            <section class="queue-section" data-section=kind aria-labelledby=heading_id.clone()>
                <h2 id=heading_id.clone() class="queue-heading">
                    {heading}
                    " "
                    <span class="count">{move || cards.with(Vec::len)}</span>
                </h2>
                <ol class="queue">
                    <For
                        each=move || cards.get().into_iter().enumerate()
                        key=|(index, card)| {
                            (
                                *index,
                                card.head.session_id.clone(),
                                card.head.question.as_ref().map(|q| q.round_id.clone()),
                                card.head.open_rounds,
                                card.head.lost.as_ref().map(|lost| lost.at_ms),
                                card.head.status,
                                card.head.run,
                                card.alike.len(),
                            )
                        }
                        children=move |(index, card)| queue_item(card, index, now_ms, selection)
                    />
                </ol>
            </section>
        </Show>
    }
}

/// "3 selected · Decline · Dismiss · Clear", and how the last batch fared.
fn triage_bar(selection: Selection, viewer: StoredValue<Option<Viewer>>) -> impl IntoView {
    let results = RwSignal::new(None::<String>);
    // Made in the browser when the first batch is sent; a new batch is a new attempt.
    let attempt = StoredValue::new(String::new());
    let run = Action::new(move |action: &String| {
        let ids = selection.selected.get_untracked();
        let csrf = viewer.with_value(|viewer| {
            viewer
                .as_ref()
                .map(|viewer| viewer.csrf.clone())
                .unwrap_or_default()
        });
        let action = action.clone();
        if attempt.with_value(String::is_empty) {
            attempt.set_value(batch_attempt());
        }
        let attempt = attempt.get_value();
        async move { triage(ids, action, attempt, csrf).await }
    });
    Effect::new(move |_| {
        if let Some(outcome) = run.value().get() {
            let said = match outcome {
                Ok(outcomes) => {
                    let count = |what: &str| outcomes.iter().filter(|o| o.outcome == what).count();
                    let mut parts = vec![format!("{} answered", count("recorded"))];
                    for (what, words) in [
                        ("answered_elsewhere", "answered elsewhere meanwhile"),
                        ("not_yours", "not yours to answer"),
                        ("gone", "no longer there"),
                    ] {
                        if count(what) > 0 {
                            parts.push(format!("{} {words}", count(what)));
                        }
                    }
                    parts.join("; ") + "."
                }
                Err(error) => error.to_string(),
            };
            results.set(Some(said));
            selection.selected.set(Vec::new());
            // A new batch is a new attempt; a retried one (the same attempt) answers nothing twice.
            attempt.set_value(String::new());
        }
    });
    let count = move || selection.selected.with(Vec::len);
    let any = move || count() != 0;
    view! {
        <div class="queue-triage" role="region" aria-label="Selected questions">
            <Show when=any>
                <span>{move || format!("{} selected", count())}</span>
                <button type="button" class="button" on:click=move |_| { run.dispatch("decline".to_owned()); }>
                    "Decline selected"
                </button>
                <button type="button" class="button" on:click=move |_| { run.dispatch("cancel".to_owned()); }>
                    "Dismiss selected"
                </button>
                <button type="button" class="button button-quiet" on:click=move |_| selection.selected.set(Vec::new())>
                    "Clear"
                </button>
            </Show>
            <p class="muted" role="status" data-testid="triage-result">{move || results.get()}</p>
        </div>
    }
}

/// A fresh id for a batch, which its answers' idempotency keys are made from: the browser's random UUID.
fn batch_attempt() -> String {
    web_sys::window()
        .and_then(|window| window.crypto().ok())
        .map(|crypto| crypto.random_uuid().replace('-', ""))
        .unwrap_or_default()
}

fn queue_item(card: Card, index: usize, now_ms: i64, selection: Selection) -> impl IntoView {
    let Card { head: item, alike } = card;
    let ids = std::iter::once(&item)
        .chain(&alike)
        .filter_map(|item| {
            item.question
                .as_ref()
                .map(|question| question.round_id.clone())
        })
        .collect::<Vec<_>>();
    let checkbox = (!ids.is_empty()).then(|| {
        let label = format!(
            "Select {}",
            if item.title.is_empty() {
                &item.session_id
            } else {
                &item.title
            }
        );
        let checked_ids = ids.clone();
        view! {
            <input
                type="checkbox"
                class="queue-select"
                aria-label=label
                prop:checked=move || selection.is_selected(&checked_ids)
                on:click=move |event: web_sys::MouseEvent| {
                    event.prevent_default();
                    selection.click(index, event.shift_key());
                }
            />
        }
    });
    let asked_by = (!alike.is_empty()).then(|| {
        let others = alike
            .iter()
            .map(|other| {
                let title = if other.title.is_empty() { other.session_id.clone() } else { other.title.clone() };
                view! {
                    <li>
                        <a href=format!("/sessions/{}", other.session_id)>{title}</a>
                    </li>
                }
            })
            .collect_view();
        view! {
            <details class="queue-alike">
                <summary>{format!("asked by {} agents", alike.len() + 1)}</summary>
                <p class="muted">
                    "One answer on the first's page, with \"Answer the identical questions the same way\", answers them all; or open each:"
                </p>
                <ul>{others}</ul>
            </details>
        }
    });
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
                {item.run.map(|run| format!(" · run {}", run.as_str().replace('_', " ")))}
            </span>
        }
        .into_any(),
    };
    view! {
        <li class="queue-item" data-state=state data-session-id=item.session_id.clone()>
            {checkbox}
            <a class="queue-link" href=href data-queue-link="">
                <span class="queue-title">{title}</span>
                {detail}
            </a>
            {asked_by}
        </li>
    }
}
