//! The gateway's command line on real files and real upstreams: a held call answered from a shell
//! (`approvals`) and webhooks, the audit log's `verify --head` and `prove` and signed checkpoints,
//! and `check`, `policy diff` and `policy explain`.

#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod audit;
mod audit_postgres;
mod policy;
