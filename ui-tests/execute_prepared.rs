//! Bypass: execute a validated but unauthorized call, skipping the policy.
//! Must fail with a type mismatch: `execute` takes only `Authorized<PreparedToolCall>` (G3).
mod support;

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    runtime.execute(prepared);
}
