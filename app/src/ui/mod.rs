//! The web app's document shell, router and route table.

pub mod browser;
pub mod components;
pub mod model;
#[cfg(feature = "ssr")]
pub mod page_data;
pub mod pages;
pub mod posted_answer;
pub mod server_fns;

use leptos::prelude::*;
use leptos_meta::{MetaTags, provide_meta_context};
use leptos_router::{
    SsrMode, StaticSegment,
    components::{Route, Router, Routes},
    path,
};

use browser::Live;
use components::{header::AppHeader, page_title::PageTitle};
use pages::{
    admin::WebhookLogPage,
    home::HomePage,
    login::{self, LoginPage, SetupPage, SignInChoices},
    not_found::NotFoundPage,
    profile::ProfilePage,
    response_times::ResponseTimesPage,
    session::SessionPage,
};

/// The whole HTML document, rendered on the server around [`App`]; `stylesheet` is the fingerprinted
/// stylesheet's path, and `sign_in` what the sign-in page offers, which only the server knows.
pub fn shell(options: LeptosOptions, stylesheet: String, sign_in: SignInChoices) -> impl IntoView {
    let provider = sign_in
        .provider
        .map(|name| view! { <meta name=login::PROVIDER_META content=name /> });
    let passwords = if sign_in.passwords { "on" } else { "off" };
    let passkeys = sign_in
        .passkeys
        .then(|| view! { <meta name=login::PASSKEYS_META content="on" /> });
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <link rel="manifest" href="/manifest.webmanifest" />
                <meta name="theme-color" content="#24473f" />
                <script type="module" src="/reach.js"></script>
                <meta
                    name="description"
                    content="Anteroom: the questions your AI agents ask a person, answered here."
                />
                <link rel="stylesheet" id="anteroom-style" href=stylesheet />
                <HydrateAfterFirstPaint options />
                {provider}
                <meta name=login::PASSWORDS_META content=passwords />
                {passkeys}
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// Loads the browser bundle once the server's page has been painted, then hydrates it.
///
/// Leptos' own `HydrationScripts` preloads the bundle from `<head>`, so on a slow network its few hundred KB
/// compete with the page for the first paint (Lighthouse mobile: LCP 3.0 s against a first paint of 1.0 s).
/// The page needs no script to be read or answered, so the bundle waits for the first frame; a `setTimeout`
/// between instantiating the wasm and hydrating splits that work into two tasks, so neither blocks input as
/// long. A tab opened in the background paints nothing and runs no animation frame until it is shown, yet its
/// live connection is what notifies the person of a new question: it starts at once, and so does a page hidden
/// before its first frame. The paths are the only names in the page ending in `.js` and `.wasm` under `/pkg/`.
#[component]
fn HydrateAfterFirstPaint(options: LeptosOptions) -> impl IntoView {
    let nonce = leptos::nonce::use_nonce();
    let stem = format!("/{}/{}", options.site_pkg_dir, options.output_name);
    // Both names are plain file names (the server checks the manifest's), so they need no escaping in a string.
    let script = format!(
        "let started = false;\
         const start = async () => {{\
         if (started) return;\
         started = true;\
         const bundle = await import(\"{stem}.js\");\
         await bundle.default({{ module_or_path: \"{stem}_bg.wasm\" }});\
         await new Promise((done) => setTimeout(done, 0));\
         bundle.hydrate();\
         }};\
         if (document.visibilityState === \"hidden\") start();\
         else {{\
         document.addEventListener(\"visibilitychange\", start, {{ once: true }});\
         requestAnimationFrame(() => setTimeout(start, 0));\
         }}"
    );
    view! { <script type="module" nonce=nonce>{script}</script> }
}

/// The app: a frame (header) around the routed page, and the live connection every page shares.
///
/// Every route renders in full before it is sent (`SsrMode::Async`), so a page works without JavaScript
/// and the browser bundle only adds live updates and instant checks.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let live = Live::new();
    provide_context(live);
    // Effects run only in the browser, after hydration.
    Effect::new(move |_| live.start());

    view! {
        <PageTitle text="Anteroom" />
        <Router>
            <AppHeader />
            <main id="main" class="page">
                <Routes fallback=NotFoundPage>
                    <Route path=StaticSegment("") view=HomePage ssr=SsrMode::Async />
                    <Route path=path!("/sessions/:id") view=SessionPage ssr=SsrMode::Async />
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async />
                    <Route path=path!("/setup") view=SetupPage ssr=SsrMode::Async />
                    <Route path=path!("/admin/webhooks") view=WebhookLogPage ssr=SsrMode::Async />
                    <Route
                        path=path!("/admin/response-times")
                        view=ResponseTimesPage
                        ssr=SsrMode::Async
                    />
                    <Route path=path!("/profile") view=ProfilePage ssr=SsrMode::Async />
                </Routes>
            </main>
        </Router>
    }
}
