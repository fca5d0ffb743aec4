//! `anteroom wrap`: sits between a harness (the MCP client) and a stdio MCP server, relays every JSON-RPC line
//! it does not handle byte for byte, and turns the server's own elicitation into Anteroom rounds a person answers
//! (docs/wrap.md).
//!
//! `jsonrpc` reads the lines; `relay` runs the child and routes every line; `relay_state` is what its tasks
//! share; `legacy` answers a server's `elicitation/create`; `held` answers a call's `input_required` result or
//! `-32042` error and retries the call; `person` is the worker's side of a round; `progress` keeps waiting
//! clients waiting.

pub mod anteroom;
pub mod held;
pub mod jsonrpc;
mod legacy;
mod person;
mod progress;
pub mod relay;
mod relay_state;
