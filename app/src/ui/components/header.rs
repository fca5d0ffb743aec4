//! The app header: product name, live-connection indicator and the keyboard-shortcut help.

use leptos::prelude::*;

/// Top bar shown on every page.
///
/// The indicator reads "offline" in the server-rendered HTML and turns "live" once the browser bundle has
/// hydrated the page, so a person (and the end-to-end tests) can tell a static page from a working one.
#[component]
pub fn AppHeader() -> impl IntoView {
    let (hydrated, set_hydrated) = signal(false);
    // Effects never run during server rendering: this only fires in the browser, after hydration.
    Effect::new(move |_| set_hydrated.set(true));

    let (shortcuts_open, set_shortcuts_open) = signal(false);

    view! {
        <header class="app-header">
            <a class="brand" href="/">
                <span class="brand-mark" aria-hidden="true">"◧"</span>
                "Anteroom"
            </a>
            <nav class="header-actions" aria-label="App">
                <span
                    class="live-status"
                    data-state=move || if hydrated.get() { "live" } else { "offline" }
                    role="status"
                    aria-live="polite"
                >
                    {move || if hydrated.get() { "Live" } else { "Static page" }}
                </span>
                <button
                    type="button"
                    class="button button-quiet"
                    aria-expanded=move || shortcuts_open.get().to_string()
                    aria-controls="shortcut-help"
                    on:click=move |_| set_shortcuts_open.update(|open| *open = !*open)
                >
                    "Keyboard shortcuts"
                </button>
            </nav>
        </header>
        <section
            id="shortcut-help"
            class="shortcut-help"
            hidden=move || !shortcuts_open.get()
            aria-label="Keyboard shortcuts"
        >
            <dl>
                <dt><kbd>"j"</kbd>" / "<kbd>"k"</kbd></dt>
                <dd>"Move through the attention queue"</dd>
                <dt><kbd>"Enter"</kbd></dt>
                <dd>"Open the selected session"</dd>
                <dt><kbd>"Ctrl"</kbd>" + "<kbd>"Enter"</kbd></dt>
                <dd>"Submit the focused form"</dd>
                <dt><kbd>"Esc"</kbd></dt>
                <dd>"Leave the current field"</dd>
            </dl>
        </section>
    }
}
