//! Approvals: a call held for a person is answered at most once, by whom the rule allows, within
//! its time to live, and only if it is still the call that was held — in memory, in the SQLite
//! ledger and in PostgreSQL, under many threads, and from the approval page.

#[path = "../support/common.rs"]
mod common;
#[cfg(feature = "postgres")]
#[path = "../support/postgres.rs"]
mod postgres_support;

mod allow_self;
mod answer_for_digest;
mod approvers;
mod binding;
mod concurrency;
mod expiry;
mod flow_askers;
mod flow_askers_names;
mod page;
mod pending;
