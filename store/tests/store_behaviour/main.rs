//! The store's behaviour, written once and run against SQLite and PostgreSQL: every rule of docs/lifecycle.md, docs/deadlines.md and
//! §5.3 by name. Time moves only through the harness's manual clock.

mod answers;
mod credentials;
mod deadlines;
mod delivery;
mod fixtures;
mod markers;
mod outward;
mod queue;
mod races;
mod recovery;
mod retention;
mod rounds;
mod sessions;
#[path = "../support/mod.rs"]
mod support;
mod webhooks;
mod workers;
