//! Tools and their definitions: tools defined from Rust types (feature `schemars`), the bounded
//! cost of validating arguments against a schema, the workspace file tools on real files (feature
//! `cap-std`), and the agent example that uses them.

#[path = "../support/common.rs"]
mod common;

mod agent_example;
mod schema_cost;
mod typed;
mod workspace;
