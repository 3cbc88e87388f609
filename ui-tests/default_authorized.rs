//! Bypass: conjure an `Authorized` with `Default`.
//! Must fail because `Authorized` does not implement `Default` (G3).
mod support;

use toolgate::{Authorized, PreparedToolCall};

fn main() {
    let runtime = support::runtime();
    let forged: Authorized<PreparedToolCall> = Default::default();
    runtime.execute(forged);
}
