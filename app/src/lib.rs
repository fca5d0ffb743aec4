//! Anteroom's Leptos app: the pages a person answers questions on, and the server-side store behind them.
//!
//! Built twice: with `ssr` for the server (rendering, server functions, the database) and with `hydrate`
//! for the browser bundle, whose entry point is [`hydrate`].
// Leptos views nest deeply in their types; the session page needs more than the default 128.
#![recursion_limit = "256"]

/// The domain crate, under the name the app and the server have always used for it.
pub use anteroom_domain as domain;
pub mod ui;

/// The store crate, under the name the app and the server have always used for it.
#[cfg(feature = "ssr")]
pub use anteroom_store as store;

pub use ui::{App, shell};

/// The browser bundle's entry point: attaches the app to the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
