//! Bypass: hand a home-made `Allow` decision to the controller's fast path
//! `Authorized::by_decision`, skipping the policy. Must fail because the fast path is private to
//! the crate (G2), and its witness can be built by the controller alone.
mod support;

fn main() {
    let runtime = support::runtime();
    let prepared = support::prepared(&runtime);
    let allow = toolgate::PolicyDecision::allow(toolgate::Reason::from_static("trust me"));
    let _ = toolgate::Authorized::by_decision(allow, prepared, ());
}
