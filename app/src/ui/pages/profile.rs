//! `/profile`: how questions reach this person when no Anteroom tab is open — their e-mail and which
//! questions are mailed, and the browsers push is on in (turned on by `/reach.js`, removed here).

use leptos::prelude::*;

use crate::ui::{
    components::page_title::PageTitle,
    model::{ProfileView, clock_time},
    server_fns::{RemoveBrowser, SaveEmail, SaveQuiet, load_profile},
};

#[component]
pub fn ProfilePage() -> impl IntoView {
    let save = ServerAction::<SaveEmail>::new();
    let remove = ServerAction::<RemoveBrowser>::new();
    let quiet = ServerAction::<SaveQuiet>::new();
    let profile = Resource::new(
        move || {
            (
                save.version().get(),
                remove.version().get(),
                quiet.version().get(),
            )
        },
        |_| load_profile(),
    );
    view! {
        <PageTitle text="Your profile · Anteroom" />
        <section aria-labelledby="profile-heading" class="profile">
            <h1 id="profile-heading">"How questions reach you"</h1>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || {
                    profile
                        .get()
                        .map(|result| match result {
                            Err(error) => super::load_error(error).into_any(),
                            Ok(view) => settings(view, save, remove, quiet).into_any(),
                        })
                }}
            </Suspense>
        </section>
    }
}

fn settings(
    view: ProfileView,
    save: ServerAction<SaveEmail>,
    remove: ServerAction<RemoveBrowser>,
    quiet: ServerAction<SaveQuiet>,
) -> impl IntoView {
    let chosen = view.email_questions.clone();
    let option = move |value: &'static str, label: &'static str| {
        let selected = chosen == value;
        view! { <option value=value selected=selected>{label}</option> }
    };
    let saved = move || match save.value().get() {
        Some(Ok(())) => Some(view! { <p class="notice" role="status">"Saved."</p> }.into_any()),
        Some(Err(error)) => {
            Some(view! { <p class="error" role="alert">{error.to_string()}</p> }.into_any())
        }
        None => None,
    };
    let removed = move || match remove.value().get() {
        Some(Err(error)) => Some(view! { <p class="error" role="alert">{error.to_string()}</p> }),
        _ => None,
    };
    let browsers = view.browsers.clone();
    let csrf = view.csrf.clone();
    let quiet_csrf = csrf.clone();
    let quiet_saved = move || match quiet.value().get() {
        Some(Ok(())) => {
            Some(view! { <p class="notice" role="status">"Quiet hours saved."</p> }.into_any())
        }
        Some(Err(error)) => {
            Some(view! { <p class="error" role="alert">{error.to_string()}</p> }.into_any())
        }
        None => None,
    };
    let remove_csrf = csrf.clone();
    let push_csrf = csrf.clone();
    view! {
        <p class="muted">{format!("Signed in as {} ({}).", view.username, view.role)}</p>
        <h2>"E-mail"</h2>
        <ActionForm action=save attr:class="email-settings">
            <input type="hidden" name="csrf" value=csrf.clone() />
            <label>
                "Your e-mail "
                <input type="email" name="email" value=view.email.clone().unwrap_or_default() autocomplete="email" />
            </label>
            <label>
                "Mail me "
                <select name="questions">
                    {option("off", "no questions")}
                    {option("all", "every question I may answer")}
                    {option("unanswered", "questions still unanswered after…")}
                </select>
            </label>
            <label>
                <input type="number" name="after_minutes" min="0" max="1440" value=view.email_after_minutes.to_string() />
                " minutes"
            </label>
            <button type="submit">"Save"</button>
        </ActionForm>
        {saved}
        <p class="muted">"Slack knows you by this address too: a click on a Slack button answers as you."</p>
        <h2>"Quiet hours"</h2>
        <p class="muted">"While it is quiet where you are, pushes and mails to you wait until it ends; none is dropped."</p>
        <ActionForm action=quiet attr:class="quiet-settings">
            <input type="hidden" name="csrf" value=quiet_csrf />
            <label>"From " <input type="time" name="quiet_from" value=view.quiet_from.clone() /></label>
            <label>" until " <input type="time" name="quiet_until" value=view.quiet_until.clone() /></label>
            <label>
                " in the time zone "
                <input type="text" name="time_zone" value=view.time_zone.clone() placeholder="Europe/Paris" data-fill-time-zone="" />
            </label>
            <button type="submit">"Save quiet hours"</button>
        </ActionForm>
        {quiet_saved}
        <h2>"Push to this browser or phone"</h2>
        <p>
            <button type="button" id="push-on" data-csrf=push_csrf>"Turn on push here"</button>
        </p>
        <p id="push-status" class="muted" role="status"></p>
        {removed}
        {if browsers.is_empty() {
            view! { <p class="queue-empty">"Push is not on in any browser."</p> }.into_any()
        } else {
            view! {
                <ul class="browsers">
                    {browsers
                        .into_iter()
                        .map(|browser| {
                            let csrf = remove_csrf.clone();
                            view! {
                                <li>
                                    <span>{browser.device}</span>
                                    <span class="muted">{format!(" since {}", clock_time(browser.created_ms))}</span>
                                    <ActionForm action=remove attr:class="inline">
                                        <input type="hidden" name="id" value=browser.id />
                                        <input type="hidden" name="csrf" value=csrf />
                                        <button type="submit">"Remove"</button>
                                    </ActionForm>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            }
                .into_any()
        }}
    }
}
