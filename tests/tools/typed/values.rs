//! Values the type reads otherwise than sent: a serde(other) catch-all and a transforming
//! deserialize_with are rejected; numbers that read back equal are accepted.

use super::*;

#[derive(Deserialize, Serialize, JsonSchema)]
enum Mode {
    Read,
    Write,
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct WithOther {
    mode: Mode,
}

#[test]
fn evasion_serde_other_catch_all_is_rejected() {
    let deny = r#"{"id": "deny", "tool": "t", "action": "deny", "reason": "no", "when": {"equals": {"pointer": "/mode", "value": "Write"}}}"#;
    let gate = Gate::new::<WithOther>(deny);
    let Seen::Invalid(content) = gate.call(json!({"mode": "SECRET_write"})) else {
        panic!("not rejected")
    };
    assert!(!content.contains("SECRET"), "{content}");
    assert_eq!(gate.call(json!({"mode": "Write"})), Seen::Denied);
    assert_eq!(
        gate.call(json!({"mode": "Other"})),
        Seen::Ran(json!({"mode": "Other"}))
    );
}

fn lowercase<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    String::deserialize(deserializer).map(|path| path.to_lowercase())
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Transformed {
    #[serde(deserialize_with = "lowercase")]
    path: String,
}

#[test]
fn evasion_transforming_deserialize_with_is_rejected() {
    let gate = Gate::new::<Transformed>(&deny_glob("/path", "/etc/*"));
    // A rule matching the sent spelling would not match what the handler reads.
    assert_not_read(gate.call(json!({"path": "/ETC/shadow"})));
    assert_eq!(gate.call(json!({"path": "/etc/shadow"})), Seen::Denied);
    assert_eq!(
        gate.call(json!({"path": "/tmp/a"})),
        Seen::Ran(json!({"path": "/tmp/a"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Ratio {
    scale: f64,
}

#[test]
fn numbers_that_read_back_equal_are_accepted() {
    let deny = r#"{"id": "deny", "tool": "t", "action": "deny", "reason": "no", "when": {"range": {"pointer": "/scale", "min": 100}}}"#;
    let gate = Gate::new::<Ratio>(deny);
    assert_eq!(
        gate.call(json!({"scale": 2})),
        Seen::Ran(json!({"scale": 2.0}))
    );
    assert_eq!(gate.call(json!({"scale": 200})), Seen::Denied);
}
