//! What every request handler and server function can reach: the store and the Leptos options.

use std::sync::Arc;

use anteroom_app::store::Store;
use axum::extract::FromRef;
use leptos::config::LeptosOptions;

/// Shared, cheaply clonable application state.
#[derive(Clone)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub store: Arc<dyn Store>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}
