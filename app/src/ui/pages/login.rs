//! `/login` and `/setup`: plain form posts (they work without JavaScript) handled by the server.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The sign-in form. Errors and the page to return to arrive in the query string.
#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |name: &str| query.with_untracked(|query| query.get(name).unwrap_or_default());
    let next = get("next");
    let message = match get("error").as_str() {
        "invalid" => Some("That username and password do not match."),
        "slow_down" => {
            Some("Too many attempts for this username; wait a few seconds and try again.")
        }
        "unavailable" => Some("Signing in is not possible just now; try again in a moment."),
        _ => None,
    };
    let signed_out = !get("signed_out").is_empty();
    view! {
        <Title text="Sign in · Anteroom" />
        <section class="auth-card" aria-labelledby="login-heading">
            <h1 id="login-heading">"Sign in"</h1>
            {signed_out.then(|| view! { <p class="notice" data-kind="ok" role="status">"You are signed out."</p> })}
            {message.map(|message| view! { <p class="notice" data-kind="warn" role="alert">{message}</p> })}
            <form method="post" action="/login" class="auth-form">
                <input type="hidden" name="next" value=next />
                <label class="field-label" for="username">"Username"</label>
                <input class="field-input" id="username" name="username" autocomplete="username" required />
                <label class="field-label" for="password">"Password"</label>
                <input
                    class="field-input"
                    id="password"
                    name="password"
                    type="password"
                    autocomplete="current-password"
                    required
                />
                <button type="submit" class="button">"Sign in"</button>
            </form>
            <p class="muted">
                "No account yet? An admin adds people with " <code>"anteroom user add"</code>
                "; on a new instance, open the one-time link Anteroom printed when it first started."
            </p>
        </section>
    }
}

/// The first-run page behind the one-time link: choose the first admin's username and password.
#[component]
pub fn SetupPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |name: &str| query.with_untracked(|query| query.get(name).unwrap_or_default());
    let token = get("token");
    let message = match get("error").as_str() {
        "username" => Some("A username is 1 to 64 characters of letters, digits and . _ - @."),
        "password" => Some("A password needs at least 8 characters."),
        "link" => Some(
            "This link was already used or has expired. Restart Anteroom for a new one, or run `anteroom user add`.",
        ),
        "unavailable" => Some("The admin could not be created just now; try again in a moment."),
        _ => None,
    };
    view! {
        <Title text="Create the first admin · Anteroom" />
        <section class="auth-card" aria-labelledby="setup-heading">
            <h1 id="setup-heading">"Create the first admin"</h1>
            <p>"This one-time link lets you choose who manages this Anteroom. It works once."</p>
            {message.map(|message| view! { <p class="notice" data-kind="warn" role="alert">{message}</p> })}
            <form method="post" action="/setup" class="auth-form">
                <input type="hidden" name="token" value=token />
                <label class="field-label" for="username">"Username"</label>
                <input class="field-input" id="username" name="username" autocomplete="username" required />
                <label class="field-label" for="password">"Password (at least 8 characters)"</label>
                <input
                    class="field-input"
                    id="password"
                    name="password"
                    type="password"
                    autocomplete="new-password"
                    minlength="8"
                    required
                />
                <button type="submit" class="button">"Create and sign in"</button>
            </form>
        </section>
    }
}
