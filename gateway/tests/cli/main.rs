//! The gateway's command line on real files and real upstreams: a held call answered from a shell
//! (`approvals`) and webhooks, the audit log's `verify --head` and `prove` and signed checkpoints,
//! `check` (and its reports of a config's bad files and keys), `policy diff` and `policy explain`,
//! `init`, and the systemd unit.

#[path = "../support/mod.rs"]
mod support;

#[allow(
    dead_code,
    unused_imports,
    reason = "the raw HTTP requests of the client tests; `init`'s test needs those only"
)]
#[path = "../clients/raw.rs"]
mod raw;

mod approvals;
mod audit;
mod audit_postgres;
mod config_errors;
mod init;
mod policy;
mod service_unit;
