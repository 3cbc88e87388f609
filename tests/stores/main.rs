//! The durable stores against real databases: the PostgreSQL approval store, change feed and audit
//! sink (feature `postgres`; a server from `TOOLGATE_PG_URL`, else each test prints a note and
//! passes).

#[cfg(feature = "postgres")]
#[path = "../support/postgres.rs"]
mod postgres_support;

mod postgres_store;
