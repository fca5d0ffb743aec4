//! The server's integration tests, in one test binary (one link, one copy of the test kit): the HTTP API, the
//! pages, delivery truth, hostile input, the scheduled jobs, webhooks, several instances, and the command line —
//! each over real HTTP against SQLite and PostgreSQL. (`logs.rs` is a binary of its own: it captures the whole
//! process's log.)

#![allow(
    clippy::string_slice,
    reason = "a test that slices a string wrongly fails, as it should"
)]

mod acp;
mod api;
mod budgets;
mod claude_code;
mod cli;
mod codex;
mod codex_app;
mod delivery;
mod harness_hooks;
mod hooks;
mod hostile;
mod http_smoke;
mod instances;
mod jobs;
mod mail;
mod mcp;
mod mcp_config;
mod operations;
mod passkeys;
mod processes;
mod provider_rights;
mod provider_sign_in;
mod provider_tokens;
mod push;
mod runs;
mod slack;
mod standing;
mod teams;
mod upgrades;
mod web;
mod webhooks;
mod wrap;
