//! Bypass: wrap a prepared call in `Authorized` by struct literal, skipping the policy.
//! Must fail because `Authorized`'s field is private (G2).
mod support;

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    let forged = toolgate::Authorized { inner: prepared };
    runtime.execute(forged);
}
