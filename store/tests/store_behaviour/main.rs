//! The store's behaviour, written once and run against SQLite and PostgreSQL: every rule of docs/lifecycle.md and docs/deadlines.md
//! by name, plus migrations and property tests over random operation sequences. Time moves only through
//! the harness's manual clock. One test binary, so the store and its support are linked once.

mod answers;
mod audit;
mod credentials;
mod deadlines;
mod delivery;
mod fixtures;
mod identities;
mod markers;
mod migrations;
mod outward;
mod passkeys;
mod prepared;
mod properties;
mod queue;
mod races;
mod reach;
mod recovery;
mod retention;
mod rounds;
mod runs;
mod sessions;
mod standing;
mod stats;
#[path = "../support/mod.rs"]
mod support;
mod teams;
mod webhooks;
mod workers;
