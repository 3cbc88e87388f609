//! Bypass: convert a prepared call into `Authorized` with `From`/`Into`, skipping the policy.
//! Must fail because no such conversion exists (G2).
mod support;

use toolgate::{Authorized, PreparedToolCall};

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    let forged: Authorized<PreparedToolCall> = prepared.into();
    runtime.execute(forged);
}
