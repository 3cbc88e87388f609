//! The durable stores against real databases and real processes: the SQLite approval ledger
//! (feature `sqlite`), and the PostgreSQL approval store, change feed, audit sink and counters (feature
//! `postgres`; a server from `TOOLGATE_PG_URL`, else each PostgreSQL test prints a note and
//! passes). The process tests run this binary again as children (`--exact
//! sqlite_ledger::child_process_role`).

#[path = "../support/common.rs"]
mod common;
#[cfg(feature = "postgres")]
#[path = "../support/postgres.rs"]
mod postgres_support;

mod counters_agree;
mod postgres_counters;
mod postgres_store;
mod sqlite_counters;
mod sqlite_ledger;
