//! The gateway's command line on real files and real upstreams: the audit log's `verify` and
//! `prove`, and signed checkpoints.

#[path = "../support/mod.rs"]
mod support;

mod audit;
