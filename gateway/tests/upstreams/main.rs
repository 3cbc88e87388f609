//! The gateway in front of real upstream processes: a remote upstream over Streamable HTTP (tokens,
//! redirects), upstreams that fail the way real ones do, and tool pinning when an upstream rewrites
//! or drops a tool.

#[path = "../support/mod.rs"]
mod support;

mod degraded;
mod health;
mod own_names;
mod pinning;
mod remote;
mod requests;
