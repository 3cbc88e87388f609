//! Bypass: change the arguments after the policy authorized them, so different arguments run.
//! Must fail because `Authorized` gives only shared (read-only) access to its content (G3).
mod support;

fn main() {
    let runtime = support::runtime();
    let authorized = support::authorized(&runtime);
    authorized.call().arguments = serde_json::json!({"path": "/etc/shadow"});
    runtime.execute(authorized);
}
