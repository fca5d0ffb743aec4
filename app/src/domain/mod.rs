//! The domain: sessions, rounds, answers and expiry as plain types and pure functions (no HTTP, no Leptos,
//! no database). Time always comes from an injected [`clock::Clock`].

pub mod access;
pub mod answer;
pub mod clock;
pub mod error;
pub mod expiry;
pub mod form;
pub mod gate;
pub mod ids;
pub mod limits;
pub mod round;
pub mod session;
pub mod webhook;

pub use error::ManagedInputError;
