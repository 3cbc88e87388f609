//! What crosses the wire: each provider's calls parsed from whole messages and from streams, wrong
//! shapes reported rather than dropped, tools exported in each provider's dialect, structured
//! output checked before it is passed on, and a controller served over MCP (feature `mcp`).

#[path = "../support/common.rs"]
mod common;

mod adapters;
mod content_blocks;
mod export;
mod mcp_server;
mod mcp_upstream;
mod shapes;
mod stream;
mod structured_output;
