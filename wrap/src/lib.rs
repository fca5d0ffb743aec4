//! `anteroom wrap`: sits between a harness (the MCP client) and a stdio MCP server, relays every JSON-RPC line
//! it does not handle byte for byte, and turns the server's own elicitation into Anteroom rounds a person answers
//! (docs/wrap.md once the runtime lands; issue 14).
//!
//! This crate starts with the wire: reading the lines, declaring elicitation on the harness's behalf, knowing
//! which operation a question belongs to, and reading a server's `elicitation/create` as Anteroom's request.

pub mod anteroom;
pub mod relay;
pub mod wire;
