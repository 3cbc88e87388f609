//! Bypass: execute one authorization twice.
//! Must fail with a use of a moved value: `execute` consumes the `Authorized` (G3).
mod support;

fn main() {
    let runtime = support::runtime();
    let authorized = support::authorized(&runtime);
    runtime.execute(authorized);
    runtime.execute(authorized);
}
