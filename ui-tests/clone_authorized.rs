//! Bypass: clone an authorization to run the call twice.
//! Must fail because `Authorized` (and what it wraps) is not `Clone` (G3).
mod support;

fn main() {
    let runtime = support::runtime();
    let authorized = support::authorized(&runtime);
    let copy = authorized.clone();
    runtime.execute(authorized);
    runtime.execute(copy);
}
