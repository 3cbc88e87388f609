//! Approvals through the gateway: a held call answered after a restart (and a forged or rotated
//! state opening nothing), the approval page in a real browser (`TOOLGATE_CHROMEDRIVER`), and two
//! instances sharing one PostgreSQL server (`TOOLGATE_PG_URL`).

#[path = "../support/mod.rs"]
mod support;

mod page_browser;
mod restart;
mod two_instances;
