//! The page for any path the router does not know.

use leptos::prelude::*;

/// Shown with HTTP 404 for unknown paths.
#[component]
pub fn NotFoundPage() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::NOT_FOUND);
    }
    view! {
        <section class="not-found">
            <h1>"Nothing here"</h1>
            <p>"This page does not exist. " <a href="/">"Back to the attention queue"</a></p>
        </section>
    }
}
