//! The web app's document shell, router and route table.

pub mod components;
pub mod pages;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::{
    StaticSegment,
    components::{Route, Router, Routes},
};

use components::header::AppHeader;
use pages::{home::HomePage, not_found::NotFoundPage};

/// The whole HTML document, rendered on the server around [`App`].
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The app: a frame (header) around the routed page.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();

    view! {
        <Stylesheet id="anteroom-style" href="/pkg/anteroom.css" />
        <Title text="Anteroom" />
        <Router>
            <AppHeader />
            <main id="main" class="page">
                <Routes fallback=NotFoundPage>
                    <Route path=StaticSegment("") view=HomePage />
                </Routes>
            </main>
        </Router>
    }
}
