//! `/profile`: how questions reach this person when no Anteroom tab is open — their e-mail and which
//! questions are mailed, the browsers push is on in (turned on by `/reach.js`, removed here), the browsers the
//! person is signed in on and their passkeys.

use leptos::{prelude::*, server_fn::ServerFn};
use leptos_router::hooks::use_query_map;

use crate::ui::{
    components::{
        page_title::PageTitle,
        server_form::{FormFields, ServerForm, dispatch_or_refuse},
    },
    model::{ProfileView, zoned_time},
    server_fns::{
        LinkSlack, RemoveBrowser, SaveDigest, SaveEmail, SaveQuiet, UnlinkSlack, load_profile,
        slack_link_offer,
    },
};

/// Every change a profile form makes, so the profile reloads after any of them.
#[derive(Clone, Copy)]
struct Changes {
    save: ServerAction<SaveEmail>,
    remove: ServerAction<RemoveBrowser>,
    quiet: ServerAction<SaveQuiet>,
    digest: ServerAction<SaveDigest>,
    link: ServerAction<LinkSlack>,
    unlink: ServerAction<UnlinkSlack>,
}

#[component]
pub fn ProfilePage() -> impl IntoView {
    let changes = Changes {
        save: ServerAction::<SaveEmail>::new(),
        remove: ServerAction::<RemoveBrowser>::new(),
        quiet: ServerAction::<SaveQuiet>::new(),
        digest: ServerAction::<SaveDigest>::new(),
        link: ServerAction::<LinkSlack>::new(),
        unlink: ServerAction::<UnlinkSlack>::new(),
    };
    let profile = Resource::new(
        move || {
            (
                changes.save.version().get(),
                changes.remove.version().get(),
                changes.quiet.version().get(),
                changes.digest.version().get(),
                changes.link.version().get(),
                changes.unlink.version().get(),
            )
        },
        |_| load_profile(),
    );
    // A link offered in a Slack reply arrives as `?slack_link=…`.
    let query = use_query_map();
    let offer_token = move || query.read().get("slack_link").unwrap_or_default();
    let offer = Resource::new(offer_token, |token| async move {
        if token.is_empty() {
            Ok(None)
        } else {
            slack_link_offer(token).await
        }
    });
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
                            Ok(view) => {
                                let offered = offer.get().and_then(Result::ok).flatten();
                                view! {
                                    {slack_offer(offered, offer_token(), view.csrf.clone(), changes.link)}
                                    {settings(view, changes)}
                                }
                                    .into_any()
                            }
                        })
                }}
            </Suspense>
        </section>
    }
}

/// What a form's last submission came to: `done`'s words when it went through (nothing when it has none),
/// its error otherwise, each announced to assistive technology.
fn said<T>(
    result: Option<Result<T, ServerFnError>>,
    done: impl FnOnce(T) -> Option<String>,
) -> Option<AnyView> {
    match result? {
        Ok(value) => {
            done(value).map(|text| view! { <p class="notice" role="status">{text}</p> }.into_any())
        }
        Err(error) => {
            Some(view! { <p class="error" role="alert">{error.to_string()}</p> }.into_any())
        }
    }
}

/// The card that takes a link offered in a Slack reply, when the page was opened from one.
fn slack_offer(
    offered: Option<String>,
    token: String,
    csrf: String,
    link: ServerAction<LinkSlack>,
) -> impl IntoView {
    let outcome = move || {
        said(link.value().get(), |slack_user| {
            Some(format!(
                "Linked: Slack account {slack_user} now answers as you."
            ))
        })
    };
    let card = offered.map(|slack_user| {
        view! {
            <div class="slack-offer" role="region" aria-label="Link a Slack account">
                <h2>"Link a Slack account"</h2>
                <p>
                    {format!("Slack account {slack_user} clicked an Anteroom button, but Anteroom did not know it. ")}
                    "Link it to you, and its clicks answer as you from now on (recorded as “you via Slack”). "
                    "Only link an account that is yours."
                </p>
                <ServerForm
                    to=LinkSlack::url()
                    class="slack-link"
                    submit=Box::new(move |fields: &FormFields| {
                        link.dispatch(LinkSlack {
                            token: fields.text("token"),
                            csrf: fields.text("csrf"),
                        });
                    })
                >
                    <input type="hidden" name="token" value=token />
                    <input type="hidden" name="csrf" value=csrf />
                    <button type="submit">"Link this Slack account"</button>
                </ServerForm>
            </div>
        }
    });
    view! {
        {card}
        {outcome}
    }
}

fn settings(view: ProfileView, changes: Changes) -> impl IntoView {
    let Changes {
        save,
        remove,
        quiet,
        digest,
        unlink,
        ..
    } = changes;
    let chosen = view.email_questions.clone();
    let option = move |value: &'static str, label: &'static str| {
        let selected = chosen == value;
        view! { <option value=value selected=selected>{label}</option> }
    };
    let saved = move || said(save.value().get(), |()| Some("Saved.".to_owned()));
    let removed = move || said(remove.value().get(), |_| None);
    let digest_saved = move || said(digest.value().get(), |()| Some("Digest saved.".to_owned()));
    let browsers = view.browsers.clone();
    // Times in the person's zone (empty: none chosen, so UTC here).
    let zone = (!view.time_zone.is_empty()).then(|| view.time_zone.clone());
    let csrf = view.csrf.clone();
    let quiet_csrf = csrf.clone();
    let quiet_saved = move || {
        said(quiet.value().get(), |()| {
            Some("Time zone and quiet hours saved.".to_owned())
        })
    };
    let remove_csrf = csrf.clone();
    let push_csrf = csrf.clone();
    let links_csrf = csrf.clone();
    let digest_csrf = csrf.clone();
    let sign_ins = sign_ins(view.sign_ins.clone(), csrf.clone(), zone.clone());
    let passkeys = passkeys(view.passkeys.clone(), csrf.clone(), zone.clone());
    view! {
        <p class="muted">{format!("Signed in as {} ({}).", view.username, view.role)}</p>
        {sign_ins}
        {passkeys}
        <h2>"E-mail"</h2>
        <ServerForm
            to=SaveEmail::url()
            class="email-settings"
            submit=Box::new(move |fields: &FormFields| {
                let call = fields
                    .whole_number("after_minutes", "The minutes")
                    .map(|after_minutes| SaveEmail {
                        email: fields.text("email"),
                        questions: fields.text("questions"),
                        after_minutes,
                        csrf: fields.text("csrf"),
                    });
                dispatch_or_refuse(save, call);
            })
        >
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
        </ServerForm>
        {saved}
        <p class="muted">"Slack knows you by this address too: a click on a Slack button answers as you."</p>
        {slack_links(view.slack_links.clone(), links_csrf, unlink, zone.clone())}
        <h2>"Digest"</h2>
        <ServerForm
            to=SaveDigest::url()
            class="digest-settings"
            submit=Box::new(move |fields: &FormFields| {
                let call = fields
                    .whole_number("digest_after", "The number of questions")
                    .map(|digest_after| SaveDigest {
                        digest_after,
                        csrf: fields.text("csrf"),
                    });
                dispatch_or_refuse(digest, call);
            })
        >
            <input type="hidden" name="csrf" value=digest_csrf />
            <label>
                "When more than "
                <input type="number" name="digest_after" min="0" max="1000" value=view.digest_after.to_string() />
                " questions reach me in a minute, gather the rest into one mail and one push (0: never)"
            </label>
            <button type="submit">"Save digest"</button>
        </ServerForm>
        {digest_saved}
        <h2>"Time zone and quiet hours"</h2>
        <p class="muted">
            "Pages show times in your time zone (left empty: this browser's). While it is quiet where you are, pushes and mails to you wait until it ends; none is dropped."
        </p>
        <ServerForm
            to=SaveQuiet::url()
            class="quiet-settings"
            submit=Box::new(move |fields: &FormFields| {
                quiet.dispatch(SaveQuiet {
                    quiet_from: fields.text("quiet_from"),
                    quiet_until: fields.text("quiet_until"),
                    time_zone: fields.text("time_zone"),
                    csrf: fields.text("csrf"),
                });
            })
        >
            <input type="hidden" name="csrf" value=quiet_csrf />
            <label>
                "Time zone "
                <input type="text" name="time_zone" value=view.time_zone.clone() placeholder="Europe/Paris" data-fill-time-zone="" />
            </label>
            <label>" Quiet from " <input type="time" name="quiet_from" value=view.quiet_from.clone() /></label>
            <label>" until " <input type="time" name="quiet_until" value=view.quiet_until.clone() /></label>
            <button type="submit">"Save time zone and quiet hours"</button>
        </ServerForm>
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
                                    <span class="muted">{format!(" since {}", zoned_time(browser.created_ms, zone.as_deref()))}</span>
                                    <ServerForm
                                        to=RemoveBrowser::url()
                                        class="inline"
                                        submit=Box::new(move |fields: &FormFields| {
                                            remove.dispatch(RemoveBrowser {
                                                id: fields.text("id"),
                                                csrf: fields.text("csrf"),
                                            });
                                        })
                                    >
                                        <input type="hidden" name="id" value=browser.id />
                                        <input type="hidden" name="csrf" value=csrf />
                                        <button type="submit">"Remove"</button>
                                    </ServerForm>
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

/// The browsers the person is signed in on, each with "Sign out" (a plain form: the server ends that browser's
/// session and shows this page again).
fn sign_ins(
    rows: Vec<crate::ui::model::SignInRow>,
    csrf: String,
    zone: Option<String>,
) -> impl IntoView {
    let rows = rows
        .into_iter()
        .map(|row| EndableRow {
            label: row.device,
            detail: format!(
                "{}{}",
                row.seen_ms
                    .map(|ms| format!(" last seen {}", zoned_time(ms, zone.as_deref())))
                    .unwrap_or_default(),
                if row.this_browser {
                    " (this browser)"
                } else {
                    ""
                }
            ),
            key: row.handle,
        })
        .collect();
    view! {
        <h2>"Signed in on"</h2>
        {endable_list(EndableList { class: "sign-ins", action: "/profile/sign-ins/end", key: "handle", button: "Sign out" }, rows, csrf)}
    }
}

/// The person's passkeys, each with "Remove" (a plain form), and "Add a passkey", whose ceremony `/passkeys.js`
/// runs (loaded by `/reach.js` on the first click). Shown where browsers can use passkeys, or to someone who
/// still has some.
fn passkeys(
    rows: Vec<crate::ui::model::PasskeyRow>,
    csrf: String,
    zone: Option<String>,
) -> impl IntoView {
    let offered = crate::ui::pages::login::sign_in_choices().passkeys;
    if !offered && rows.is_empty() {
        return None;
    }
    let rows = rows
        .into_iter()
        .map(|row| EndableRow {
            label: row.name,
            detail: format!(
                " added {}{}",
                zoned_time(row.added_ms, zone.as_deref()),
                row.used_ms
                    .map(|ms| format!(", last used {}", zoned_time(ms, zone.as_deref())))
                    .unwrap_or_default()
            ),
            key: row.id,
        })
        .collect();
    let add = offered.then(|| {
        // Shown once `/reach.js` finds the browser can make passkeys (`passkey-only`): without JavaScript, or in
        // a browser without WebAuthn, the button would do nothing.
        view! {
            <p class="passkey-only">
                <label>"Name " <input type="text" id="passkey-name" maxlength="64" placeholder="My phone" /></label>
                " "
                <button type="button" id="passkey-add" data-csrf=csrf.clone()>"Add a passkey"</button>
            </p>
            <p id="passkey-status" class="muted" role="status"></p>
        }
    });
    Some(view! {
        <h2>"Passkeys"</h2>
        <p class="muted">"A passkey signs you in with one touch: your phone's fingerprint or face, or a security key."</p>
        {endable_list(EndableList { class: "passkeys", action: "/profile/passkeys/remove", key: "id", button: "Remove" }, rows, csrf)}
        {add}
    })
}

/// A list of things the person ends with a plain form post: its class (and test id), where the form posts, the
/// name the row's key is posted under, and the button's words.
struct EndableList {
    class: &'static str,
    action: &'static str,
    key: &'static str,
    button: &'static str,
}

/// One row of an [`EndableList`]: what it is, what more to say of it, and the key the form posts.
struct EndableRow {
    label: String,
    detail: String,
    key: String,
}

fn endable_list(list: EndableList, rows: Vec<EndableRow>, csrf: String) -> impl IntoView {
    view! {
        <ul class=list.class data-testid=list.class>
            {rows
                .into_iter()
                .map(|row| {
                    let name = format!("{} {}", list.button, row.label);
                    view! {
                        <li>
                            <span>{row.label}</span>
                            <span class="muted">{row.detail}</span>
                            <form method="post" action=list.action class="inline">
                                <input type="hidden" name=list.key value=row.key />
                                <input type="hidden" name="csrf" value=csrf.clone() />
                                <button type="submit" aria-label=name>
                                    {list.button}
                                </button>
                            </form>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// The Slack accounts linked to the person by hand, each with Unlink.
fn slack_links(
    links: Vec<crate::ui::model::SlackLinkRow>,
    csrf: String,
    unlink: ServerAction<UnlinkSlack>,
    zone: Option<String>,
) -> impl IntoView {
    let failed = move || said(unlink.value().get(), |_| None);
    let list = (!links.is_empty()).then(|| {
        view! {
            <p>"Slack accounts linked to you by hand:"</p>
            <ul class="slack-links">
                {links
                    .into_iter()
                    .map(|link| {
                        let csrf = csrf.clone();
                        view! {
                            <li>
                                <span>{link.slack_user.clone()}</span>
                                <span class="muted">{format!(" since {}", zoned_time(link.linked_ms, zone.as_deref()))}</span>
                                <ServerForm
                                    to=UnlinkSlack::url()
                                    class="inline"
                                    submit=Box::new(move |fields: &FormFields| {
                                        unlink.dispatch(UnlinkSlack {
                                            slack_user: fields.text("slack_user"),
                                            csrf: fields.text("csrf"),
                                        });
                                    })
                                >
                                    <input type="hidden" name="slack_user" value=link.slack_user />
                                    <input type="hidden" name="csrf" value=csrf />
                                    <button type="submit">"Unlink"</button>
                                </ServerForm>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
    });
    view! {
        {list}
        {failed}
    }
}
