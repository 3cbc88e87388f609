//! The gateway as its clients see it: driven by the official Python and TypeScript MCP SDKs over
//! stdio and Streamable HTTP in each protocol revision, callers identified by API keys and by
//! JSON Web Tokens, and stdio that is not a pipe. The SDKs come from `TOOLGATE_MCP_PYTHON` and
//! `TOOLGATE_MCP_NODE` (`.ci/run`); with `CI` set a missing one fails its test, otherwise the test
//! says on stderr that it was skipped.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod forwarded;
mod http_clients;
mod http_details;
mod injection;
mod interim;
mod jwt;
mod listing;
mod logs;
mod oauth;
mod provenance;
mod python_sdk;
mod raw;
mod sessions;
mod stdio;
mod tool_sets;
mod traces;
mod transparency;
mod typescript_sdk;
