//! One module per routed page.

pub mod admin;
pub mod home;
pub mod login;
pub mod not_found;
pub mod session;
