//! A question's banner: who asks, the countdown, each request's form or URL consent, and Accept / Decline /
//! Dismiss. A plain form post without JavaScript; checked instantly and sent by a server function with it.

use leptos::{html, prelude::*, server_fn::ServerFn};
use web_sys::SubmitEvent;

use super::{
    countdown::Countdown,
    fields::FieldControl,
    message::MessageText,
    server_form::{FormFields, ServerForm},
};
use crate::{
    domain::{
        form::FieldErrors, hooks::PERMISSION_KEY, responders::describe, round::ResponseAction,
    },
    ui::{
        browser::{BrowserPatterns, Live, focus_first_invalid, form_pairs},
        model::{
            ALIKE_CONTROL, ActiveRound, AnswerNotice, AnswerPost, AskerSeenView, RequestBody,
            RequestView, STANDING_CONTROL, Viewer, control_name,
        },
        posted_answer::{choice_name, control_problems, read_answer},
        server_fns::{AssignRound, ExtendDeadline, post_answer},
    },
};

/// What a banner needs from its page.
#[derive(Clone)]
pub struct BannerContext {
    pub session_id: String,
    pub csrf: String,
    /// Who is looking: whether they may answer follows from each round's responders.
    pub viewer: Viewer,
    pub server_now_ms: i64,
    /// Where an answer's outcome is shown once the banner is gone.
    pub page_notice: RwSignal<Option<AnswerNotice>>,
}

/// A refusal of a banner's form posted without JavaScript, shown when the page comes back.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub message: String,
    pub fields: FieldErrors,
    /// What was posted, so the form keeps the person's input.
    pub posted: Vec<(String, String)>,
}

#[component]
pub fn RoundBanner(
    round: ActiveRound,
    context: BannerContext,
    refused: Option<Refusal>,
    /// When the asker last polled, as the page's latest data says.
    seen: Signal<Option<AskerSeenView>>,
) -> impl IntoView {
    let live = use_context::<Live>();
    let (problem, initial_errors, posted_values) = match refused {
        Some(Refusal {
            message,
            fields,
            posted,
        }) => (Some(message), fields, Some(posted)),
        None => (None, FieldErrors::new(), None),
    };
    let form = BannerForm {
        form: NodeRef::new(),
        requests: StoredValue::new(round.requests.clone()),
        errors: RwSignal::new(initial_errors),
        problem: RwSignal::new(problem),
        sending: RwSignal::new(false),
    };
    let errors = form.errors;
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let BannerContext {
        session_id,
        csrf,
        viewer,
        server_now_ms,
        page_notice,
    } = context;
    let can_answer = viewer.may_answer(&round.responders);
    let extension_csrf = csrf.clone();
    let for_whom = describe(&round.responders);
    let why_not = if !viewer.can_answer() {
        "You have the viewer role: you can see this question but not answer it.".to_owned()
    } else {
        format!("This question is for {for_whom}: you can see it but not answer it.")
    };
    let heading_id = format!("round-{}-heading", round.round_id);
    let labelled_by = heading_id.clone();
    let answer_session = session_id.clone();
    let on_submit = move |event: SubmitEvent| form.send(event, &answer_session, page_notice, live);
    let on_input = move |event: web_sys::Event| form.check_changed(&event);

    let round_id = round.round_id.clone();
    let dom_stem: String = round
        .round_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    // A round of several requests is answered request by request: each has its own choice, sent together.
    let several = round.requests.len() > 1;
    let can_stand = round.can_stand;
    let permission = !several
        && round
            .requests
            .first()
            .is_some_and(|request| request.key == PERMISSION_KEY);
    let bodies = round
        .requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            request_body(
                request,
                &format!("f{dom_stem}-{index}"),
                errors,
                posted_values.clone(),
                several,
            )
        })
        .collect_view();
    view! {
        <section
            class="banner"
            id=format!("round-{round_id}")
            data-round-id=round_id.clone()
            aria-labelledby=labelled_by
        >
            <header class="banner-head">
                <h2 class="banner-asker" id=heading_id>
                    {round.asker.describe()}
                    " asks"
                </h2>
                <Countdown
                    deadline_ms=round.deadline_ms
                    server_now_ms=server_now_ms
                    askers=round.askers_deadline
                />
            </header>
            {(!for_whom.is_empty())
                .then(|| view! { <p class="banner-for">"for " {for_whom.clone()}</p> })}
            <AskerPresence seen=seen deadline_ms=round.deadline_ms server_now_ms=server_now_ms />
            {extension(
                session_id.clone(),
                round_id.clone(),
                extension_csrf.clone(),
                can_answer,
                round.askers_deadline,
            )}
            {viewer
                .principal
                .role
                .can_manage()
                .then(|| reassign(session_id.clone(), round_id.clone(), extension_csrf))}
            <form
                method="post"
                action=format!("/sessions/{session_id}/answer")
                class="banner-form"
                novalidate=move || hydrated.get()
                node_ref=form.form
                on:submit=on_submit
                on:input=on_input
                on:change=on_input
            >
                <input type="hidden" name="round" value=round_id.clone() />
                <input type="hidden" name="csrf" value=csrf />
                <input type="hidden" name="attempt" value=round.attempt.clone() />
                <fieldset class="banner-fields" disabled=!can_answer>
                    <legend class="visually-hidden">"Your answer"</legend>
                    {bodies}
                </fieldset>
                <p class="banner-problem" role="alert">
                    {move || form.problem.get()}
                </p>
                {(round.alike > 0 && can_answer)
                    .then(|| {
                        let label = if round.alike == 1 {
                            " Answer the 1 identical question waiting elsewhere the same way".to_owned()
                        } else {
                            format!(
                                " Answer the {} identical questions waiting elsewhere the same way",
                                round.alike,
                            )
                        };
                        view! {
                            <label class="banner-alike">
                                <input type="checkbox" name=ALIKE_CONTROL />
                                {label}
                            </label>
                        }
                    })}
                {(can_stand && can_answer)
                    .then(|| {
                        view! {
                            <div class="banner-standing">
                                <label>
                                    <input type="checkbox" name=STANDING_CONTROL />
                                    " Answer questions like this the same way"
                                </label>
                                <fieldset class="standing-options">
                                    <legend class="visually-hidden">"How the standing answer holds"</legend>
                                    <label>
                                        "Lasting "
                                        <select name="standing_minutes" aria-label="How long it stands">
                                            <option value="60" selected>"1 hour"</option>
                                            <option value="480">"8 hours"</option>
                                            <option value="1440">"24 hours"</option>
                                            <option value="10080">"7 days"</option>
                                        </select>
                                    </label>
                                    <label>
                                        " in "
                                        <select name="standing_scope" aria-label="Where it stands">
                                            <option value="session" selected>"this session"</option>
                                            <option value="every_session">
                                                "every session (this server)"
                                            </option>
                                        </select>
                                    </label>
                                    <label>
                                        " at most "
                                        <input
                                            type="number"
                                            name="standing_limit"
                                            aria-label="At most this many times"
                                            min="1"
                                            max="10000"
                                            inputmode="numeric"
                                            placeholder="any"
                                            class="standing-limit"
                                        />
                                        " times"
                                    </label>
                                    <label>
                                        <input
                                            type="checkbox"
                                            name="standing_prefix"
                                            aria-label="Also when only the first line matches"
                                        />
                                        " also when the message only starts the same (its first line)"
                                    </label>
                                </fieldset>
                            </div>
                        }
                    })}
                {action_buttons(several, permission, can_answer, form.sending)}
                {(!can_answer).then(|| view! { <p class="banner-note">{why_not}</p> })}
            </form>
        </section>
    }
}

/// "+1 hour" for someone who may answer; for a deadline the asker set, a note that it is fixed.
fn extension(
    session_id: String,
    round_id: String,
    csrf: String,
    can_answer: bool,
    askers: bool,
) -> impl IntoView {
    if !can_answer {
        return None;
    }
    if askers {
        return Some(
            view! {
                <p class="banner-extend muted">
                    "The asking server set this deadline itself: it cannot be extended."
                </p>
            }
            .into_any(),
        );
    }
    let extend = ServerAction::<ExtendDeadline>::new();
    let problem = move || match extend.value().get() {
        Some(Err(error)) => Some(server_message(&error)),
        _ => None,
    };
    Some(
        view! {
            <ServerForm
                to=ExtendDeadline::url()
                class="banner-extend"
                submit=Box::new(move |fields: &FormFields| {
                    extend
                        .dispatch(ExtendDeadline {
                            session_id: fields.text("session_id"),
                            round_id: fields.text("round_id"),
                            csrf: fields.text("csrf"),
                        });
                })
            >
                <input type="hidden" name="session_id" value=session_id />
                <input type="hidden" name="round_id" value=round_id />
                <input type="hidden" name="csrf" value=csrf />
                <button type="submit" class="button button-quiet">
                    "+1 hour"
                </button>
                <span class="banner-problem" role="status">
                    {problem}
                </span>
            </ServerForm>
        }
        .into_any(),
    )
}

/// An admin's "Hand to": a person, group or key (`user:rita`, `group:platform-oncall`), or empty for the
/// session's own responders.
fn reassign(session_id: String, round_id: String, csrf: String) -> impl IntoView {
    let assign = ServerAction::<AssignRound>::new();
    let outcome = move || match assign.value().get() {
        Some(Err(error)) => Some(server_message(&error)),
        Some(Ok(())) => Some("Handed on.".to_owned()),
        None => None,
    };
    let input_id = format!("assign-{round_id}");
    view! {
        <ServerForm
            to=AssignRound::url()
            class="banner-assign"
            submit=Box::new(move |fields: &FormFields| {
                assign
                    .dispatch(AssignRound {
                        session_id: fields.text("session_id"),
                        round_id: fields.text("round_id"),
                        assignee: fields.text("assignee"),
                        csrf: fields.text("csrf"),
                    });
            })
        >
            <input type="hidden" name="session_id" value=session_id />
            <input type="hidden" name="round_id" value=round_id />
            <input type="hidden" name="csrf" value=csrf />
            <label for=input_id.clone()>"Hand to "</label>
            <input
                id=input_id
                name="assignee"
                placeholder="group:platform-oncall"
                autocomplete="off"
                maxlength="80"
            />
            <button type="submit" class="button button-quiet">
                "Hand on"
            </button>
            <span class="banner-problem" role="status">
                {outcome}
            </span>
        </ServerForm>
    }
}

/// What a server function's refusal says, without the framework's prefix.
fn server_message(error: &ServerFnError) -> String {
    match error {
        ServerFnError::ServerError(message) => message.clone(),
        other => other.to_string(),
    }
}

/// What the banner's handlers share: its form element, the requests it answers, and what the person is told.
#[derive(Clone, Copy)]
struct BannerForm {
    form: NodeRef<html::Form>,
    requests: StoredValue<Vec<RequestView>>,
    errors: RwSignal<FieldErrors>,
    problem: RwSignal<Option<String>>,
    sending: RwSignal<bool>,
}

impl BannerForm {
    /// Checks the control a person just changed with the code the server runs, as they type.
    fn check_changed(self, event: &web_sys::Event) {
        let (Some(form), Some(target)) = (self.form.get(), event.target()) else {
            return;
        };
        let Some(name) = wasm_bindgen::JsCast::dyn_ref::<web_sys::Element>(&target)
            .and_then(|element| element.get_attribute("name"))
        else {
            return;
        };
        let posted = AnswerPost::from_pairs("", form_pairs(&form));
        if let Some(key) = name.strip_prefix("choice@") {
            // A request now declined or dismissed has nothing to correct; an accepted one is checked on submit.
            let prefix = format!("{key}/");
            self.errors
                .update(|errors| errors.retain(|control, _| !control.starts_with(&prefix)));
            return;
        }
        if !name.contains('/') {
            return;
        }
        let problems = self.requests.with_value(|requests| {
            control_problems(
                requests,
                &name,
                &posted.choices,
                &posted.values,
                &BrowserPatterns,
            )
        });
        self.errors.update(|errors| {
            if problems.is_empty() {
                errors.remove(&name);
            } else {
                errors.insert(name, problems);
            }
        });
    }

    /// Checks an accepted answer whole, then sends it with a server function; the outcome goes to the page's
    /// notice (and the live view refetches), a refusal back to the form.
    fn send(
        self,
        event: SubmitEvent,
        session_id: &str,
        page_notice: RwSignal<Option<AnswerNotice>>,
        live: Option<Live>,
    ) {
        event.prevent_default();
        if self.sending.get_untracked() {
            return;
        }
        let Some(form) = self.form.get() else {
            return;
        };
        let action = event
            .submitter()
            .and_then(|button| button.get_attribute("value"))
            .unwrap_or_else(|| ResponseAction::Accept.as_str().to_owned());
        let mut post = AnswerPost::from_pairs(session_id, form_pairs(&form));
        post.action = action.clone();
        if action == ResponseAction::Accept.as_str()
            && let Err(found) = self.requests.with_value(|requests| {
                read_answer(
                    requests,
                    ResponseAction::Accept,
                    &post.choices,
                    &post.values,
                    &BrowserPatterns,
                )
            })
        {
            self.errors.set(found);
            self.problem
                .set(Some("Some answers need another look.".to_owned()));
            focus_first_invalid(form);
            return;
        }
        self.sending.set(true);
        self.problem.set(None);
        leptos::task::spawn_local(async move {
            let outcome = post_answer(post).await;
            self.sending.set(false);
            match outcome {
                Ok(AnswerNotice::Refused {
                    message, fields, ..
                }) => {
                    let focus = !fields.is_empty();
                    self.errors.set(fields);
                    self.problem.set(Some(message));
                    if focus && let Some(form) = self.form.get_untracked() {
                        focus_first_invalid(form);
                    }
                }
                Ok(notice) => {
                    page_notice.set(Some(notice));
                    if let Some(live) = live {
                        live.changes.update(|n| *n += 1);
                    }
                }
                Err(error) => self
                    .problem
                    .set(Some(format!("The answer could not be sent: {error}"))),
            }
        });
    }
}

/// Accept / Decline / Dismiss, or for a round of several requests, "Send answers" and the two for all.
fn action_buttons(
    several: bool,
    permission: bool,
    can_answer: bool,
    sending: RwSignal<bool>,
) -> impl IntoView {
    let buttons = if several {
        [
            ("accept", "Send answers", "button"),
            ("decline", "Decline all", "button button-quiet"),
            ("cancel", "Dismiss all", "button button-quiet"),
        ]
    } else if permission {
        // A harness asking whether a tool call may run: the person allows or denies it.
        [
            ("accept", "Allow", "button"),
            ("decline", "Deny", "button button-quiet"),
            ("cancel", "Dismiss", "button button-quiet"),
        ]
    } else {
        [
            ("accept", "Accept", "button"),
            ("decline", "Decline", "button button-quiet"),
            ("cancel", "Dismiss", "button button-quiet"),
        ]
    };
    view! {
        <div class="banner-actions">
            {buttons
                .into_iter()
                .map(|(action, text, class)| {
                    view! {
                        <button
                            type="submit"
                            name="action"
                            value=action
                            class=class
                            disabled=move || !can_answer || sending.get()
                        >
                            {text}
                        </button>
                    }
                })
                .collect_view()}
        </div>
    }
}

/// "checked 3 s ago · every ~5 s", and the warnings that an answer may come too late or the asker may be gone.
#[component]
fn AskerPresence(
    seen: Signal<Option<AskerSeenView>>,
    deadline_ms: i64,
    server_now_ms: i64,
) -> impl IntoView {
    let live = use_context::<Live>();
    let presence = move || {
        let now = live
            .and_then(|live| live.now_ms.get())
            .unwrap_or(server_now_ms);
        seen.get().map(|seen| seen.presence(deadline_ms, now))
    };
    move || {
        presence().map(|presence| {
            view! {
                <div class="asker-presence">
                    <p class="asker-checked muted" data-testid="asker-checked">
                        "The asking server " {presence.checked}
                    </p>
                    {presence.too_late_warning.map(|warning| view! {
                        <p class="asker-warning" role="note" data-testid="too-late-warning">{warning}</p>
                    })}
                    {presence.silent_warning.map(|warning| view! {
                        <p class="asker-warning" role="note" data-testid="asker-silent">{warning}</p>
                    })}
                </div>
            }
        })
    }
}

/// One request's part of the banner: its message, then its form or the URL to consent to, and — in a round of
/// several — how this request is answered.
fn request_body(
    request: &RequestView,
    dom_stem: &str,
    errors: RwSignal<FieldErrors>,
    posted_values: Option<Vec<(String, String)>>,
    several: bool,
) -> impl IntoView + use<> {
    let choice = several.then(|| request_choice(request, posted_values.as_deref()));
    let body = match &request.body {
        RequestBody::Form { form } => form
            .fields
            .iter()
            .enumerate()
            .map(|(index, field)| {
                view! {
                    <FieldControl
                        field=field.clone()
                        name=control_name(&request.key, &field.name)
                        dom_id=format!("{dom_stem}-{index}")
                        errors=errors
                        posted_values=posted_values.clone()
                    />
                }
            })
            .collect_view()
            .into_any(),
        RequestBody::Url { url, host } => url_consent(url, host).into_any(),
    };
    view! {
        <div class="request" data-request-key=request.key.clone()>
            <div class="banner-message">
                <MessageText message=request.message.clone() />
            </div>
            <div class="request-body">{body}</div>
            {choice}
        </div>
    }
}

/// Answer, decline or dismiss one request of a round of several; Answer unless the person chose otherwise
/// (also after a refused post without JavaScript).
fn request_choice(
    request: &RequestView,
    posted: Option<&[(String, String)]>,
) -> impl IntoView + use<> {
    let name = choice_name(&request.key);
    let chosen = posted
        .and_then(|posted| posted.iter().rev().find(|(posted, _)| *posted == name))
        .map_or_else(|| "accept".to_owned(), |(_, value)| value.clone());
    let options = [
        ("accept", "Answer"),
        ("decline", "Decline"),
        ("cancel", "Dismiss"),
    ]
    .into_iter()
    .map(|(value, text)| {
        view! {
            <label class="request-choice-option">
                <input type="radio" name=name.clone() value=value checked=chosen == value />
                {text}
            </label>
        }
        .into_any()
    })
    .collect_view();
    view! {
        <fieldset class="request-choice">
            <legend class="visually-hidden">"How to answer: " {request.message.clone()}</legend>
            {options}
        </fieldset>
    }
}

/// The URL of a URL-mode request with its host emphasised; opened only by the person's click.
fn url_consent(url: &str, host: &str) -> impl IntoView + use<> {
    let (before, after) = url
        .find(host)
        .map(|at| url.split_at(at))
        .map(|(before, from_host)| {
            let after = from_host.strip_prefix(host).unwrap_or_default();
            (before.to_owned(), after.to_owned())
        })
        .unwrap_or_else(|| (url.to_owned(), String::new()));
    let shown_host = if url.contains(host) {
        host.to_owned()
    } else {
        String::new()
    };
    let punycode = RequestBody::is_punycode(host);
    view! {
        <div class="url-consent">
            <p class="url-full" data-testid="consent-url">
                {before}
                <strong class="url-host">{shown_host}</strong>
                {after}
            </p>
            {punycode
                .then(|| {
                    view! {
                        <p class="url-warning" role="note">
                            "This address is written in punycode: it may imitate another site's name. Check it before you open it."
                        </p>
                    }
                })}
            <p class="url-actions">
                <a href=url.to_owned() target="_blank" rel="noopener noreferrer" class="button button-quiet">
                    "Open"
                </a>
                " Accept records your consent; Anteroom never opens the address for you."
            </p>
        </div>
    }
}
