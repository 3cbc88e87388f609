//! Bypass: call the controller's fast path `Authorized::if_allowed` with `Allow`, skipping the
//! policy. Must fail because the fast path is private to the crate (G2): outside it, a decision
//! reaches `Authorized` only through `by_policy` or `by_approval`.
mod support;

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    let forged = toolgate::Authorized::if_allowed(toolgate::PolicyAction::Allow, prepared, ());
    runtime.execute(forged.unwrap());
}
