//! The app header: product name, live-connection indicator, the signed-in person, notifications and the
//! keyboard-shortcut help.

use leptos::prelude::*;

use crate::ui::{browser::Live, server_fns::load_viewer};

/// Top bar shown on every page.
///
/// The indicator reads "Static page" in the server-rendered HTML, "Connecting" once the browser bundle has
/// hydrated the page, and "Live" while the event stream is connected.
#[component]
pub fn AppHeader() -> impl IntoView {
    let live = expect_context::<Live>();
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    let (shortcuts_open, set_shortcuts_open) = signal(false);
    // On a phone the header is one row: the brand, the live state and a menu holding the rest. Until the page
    // is live (or without JavaScript) the rest simply shows, wrapped.
    let (menu_open, set_menu_open) = signal(false);
    let folded = move || (hydrated.get() && !menu_open.get()).to_string();
    let viewer = Resource::new(|| (), |_| load_viewer());
    // The event stream needs a signed-in person; effects run only in the browser.
    Effect::new(move |_| {
        if viewer.get().and_then(Result::ok).flatten().is_some() {
            live.connect();
        }
    });

    let state = move || match (hydrated.get(), live.connected.get()) {
        (false, _) => "offline",
        (true, false) => "connecting",
        (true, true) => "live",
    };

    view! {
        <header class="app-header">
            <a class="brand" href="/">
                <span class="brand-mark" aria-hidden="true">"◧"</span>
                "Anteroom"
            </a>
            <nav class="header-actions" aria-label="App">
                <span class="live-status" data-state=state role="status" aria-live="polite">
                    {move || match state() {
                        "live" => "Live",
                        "connecting" => "Connecting…",
                        _ => "Static page",
                    }}
                </span>
                <button
                    type="button"
                    class="button button-quiet menu-toggle"
                    aria-expanded=move || menu_open.get().to_string()
                    aria-controls="header-menu"
                    on:click=move |_| set_menu_open.update(|open| *open = !*open)
                >
                    "Menu"
                </button>
                <div id="header-menu" class="header-menu" data-folded=folded>
                <Suspense>
                    {move || {
                        viewer
                            .get()
                            .and_then(Result::ok)
                            .flatten()
                            .map(|viewer| {
                                let admin = viewer.principal.role.can_manage();
                                view! {
                                    <Show when=move || hydrated.get() && !live.notifications.get()>
                                        <button
                                            type="button"
                                            class="button button-quiet"
                                            on:click=move |_| live.ask_for_notifications()
                                        >
                                            "Notify me"
                                        </button>
                                    </Show>
                                    {admin
                                        .then(|| {
                                            view! {
                                                <a class="header-link" href="/admin/response-times">
                                                    "Response times"
                                                </a>
                                                <a class="header-link" href="/admin/webhooks">
                                                    "Webhooks"
                                                </a>
                                            }
                                        })}
                                    <a class="header-link" href="/profile">
                                        "Profile"
                                    </a>
                                    <span class="who" data-testid="signed-in-as">
                                        {viewer.principal.name.clone()}
                                        <span class="role">{viewer.principal.role.as_str()}</span>
                                    </span>
                                    <form method="post" action="/logout" class="inline-form">
                                        <input type="hidden" name="csrf" value=viewer.csrf.clone() />
                                        <button type="submit" class="button button-quiet">
                                            "Sign out"
                                        </button>
                                    </form>
                                }
                            })
                    }}
                </Suspense>
                <button
                    type="button"
                    class="button button-quiet"
                    aria-expanded=move || shortcuts_open.get().to_string()
                    aria-controls="shortcut-help"
                    on:click=move |_| set_shortcuts_open.update(|open| *open = !*open)
                >
                    "Keyboard shortcuts"
                </button>
                </div>
            </nav>
        </header>
        <section
            id="shortcut-help"
            class="shortcut-help"
            hidden=move || !shortcuts_open.get()
            aria-label="Keyboard shortcuts"
        >
            <dl>
                <dt>
                    <kbd>"j"</kbd>
                    " / "
                    <kbd>"k"</kbd>
                </dt>
                <dd>"Move through the attention queue"</dd>
                <dt>
                    <kbd>"x"</kbd>
                </dt>
                <dd>"Select the entry for Decline or Dismiss selected (Shift-click selects a range)"</dd>
                <dt>
                    <kbd>"Enter"</kbd>
                </dt>
                <dd>"Open the selected session"</dd>
                <dt>
                    <kbd>"Ctrl"</kbd>
                    " + "
                    <kbd>"Enter"</kbd>
                </dt>
                <dd>"Accept with the form you are in"</dd>
                <dt>
                    <kbd>"Esc"</kbd>
                </dt>
                <dd>"Leave the current field"</dd>
            </dl>
        </section>
    }
}
