//! The HTTP API over real HTTP, on SQLite and PostgreSQL: the pulsemcp round trip with a clean-room client,
//! authentication, rounds and workers, live events, and a battery of malformed requests.

mod answers;
mod auth;
mod bad_input;
mod events;
mod introspection;
mod producer;
mod rounds;
mod sessions;
