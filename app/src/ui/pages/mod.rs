//! One module per routed page, and how a page keeps its view fresh.

pub mod admin;
pub mod home;
pub mod login;
pub mod not_found;
pub mod profile;
pub mod response_times;
pub mod session;

use std::future::Future;

use leptos::prelude::*;

use super::browser::Live;

/// Why a page could not load its data (a server function's error), in words a person can read.
pub fn load_error(error: ServerFnError) -> impl IntoView {
    view! {
        <p class="error-box" role="alert">
            {error.to_string()}
        </p>
    }
}

/// The latest view, fetched again in the browser after every change the server announces. `None` until
/// the first change: until then the page shows what the server rendered.
///
/// Kept apart from the page's resource on purpose: refreshing a resource inside `<Transition>` renders the
/// page anew, which would wipe a form being filled in; a signal updates the page in place.
pub fn refreshed<T, F, Fut>(fetch: F) -> RwSignal<Option<T>>
where
    T: Send + Sync + 'static,
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = Result<T, ServerFnError>> + 'static,
{
    refreshed_on(expect_context::<Live>().changes, fetch)
}

/// Like [`refreshed`], fetched again only when `trigger` is bumped (for a view the stream itself sends as it
/// changes, read again only after a reconnection).
pub fn refreshed_on<T, F, Fut>(trigger: RwSignal<u64>, fetch: F) -> RwSignal<Option<T>>
where
    T: Send + Sync + 'static,
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = Result<T, ServerFnError>> + 'static,
{
    let fresh = RwSignal::new(None);
    // Effects run only in the browser; the first run (hydration) has nothing new to fetch.
    Effect::new(move |previous: Option<()>| {
        let change = trigger.get();
        if previous.is_some() {
            let pending = fetch();
            leptos::task::spawn_local(async move {
                // A slower, older fetch must not overwrite a newer one.
                if let Ok(view) = pending.await
                    && trigger.get_untracked() == change
                {
                    fresh.set(Some(view));
                }
            });
        }
    });
    fresh
}
