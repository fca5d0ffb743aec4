//! One module per routed page.

pub mod home;
pub mod not_found;
