//! `/login` and `/setup`: plain form posts (they work without JavaScript) handled by the server.

use crate::ui::components::page_title::PageTitle;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// What the sign-in page offers: the company's identity provider (by the name on its button), the password
/// form, or both. The server provides it as context and writes it into the document's `<meta>` tags, which the
/// browser reads, so both render the same page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInChoices {
    pub provider: Option<String>,
    pub passwords: bool,
    /// Whether browsers can use passkeys here (the public URL is a domain, over https or on localhost).
    pub passkeys: bool,
}

impl Default for SignInChoices {
    fn default() -> Self {
        Self {
            provider: None,
            passwords: true,
            passkeys: false,
        }
    }
}

/// The `<meta>` names the choices travel in (`sign_in_choices` reads them in the browser by these names).
pub const PROVIDER_META: &str = "anteroom-provider";
pub const PASSWORDS_META: &str = "anteroom-passwords";
pub const PASSKEYS_META: &str = "anteroom-passkeys";

#[cfg(feature = "ssr")]
pub(crate) fn sign_in_choices() -> SignInChoices {
    use_context::<SignInChoices>().unwrap_or_default()
}

#[cfg(not(feature = "ssr"))]
pub(crate) fn sign_in_choices() -> SignInChoices {
    let meta = |selector: &str| {
        web_sys::window()?
            .document()?
            .query_selector(selector)
            .ok()??
            .get_attribute("content")
    };
    SignInChoices {
        provider: meta("meta[name=anteroom-provider]"),
        passwords: meta("meta[name=anteroom-passwords]").as_deref() != Some("off"),
        passkeys: meta("meta[name=anteroom-passkeys]").is_some(),
    }
}

/// The sign-in page: the provider's button and the password form, as configured. Errors and the page to
/// return to arrive in the query string.
#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let get = move |name: &str| query.with_untracked(|query| query.get(name).unwrap_or_default());
    let next = get("next");
    let message = match get("error").as_str() {
        "invalid" => Some("That username and password do not match."),
        "unavailable" => Some("Signing in is not possible just now; try again in a moment."),
        "passwords" => Some("Passwords do not sign in here: use your company account."),
        _ => None,
    };
    let signed_out = !get("signed_out").is_empty();
    let choices = sign_in_choices();
    // A link, not a form: the page's `form-action 'self'` would stop a form's redirect to the provider; and
    // `rel="external"`, so the app's router lets the browser go to the server instead of routing it itself.
    let provider = choices.provider.map(|name| {
        let href = format!("/auth/oidc/start?next={}", query_value(&next));
        view! {
            <p>
                <a href=href rel="external" class="button" data-testid="provider-sign-in">
                    "Sign in with "
                    {name}
                </a>
            </p>
        }
    });
    // `/passkeys.js` runs the ceremony (loaded by `/reach.js` on the first click), then goes to `next`; the
    // button shows once `/reach.js` finds the browser can use passkeys (`passkey-only`).
    let passkey = choices.passkeys.then(|| {
        view! {
            <p class="passkey-only">
                <button type="button" id="passkey-sign-in" class="button" data-next=next.clone()>
                    "Sign in with a passkey"
                </button>
            </p>
            <p id="passkey-status" class="muted" role="status"></p>
        }
    });
    view! {
        <PageTitle text="Sign in · Anteroom" />
        <section class="auth-card" aria-labelledby="login-heading">
            <h1 id="login-heading">"Sign in"</h1>
            {signed_out.then(|| view! { <p class="notice" data-kind="ok" role="status">"You are signed out."</p> })}
            {message.map(|message| view! { <p class="notice" data-kind="warn" role="alert">{message}</p> })}
            {provider}
            {passkey}
            {choices
                .passwords
                .then(|| {
                    credentials_form(CredentialsForm {
                        action: "/login",
                        hidden: ("next", next),
                        password_label: "Password",
                        new_password: false,
                        submit: "Sign in",
                    })
                })}
            <p class="muted">
                "No account yet? An admin adds people with " <code>"anteroom user add"</code>
                "; on a new instance, open the one-time link Anteroom printed when it first started."
            </p>
        </section>
    }
}

/// `value` percent-encoded for a query string as `encodeURIComponent` does it: the browser asks JavaScript (no
/// encoder in the bundle), the server encodes the same characters.
#[cfg(not(feature = "ssr"))]
fn query_value(value: &str) -> String {
    String::from(js_sys::encode_uri_component(value))
}

#[cfg(feature = "ssr")]
fn query_value(value: &str) -> String {
    use std::fmt::Write as _;
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
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
        <PageTitle text="Create the first admin · Anteroom" />
        <section class="auth-card" aria-labelledby="setup-heading">
            <h1 id="setup-heading">"Create the first admin"</h1>
            <p>"This one-time link lets you choose who manages this Anteroom. It works once."</p>
            {message.map(|message| view! { <p class="notice" data-kind="warn" role="alert">{message}</p> })}
            {credentials_form(CredentialsForm {
                action: "/setup",
                hidden: ("token", token),
                password_label: "Password (at least 8 characters)",
                new_password: true,
                submit: "Create and sign in",
            })}
        </section>
    }
}

/// What differs between the sign-in form and the first-admin form.
struct CredentialsForm {
    action: &'static str,
    /// The hidden input the handler needs (where to go next, or the one-time token).
    hidden: (&'static str, String),
    password_label: &'static str,
    /// A password being chosen (browsers offer to generate one) rather than entered.
    new_password: bool,
    submit: &'static str,
}

/// A username and password form posted to the server (it works without JavaScript).
fn credentials_form(form: CredentialsForm) -> impl IntoView {
    let (hidden_name, hidden_value) = form.hidden;
    view! {
        <form method="post" action=form.action class="auth-form">
            <input type="hidden" name=hidden_name value=hidden_value />
            <label class="field-label" for="username">"Username"</label>
            <input class="field-input" id="username" name="username" autocomplete="username" required />
            <label class="field-label" for="password">{form.password_label}</label>
            <input
                class="field-input"
                id="password"
                name="password"
                type="password"
                autocomplete=if form.new_password { "new-password" } else { "current-password" }
                minlength=form.new_password.then_some("8")
                required
            />
            <button type="submit" class="button">{form.submit}</button>
        </form>
    }
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "ssr")]
    #[test]
    fn a_return_address_is_encoded_as_the_browser_encodes_it() {
        // encodeURIComponent("/sessions/a b?x=1&y=é(!)") in a browser.
        assert_eq!(
            super::query_value("/sessions/a b?x=1&y=é(!)"),
            "%2Fsessions%2Fa%20b%3Fx%3D1%26y%3D%C3%A9(!)"
        );
    }
}
