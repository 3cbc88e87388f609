//! Bypass: build `Authorized` through a constructor, skipping the policy.
//! Must fail because `Authorized` has no public constructor (G2).
mod support;

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    let forged = toolgate::Authorized::new(prepared);
    runtime.execute(forged);
}
