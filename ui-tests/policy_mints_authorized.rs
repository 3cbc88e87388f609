//! Bypass: a user-written policy that hands out an `Authorized` instead of a decision.
//! Must fail because `Policy::decide` returns a `PolicyDecision`; the impl does not match the
//! trait (G2).
use toolgate::{Authorized, Policy, PreparedToolCall};

struct MintingPolicy;

impl Policy for MintingPolicy {
    fn decide(&self, _call: &PreparedToolCall) -> Authorized<PreparedToolCall> {
        panic!("there is no way to build one here")
    }
}

fn main() {}
