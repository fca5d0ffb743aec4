//! `/sessions/{id}`: a banner per open question, the lost-question banner, and the session's history.

use crate::ui::components::{
    page_title::PageTitle,
    server_form::{FormFields, ServerForm, dispatch_or_refuse},
};
use leptos::{prelude::*, server_fn::ServerFn};
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    domain::{round::ResponseAction, session::LostReason},
    ui::{
        components::{
            banner::{BannerContext, Refusal, RoundBanner},
            moment::Moment,
        },
        model::{
            AnswerNotice, HistoryEntry, LostView, Outcome, RecordedAction, SessionPage as Page,
            clock_time, zoned_time,
        },
        pages::not_found::NotFoundPage,
        server_fns::{PauseStanding, RevokeStanding, StopRun, load_session},
    },
};

#[component]
pub fn SessionPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let wanted = move || {
        (
            params.read().get("id").unwrap_or_default(),
            query.read().get("older"),
        )
    };
    let page = Resource::new(wanted, |(id, older)| load_session(id, older));
    let fresh = super::refreshed(move || {
        let (id, older) = (
            params.with_untracked(|p| p.get("id").unwrap_or_default()),
            query.with_untracked(|q| q.get("older")),
        );
        load_session(id, older)
    });
    // The outcome of the last answer given on this page; it outlives the banner it came from.
    let notice = RwSignal::new(None::<AnswerNotice>);
    // Only this session's events make the page fetch again. Browser only, like every effect.
    #[cfg(feature = "hydrate")]
    if let Some(live) = use_context::<crate::ui::browser::Live>() {
        Effect::new(move |_| {
            live.watching
                .set(Some(params.read().get("id").unwrap_or_default()));
        });
        on_cleanup(move || live.watching.set(None));
    }

    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading the session…"</p> }>
            {move || {
                page.get()
                    .map(|result| match result {
                        Err(error) => super::load_error(error).into_any(),
                        Ok(None) => view! { <NotFoundPage /> }.into_any(),
                        Ok(Some(first)) => session_view(first, fresh, notice).into_any(),
                    })
            }}
        </Transition>
    }
}

/// The page's frame is built once; banners come and go by round id, so a form being filled in is never
/// rebuilt by an unrelated change.
fn session_view(
    first: Page,
    fresh: RwSignal<Option<Option<Page>>>,
    notice: RwSignal<Option<AnswerNotice>>,
) -> impl IntoView {
    let session_id = first.session_id.clone();
    let initial = first.clone();
    let current = Memo::new(move |_| {
        let latest = fresh
            .get()
            .flatten()
            .filter(|page| page.session_id == session_id);
        latest.unwrap_or_else(|| initial.clone())
    });
    // A refused post without JavaScript goes back to its banner; any other notice heads the page.
    let refused = match first.notice.clone() {
        Some(AnswerNotice::Refused {
            round_id,
            message,
            fields,
            posted,
        }) => Some((
            round_id,
            Refusal {
                message,
                fields,
                posted,
            },
        )),
        other => {
            if other.is_some() {
                notice.set(other);
            }
            None
        }
    };
    let context = BannerContext {
        session_id: first.session_id.clone(),
        csrf: first.viewer.csrf.clone(),
        viewer: first.viewer.clone(),
        server_now_ms: first.now_ms,
        page_notice: notice,
    };
    let heading = if first.title.is_empty() {
        first.session_id.clone()
    } else {
        first.title.clone()
    };
    let active = move || current.with(|page| page.active.clone());
    // Askers' polls announce no event: while any banner shows them, the page fetches its data now and then.
    // Browser only: the server renders the page once and has nothing to refresh.
    #[cfg(feature = "hydrate")]
    if let Some(live) = use_context::<crate::ui::browser::Live>() {
        Effect::new(move |_| {
            let shows =
                current.with(|page| page.active.iter().any(|round| round.asker_seen.is_some()));
            live.shows_presence.set(shows);
        });
        on_cleanup(move || live.shows_presence.set(false));
    }
    let open_count = move || active().len();
    let page_title = {
        let heading = heading.clone();
        move || {
            let open = open_count();
            if open == 0 {
                format!("{heading} · Anteroom")
            } else {
                format!("({open}) {heading} · Anteroom")
            }
        }
    };

    view! {
        <PageTitle text=page_title />
        <article class="session" aria-labelledby="session-heading">
            <header class="session-head">
                <h1 id="session-heading">{heading}</h1>
                <p class="session-meta">
                    <span class="status" data-status=move || current.with(|page| page.status.as_str())>
                        {move || current.with(|page| page.status.as_str().replace('_', " "))}
                    </span>
                    " · session "
                    <code>{first.session_id.clone()}</code>
                    {first.agent.clone().map(|agent| format!(" · {agent}"))}
                </p>
            </header>
            {move || notice.get().map(notice_view)}
            {run_section(current, first.session_id.clone(), first.viewer.csrf.clone(), first.viewer.can_answer())}
            {move || {
                current.with(|page| {
                    let zone = page.viewer.time_zone.clone();
                    page.lost.clone().map(|lost| lost_banner(lost, zone))
                })
            }}
            <section class="banners" aria-label="Open questions">
                <For
                    each=active
                    key=|round| (round.round_id.clone(), round.deadline_ms, round.responders.clone())
                    children=move |round| {
                        let refused = refused
                            .as_ref()
                            .filter(|(id, _)| *id == round.round_id)
                            .map(|(_, refusal)| refusal.clone());
                        // The banner is built once; what changes while it is open (the asker's polls) is read here.
                        let id = round.round_id.clone();
                        let seen = Signal::derive(move || {
                            current.with(|page| {
                                page.active
                                    .iter()
                                    .find(|active| active.round_id == id)
                                    .and_then(|active| active.asker_seen)
                            })
                        });
                        view! { <RoundBanner round=round context=context.clone() refused=refused seen=seen /> }
                    }
                />
                <Show when=move || open_count() == 0>
                    <p class="no-questions" data-testid="no-open-questions">
                        "No question is waiting in this session."
                    </p>
                </Show>
            </section>
            {standing_section(current, first.viewer.csrf.clone(), first.viewer.can_answer())}
            {history_section(current)}
        </article>
    }
}

/// The agent run under `anteroom run`: its state, its command, the tail of its output (text, never markup),
/// and a Stop behind a confirmation (a disclosure, so it works without JavaScript too).
fn run_section(
    current: Memo<Page>,
    session_id: String,
    csrf: String,
    can_answer: bool,
) -> impl IntoView {
    let stop = ServerAction::<StopRun>::new();
    let run = move || current.with(|page| page.run.clone());
    let (session_id, csrf) = (StoredValue::new(session_id), StoredValue::new(csrf));
    view! {
        {move || {
            run()
                .map(|run| {
                    let live = !run.state.is_ended() && run.stop_requested_by.is_none();
                    let zone = current.with_untracked(|page| page.viewer.time_zone.clone());
                    let stop_error = move || {
                        stop.value().get().and_then(Result::err).map(|error| error.to_string())
                    };
                    view! {
                        <section class="run" aria-labelledby="run-heading" data-run-state=run.state.as_str()>
                            <h2 id="run-heading">"Agent"</h2>
                            <p class="run-meta">
                                <span class="status" data-status=run.state.as_str() data-testid="run-state">
                                    {run.described()}
                                </span>
                                " · "
                                <code>{run.command.clone()}</code>
                                {format!(" · on {} · started {}", run.host, zoned_time(run.started_ms, zone.as_deref()))}
                            </p>
                            <pre class="run-output" data-testid="run-output" tabindex="0" aria-label="The agent's latest output">
                                <span>{if run.output.is_empty() { "(no output yet)".to_owned() } else { run.output.clone() }}</span>
                            </pre>
                            {(live && can_answer)
                                .then(|| {
                                    view! {
                                        <details class="run-stop">
                                            <summary class="button button-quiet">"Stop the agent…"</summary>
                                            <p>"The agent is interrupted at once, then ended if it lingers; its waiting questions end with it."</p>
                                            <ServerForm
                                                to=StopRun::url()
                                                class="run-stop-form"
                                                submit=Box::new(move |fields: &FormFields| {
                                                    stop.dispatch(StopRun { session_id: fields.text("session_id"), csrf: fields.text("csrf") });
                                                })
                                            >
                                                <input type="hidden" name="session_id" value=session_id.get_value() />
                                                <input type="hidden" name="csrf" value=csrf.get_value() />
                                                <button type="submit" class="button button-danger">"Stop it now"</button>
                                            </ServerForm>
                                        </details>
                                    }
                                })}
                            {move || stop_error().map(|error| view! { <p class="error" role="alert">{error}</p> })}
                        </section>
                    }
                })
        }}
    }
}

/// The standing answers in force here, each with who made it, until when, how often it answered, and a
/// Revoke button (a form, so it works without JavaScript too).
fn standing_section(current: Memo<Page>, csrf: String, can_answer: bool) -> impl IntoView {
    let revoke = ServerAction::<RevokeStanding>::new();
    let pause = ServerAction::<PauseStanding>::new();
    let revoked = RwSignal::new(Vec::<i64>::new());
    let paused = RwSignal::new(Vec::<(i64, bool)>::new());
    let csrf = StoredValue::new(csrf);
    Effect::new(move |_| {
        if let Some(Ok(id)) = revoke.value().get() {
            revoked.update(|revoked| revoked.push(id));
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(change)) = pause.value().get() {
            paused.update(|paused| paused.push(change));
        }
    });
    let rules = move || {
        let gone = revoked.get();
        let changed = paused.get();
        current.with(|page| {
            page.standing
                .iter()
                .filter(|rule| !gone.contains(&rule.id))
                .cloned()
                .map(|mut rule| {
                    // The latest pause or resume pressed here wins over the page's last reading.
                    if let Some((_, now)) = changed.iter().rev().find(|(id, _)| *id == rule.id) {
                        rule.paused = *now;
                    }
                    rule
                })
                .collect::<Vec<_>>()
        })
    };
    view! {
        <Show when=move || !rules().is_empty()>
            <section class="standing" aria-labelledby="standing-heading">
                <h2 id="standing-heading">"Standing answers"</h2>
                <ul class="standing-list">
                    <For
                        each=rules
                        key=|rule| (rule.id, rule.paused)
                        children=move |rule| {
                            let csrf = csrf.get_value();
                            let (session_id, zone) = current.with_untracked(|page| {
                                (page.session_id.clone(), page.viewer.time_zone.clone())
                            });
                            view! {
                                <li class="standing-rule" data-rule-id=rule.id>
                                    <p>
                                        <strong>{format!("#{} · {}", rule.id, rule.action)}</strong>
                                        " · "
                                        {rule.asker.describe()}
                                        {rule.everywhere.then_some(" · in every session")}
                                        {rule.prefix.then_some(" · messages starting so")}
                                        {rule.paused.then_some(" · paused")}
                                    </p>
                                    <pre class="message-code standing-message">{rule.message.clone()}</pre>
                                    <p class="muted">
                                        {format!(
                                            "by {} · until {} · answered {} time{}{}",
                                            rule.created_by,
                                            zoned_time(rule.until_ms, zone.as_deref()),
                                            rule.uses,
                                            if rule.uses == 1 { "" } else { "s" },
                                            rule.limit.map(|limit| format!(" of at most {limit}")).unwrap_or_default(),
                                        )}
                                    </p>
                                    {can_answer
                                        .then(|| {
                                            let pause_session = session_id.clone();
                                            let pause_csrf = csrf.clone();
                                            view! {
                                                <div class="standing-actions">
                                                    <ServerForm
                                                        to=PauseStanding::url()
                                                        class="standing-pause"
                                                        submit=Box::new(move |fields: &FormFields| {
                                                            let call = fields.whole_number("id", "The standing answer").map(|id| PauseStanding {
                                                                session_id: fields.text("session_id"),
                                                                id,
                                                                paused: fields.text("paused") == "true",
                                                                csrf: fields.text("csrf"),
                                                            });
                                                            dispatch_or_refuse(pause, call);
                                                        })
                                                    >
                                                        <input type="hidden" name="session_id" value=pause_session />
                                                        <input type="hidden" name="id" value=rule.id />
                                                        <input type="hidden" name="paused" value=(!rule.paused).to_string() />
                                                        <input type="hidden" name="csrf" value=pause_csrf />
                                                        <button type="submit" class="button button-quiet">
                                                            {if rule.paused { "Resume" } else { "Pause" }}
                                                        </button>
                                                    </ServerForm>
                                                    <ServerForm
                                                        to=RevokeStanding::url()
                                                        class="standing-revoke"
                                                        submit=Box::new(move |fields: &FormFields| {
                                                            let call = fields.whole_number("id", "The standing answer").map(|id| RevokeStanding {
                                                                session_id: fields.text("session_id"),
                                                                id,
                                                                csrf: fields.text("csrf"),
                                                            });
                                                            dispatch_or_refuse(revoke, call);
                                                        })
                                                    >
                                                        <input type="hidden" name="session_id" value=session_id />
                                                        <input type="hidden" name="id" value=rule.id />
                                                        <input type="hidden" name="csrf" value=csrf />
                                                        <button type="submit" class="button button-quiet">
                                                            "Revoke"
                                                        </button>
                                                    </ServerForm>
                                                </div>
                                            }
                                        })}
                                </li>
                            }
                        }
                    />
                </ul>
            </section>
        </Show>
    }
}

/// The session's history, newest first, with links to older and newer pages of it.
fn history_section(current: Memo<Page>) -> impl IntoView {
    view! {
    <section class="history" aria-labelledby="history-heading">
        <h2 id="history-heading">"History"</h2>
        {move || {
            let (entries, now_ms, zone) = current.with(|page| {
                (page.history.clone(), page.now_ms, page.viewer.time_zone.clone())
            });
            if entries.is_empty() {
                view! { <p class="muted">"No questions yet."</p> }.into_any()
            } else {
                view! {
                    <ol class="history-list">
                        {entries
                            .into_iter()
                            .map(|entry| history_entry(entry, now_ms, zone.clone()))
                            .collect_view()}
                    </ol>
                }
                    .into_any()
            }
        }}
        {move || {
            let (session, older, paged) = current
                .with(|page| (page.session_id.clone(), page.older.clone(), page.paged));
            // Session and round ids are URL-safe by construction (`[A-Za-z0-9._:-]`, UUIDs).
            let base = format!("/sessions/{session}");
            view! {
                <nav class="history-pages" aria-label="History pages">
                    {paged.then(|| view! { <a href=base.clone()>"Newest"</a> })}
                    {older.map(|older| {
                        view! {
                            <a
                                href=format!("{base}?older={older}")
                                rel="next"
                                data-testid="history-older"
                            >
                                "Older questions"
                            </a>
                        }
                    })}
                </nav>
            }
        }}
    </section>
    }
}

fn notice_view(notice: AnswerNotice) -> impl IntoView {
    let (kind, text) = match &notice {
        AnswerNotice::Recorded { action, alike, .. } => (
            "ok",
            format!(
                "{}{}",
                match action {
                    RecordedAction::All(ResponseAction::Accept) => {
                        "Your answer was recorded; the agent receives it on its next poll."
                    }
                    RecordedAction::All(ResponseAction::Decline) => {
                        "You declined; the agent is told so on its next poll."
                    }
                    RecordedAction::All(ResponseAction::Cancel) => {
                        "You dismissed the question; the agent is told it was dismissed."
                    }
                    RecordedAction::Mixed => {
                        "Your answers were recorded, each as you chose; the agent receives them on its next poll."
                    }
                },
                match alike {
                    Some((answered, 0)) => format!(
                        " {answered} identical question{} answered the same way.",
                        if *answered == 1 { " was" } else { "s were" }
                    ),
                    Some((answered, elsewhere)) => format!(
                        " {answered} identical question{} answered the same way; {elsewhere} had been answered or had ended meanwhile.",
                        if *answered == 1 { " was" } else { "s were" }
                    ),
                    None => String::new(),
                }
            ),
        ),
        AnswerNotice::AlreadyAnswered {
            by, at_ms, actions, ..
        } => (
            "warn",
            format!(
                "Someone answered first: {} chose {} at {}. Your answer was not recorded.",
                by.as_deref().unwrap_or("an orchestrator"),
                if actions.is_empty() {
                    "an answer".to_owned()
                } else {
                    actions
                        .iter()
                        .map(|action| action.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                at_ms.map(clock_time).unwrap_or_default()
            ),
        ),
        AnswerNotice::Closed { message, .. } | AnswerNotice::Refused { message, .. } => {
            ("warn", message.clone())
        }
    };
    view! {
        <p class="notice" data-kind=kind role="status" data-testid="answer-notice">
            {text}
        </p>
    }
}

fn lost_banner(lost: LostView, zone: Option<String>) -> impl IntoView {
    let (reason, heading, explanation) = match lost.reason {
        LostReason::Expired => (
            "expired",
            "A question expired before anyone answered",
            "Nobody answered before its deadline. The agent was told the question expired (not that you \
             declined) and went on without your answer.",
        ),
        LostReason::Stranded => (
            "stranded",
            "A question was left without an answer",
            "The session still waited for input, but no question is open any more: the server that asked may \
             have stopped. The agent may still be waiting; check on it or resume the session.",
        ),
        LostReason::AskerStopped => (
            "asker_stopped",
            "The asking server stopped waiting",
            "The server that asked gave up at its own deadline, before anyone answered. The agent was told the \
             question expired and went on without your answer; answering now could not reach it.",
        ),
        LostReason::Revoked => (
            "revoked",
            "A question ended when the session's token was revoked",
            "The asking server can no longer poll with a revoked token, so nobody could answer it any more. The \
             agent did not receive an answer.",
        ),
        LostReason::NobodyAvailable => (
            "nobody_available",
            "Nobody was available",
            "Everyone this question climbed to was asked, and nobody answered before the session's limit. The \
             agent was told the question expired and went on without an answer.",
        ),
        LostReason::Undelivered => (
            "undelivered",
            "An answer never reached the agent",
            "The answer was recorded, but the asking server stopped waiting before it picked it up. The agent \
             was told the question expired; it did not act on this answer.",
        ),
    };
    view! {
        <section class="lost-banner" data-reason=reason aria-labelledby="lost-heading" data-testid="lost-banner">
            <h2 id="lost-heading">{heading}</h2>
            <p>{explanation}</p>
            {lost.detail.map(|detail| view! { <p class="lost-detail" data-testid="lost-detail">{detail}</p> })}
            <blockquote class="lost-summary">{lost.summary}</blockquote>
            <p class="muted">
                "Request " <code>{lost.request_id}</code> " · " {zoned_time(lost.at_ms, zone.as_deref())}
            </p>
        </section>
    }
}

fn history_entry(entry: HistoryEntry, now_ms: i64, zone: Option<String>) -> impl IntoView {
    let single = entry.messages.len() == 1;
    let lost_note = match &entry.outcome {
        Outcome::Undelivered { message, .. } => Some(message.clone()),
        _ => None,
    };
    let (state, outcome) = match &entry.outcome {
        Outcome::Waiting => ("waiting", "Waiting for an answer".to_owned()),
        Outcome::Answered { actions } => (
            "answered",
            actions
                .iter()
                .map(|action| match action {
                    ResponseAction::Accept => "Accepted",
                    ResponseAction::Decline => "Declined",
                    ResponseAction::Cancel => "Dismissed",
                })
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Outcome::Expired => ("expired", "Expired unanswered".to_owned()),
        Outcome::Undelivered { .. } => ("undelivered", "Answered — not delivered".to_owned()),
        Outcome::Failed { code, .. } => ("failed", format!("Closed without an answer ({code})")),
    };
    let by = entry.answered_by.clone().map(|by| {
        let zone = zone.clone();
        let when = entry.answered_ms.map(|at_ms| {
            view! { <Moment at_ms server_now_ms=now_ms zone=zone.clone() /> }
        });
        view! { <span class="history-by">" by " <strong>{by}</strong> " " {when}</span> }
    });
    view! {
        <li class="history-entry" data-outcome=state data-round-id=entry.round_id.clone()>
            <p class="history-line">
                <span class="history-outcome">{outcome}</span>
                {by}
            </p>
            <p class="history-question">
                {entry.messages.join(" / ")}
            </p>
            <p class="muted">
                {entry.asker.describe()}
                " · asked "
                <Moment at_ms=entry.asked_ms server_now_ms=now_ms zone=zone.clone() />
            </p>
            {lost_note.map(|note| view! { <p class="history-lost" data-testid="history-undelivered">{note}</p> })}
            {entry
                .answers
                .into_iter()
                .map(|answer| {
                    // One request needs no name; several are told apart by their keys.
                    let key = if single { "Answer".to_owned() } else { answer.key };
                    view! {
                        <div class="history-answer">
                            <p class="muted">{key}</p>
                            <dl>
                                {answer
                                    .fields
                                    .into_iter()
                                    .map(|(label, value)| view! { <dt>{label}</dt> <dd>{value}</dd> })
                                    .collect_view()}
                            </dl>
                            <details>
                                <summary>"Show JSON"</summary>
                                <code>{answer.json}</code>
                            </details>
                        </div>
                    }
                })
                .collect_view()}
        </li>
    }
}
