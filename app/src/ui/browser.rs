//! The browser's side of the live app: the event stream (reconnecting for ever), the ticking clock,
//! notifications, keyboard shortcuts, and reading forms. Only ever called in the browser.

use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue, closure::Closure};
use web_sys::{
    Event, EventSource, HtmlElement, HtmlFormElement, KeyboardEvent, MessageEvent, Notification,
    NotificationOptions, NotificationPermission,
};

use crate::domain::form::{PatternMatcher, backtracking::BROWSER_VALUE_CHARS};
use crate::ui::model::QueueView;

/// What the pages share about the live connection.
#[derive(Debug, Clone, Copy)]
pub struct Live {
    /// Bumped on every change the server announces and after every (re)connection: views refetch on it.
    pub changes: RwSignal<u64>,
    /// Bumped after every (re)connection and whenever events were missed: what the stream sends only as it
    /// changes (the queue) is read again then.
    pub reconnects: RwSignal<u64>,
    /// The session whose page is open: events about other sessions change nothing it shows, so they do not
    /// bump `changes`. `None` (any other page) hears every event.
    pub watching: RwSignal<Option<String>>,
    /// The attention queue as the server last sent it (it sends the whole view after each burst of changes).
    pub queue: RwSignal<Option<QueueView>>,
    /// Whether the event stream is connected.
    pub connected: RwSignal<bool>,
    /// The browser's clock in epoch milliseconds, ticking each second; `None` until the page is live,
    /// so the first render in the browser matches the server's.
    pub now_ms: RwSignal<Option<i64>>,
    /// Whether this browser lets Anteroom show notifications.
    pub notifications: RwSignal<bool>,
    /// Whether the page shows when askers last polled, so it should fetch its data again now and then.
    pub shows_presence: RwSignal<bool>,
    /// Whether the event stream was opened (it is opened once and then kept open).
    streaming: RwSignal<bool>,
}

impl Live {
    pub fn new() -> Self {
        Self {
            changes: RwSignal::new(0),
            reconnects: RwSignal::new(0),
            queue: RwSignal::new(None),
            watching: RwSignal::new(None),
            connected: RwSignal::new(false),
            now_ms: RwSignal::new(None),
            notifications: RwSignal::new(false),
            shows_presence: RwSignal::new(false),
            streaming: RwSignal::new(false),
        }
    }

    /// Starts the clock and the keyboard shortcuts (once, after hydration).
    pub fn start(self) {
        self.now_ms.set(Some(now()));
        let ticks = std::cell::Cell::new(0_u32);
        set_interval(
            move || {
                self.now_ms.set(Some(now()));
                ticks.set(ticks.get().wrapping_add(1));
                if ticks.get().is_multiple_of(PRESENCE_REFRESH_SECONDS)
                    && self.shows_presence.get_untracked()
                {
                    self.changes.update(|n| *n += 1);
                }
            },
            Duration::from_secs(1),
        );
        self.notifications
            .set(Notification::permission() == NotificationPermission::Granted);
        window_event_listener(leptos::ev::keydown, on_key);
    }

    /// Opens the event stream, once a person is signed in (it needs their session).
    pub fn connect(self) {
        if !self.streaming.get_untracked() {
            self.streaming.set(true);
            connect(self, 0);
        }
    }

    /// Asks the browser for permission to notify; the answer arrives later.
    pub fn ask_for_notifications(self) {
        let Ok(promise) = Notification::request_permission() else {
            return;
        };
        leptos::task::spawn_local(async move {
            let granted = wasm_bindgen_futures::JsFuture::from(promise)
                .await
                .ok()
                .and_then(|answer| answer.as_string())
                .is_some_and(|answer| answer == "granted");
            self.notifications.set(granted);
        });
    }
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}

#[expect(
    clippy::cast_possible_truncation,
    reason = "epoch milliseconds are whole and far below 2^53"
)]
fn now() -> i64 {
    js_sys::Date::now() as i64
}

/// The kinds of event that change what a page shows.
const CHANGES: [&str; 8] = [
    "round.created",
    "round.answered",
    "round.expired",
    "round.undelivered",
    "round.revoked",
    "session.changed",
    // A run's output: only its own session's page fetches again.
    "run.output",
    "resync",
];

/// How often a page showing askers' polls fetches them again: polls announce no event of their own.
const PRESENCE_REFRESH_SECONDS: u32 = 10;

/// Opens the pages' event stream (`/fn/live`: the API's events plus the queue's view). The browser's own
/// `EventSource` retries dropped connections; when it gives up (the server answered with an error, e.g. while
/// restarting) a new one is opened after a growing pause.
fn connect(live: Live, failures: u32) {
    let Ok(source) = EventSource::new("/fn/live") else {
        retry(live, failures);
        return;
    };
    let on_open = Closure::<dyn FnMut(Event)>::new(move |_| {
        live.connected.set(true);
        // Whatever happened while disconnected is read again.
        live.changes.update(|n| *n += 1);
        live.reconnects.update(|n| *n += 1);
    });
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    on_open.forget();

    for kind in CHANGES {
        let on_change = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let about = event_session(&event);
            let concerns_page = live.watching.with_untracked(|watching| {
                if kind == "run.output" {
                    watching.is_some() && *watching == about
                } else {
                    watching.is_none() || about.is_none() || *watching == about
                }
            });
            if concerns_page {
                live.changes.update(|n| *n += 1);
            }
            if kind == "resync" {
                live.reconnects.update(|n| *n += 1);
            }
            if kind == "round.created" {
                notify_in_background(&event);
            }
        });
        let _ = source.add_event_listener_with_callback(kind, on_change.as_ref().unchecked_ref());
        on_change.forget();
    }

    let on_queue = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let view = event
            .data()
            .as_string()
            .and_then(|data| serde_json::from_str::<QueueView>(&data).ok());
        if view.is_some() {
            live.queue.set(view);
        }
    });
    let _ = source.add_event_listener_with_callback("queue", on_queue.as_ref().unchecked_ref());
    on_queue.forget();

    let failing = source.clone();
    let on_error = Closure::<dyn FnMut(Event)>::new(move |_| {
        live.connected.set(false);
        if failing.ready_state() == EventSource::CLOSED {
            failing.close();
            retry(live, failures + 1);
        }
    });
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
}

fn retry(live: Live, failures: u32) {
    let pause = Duration::from_secs(1u64 << failures.min(5));
    set_timeout(move || connect(live, failures), pause);
}

/// The session an event is about (`None` for `resync`, which is about everything).
fn event_session(event: &MessageEvent) -> Option<String> {
    event
        .data()
        .as_string()
        .and_then(|data| serde_json::from_str::<serde_json::Value>(&data).ok())
        .and_then(|data| data.get("session_id")?.as_str().map(str::to_owned))
}

/// A browser notification for a new question, when the page is in the background and the person allowed it.
fn notify_in_background(event: &MessageEvent) {
    let hidden = document().hidden();
    if !hidden || Notification::permission() != NotificationPermission::Granted {
        return;
    }
    let session_id = event_session(event).unwrap_or_default();
    let options = NotificationOptions::new();
    options.set_body(&format!("Session {session_id} has a new question."));
    options.set_tag(&session_id);
    let Ok(notification) = Notification::new_with_options("An agent needs your answer", &options)
    else {
        return;
    };
    let target = format!("/sessions/{session_id}");
    let on_click = Closure::<dyn FnMut()>::new(move || {
        let _ = window().focus();
        let _ = window().location().assign(&target);
    });
    notification.set_onclick(Some(on_click.as_ref().unchecked_ref()));
    on_click.forget();
}

/// `j`/`k` move through the queue, `x` selects the focused entry, `Ctrl+Enter` accepts the focused form, `Esc`
/// leaves a field.
fn on_key(event: KeyboardEvent) {
    let Some(target) = event
        .target()
        .and_then(|target| target.dyn_into::<HtmlElement>().ok())
    else {
        return;
    };
    let tag = target.tag_name().to_ascii_lowercase();
    let editing =
        matches!(tag.as_str(), "input" | "textarea" | "select") || target.is_content_editable();
    let key = event.key();
    if key == "Escape" && editing {
        let _ = target.blur();
        return;
    }
    if key == "Enter" && (event.ctrl_key() || event.meta_key()) {
        if let Some(form) = target
            .closest("form")
            .ok()
            .flatten()
            .and_then(|form| form.dyn_into::<HtmlFormElement>().ok())
            && let Some(accept) = form
                .query_selector("button[value=accept]:not([disabled])")
                .ok()
                .flatten()
                .and_then(|button| button.dyn_into::<HtmlElement>().ok())
        {
            event.prevent_default();
            let _ = form.request_submit_with_submitter(Some(&accept));
        }
        return;
    }
    if editing || event.ctrl_key() || event.alt_key() || event.meta_key() {
        return;
    }
    if key == "x" {
        // Selects (or unselects) the focused queue entry for batch triage.
        if let Some(checkbox) = target
            .closest(".queue-item")
            .ok()
            .flatten()
            .and_then(|item| item.query_selector(".queue-select").ok().flatten())
            .and_then(|checkbox| checkbox.dyn_into::<HtmlElement>().ok())
        {
            event.prevent_default();
            checkbox.click();
        }
        return;
    }
    let step: i32 = match key.as_str() {
        "j" => 1,
        "k" => -1,
        _ => return,
    };
    let Ok(links) = document().query_selector_all("[data-queue-link]") else {
        return;
    };
    let count = links.length();
    if count == 0 {
        return;
    }
    let active: Option<JsValue> = document().active_element().map(Into::into);
    let current = (0..count).find(|&i| {
        links
            .item(i)
            .map(JsValue::from)
            .is_some_and(|link| Some(link) == active)
    });
    let next = match (current, step > 0) {
        (Some(i), true) => (i + 1).min(count - 1),
        (Some(i), false) => i.saturating_sub(1),
        (None, true) => 0,
        (None, false) => count - 1,
    };
    if let Some(link) = links
        .item(next)
        .and_then(|link| link.dyn_into::<HtmlElement>().ok())
    {
        event.prevent_default();
        let _ = link.focus();
    }
}

/// Every name/value pair the form would post (files are not part of any banner).
pub fn form_pairs(form: &HtmlFormElement) -> Vec<(String, String)> {
    let Ok(data) = web_sys::FormData::new_with_form(form) else {
        return Vec::new();
    };
    let Ok(Some(entries)) = js_sys::try_iter(&data) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pair = entry.dyn_into::<js_sys::Array>().ok()?;
            Some((pair.get(0).as_string()?, pair.get(1).as_string()?))
        })
        .collect()
}

/// Moves focus to the first control flagged invalid, once the flags are on the page.
pub fn focus_first_invalid(form: HtmlFormElement) {
    request_animation_frame(move || {
        if let Some(control) = form
            .query_selector("[aria-invalid=true]")
            .ok()
            .flatten()
            .and_then(|control| control.dyn_into::<HtmlElement>().ok())
        {
            let _ = control.focus();
        }
    });
}

/// Patterns in the browser, through its own `RegExp` (JSON Schema patterns are ECMA-262 regexes).
pub struct BrowserPatterns;

impl PatternMatcher for BrowserPatterns {
    fn is_match(&self, pattern: &str, value: &str) -> Option<bool> {
        // `RegExp` backtracks: the server already dropped patterns that could freeze the page
        // (`FormModel::for_the_browser`); long values are left to the server too.
        if value.chars().count() > BROWSER_VALUE_CHARS {
            return None;
        }
        let constructor = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("RegExp"))
            .ok()?
            .dyn_into::<js_sys::Function>()
            .ok()?;
        let arguments = js_sys::Array::of2(&JsValue::from_str(pattern), &JsValue::from_str("u"));
        // `construct` reports a bad pattern as an error instead of throwing through the wasm boundary.
        let regex = js_sys::Reflect::construct(&constructor, &arguments)
            .ok()?
            .dyn_into::<js_sys::RegExp>()
            .ok()?;
        Some(regex.test(value))
    }
}
