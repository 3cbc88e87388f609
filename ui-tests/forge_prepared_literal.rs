//! Bypass: build a `PreparedToolCall` by struct literal, skipping resolution and validation.
//! Must fail because its fields are private (G1).
mod support;

fn main() {
    let runtime = support::runtime();
    let definition = runtime.registry().resolve("t").expect("registered").clone();
    let _forged = toolgate::PreparedToolCall {
        call: support::call(),
        definition,
    };
}
