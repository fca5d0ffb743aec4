//! `anteroom-wrap` over real HTTP against a real Anteroom on SQLite and PostgreSQL, with a real server process
//! on the other side of the relay. One test binary.

mod anteroom;
mod relay;
