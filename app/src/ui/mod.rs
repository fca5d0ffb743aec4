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
    login::{LoginPage, SetupPage},
    not_found::NotFoundPage,
    profile::ProfilePage,
    response_times::ResponseTimesPage,
    session::SessionPage,
};

/// The whole HTML document, rendered on the server around [`App`]; `stylesheet` is the fingerprinted
/// stylesheet's path, which only the server knows.
pub fn shell(options: LeptosOptions, stylesheet: String) -> impl IntoView {
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
                <link rel="stylesheet" id="anteroom-style" href=stylesheet />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
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
