//! Fields the type reads under another name, or not at all: alias, rename, rename_all, unknown
//! fields, flatten and skip_deserializing; rejected, or judged where the rule looks.

use super::*;

fn workspace() -> String {
    "/work/default".to_owned()
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Aliased {
    #[serde(alias = "file")]
    path: Option<String>,
}

#[test]
fn evasion_alias_is_rejected() {
    let gate = Gate::new::<Aliased>(&deny_glob("/path", "/etc/*"));
    let seen = gate.call(json!({"file": "/etc/shadow"}));
    assert!(
        matches!(&seen, Seen::Invalid(content) if content.contains("at \"/*\" (argumentType)")),
        "{seen:?}"
    );
    assert_not_read(seen);
    assert_eq!(gate.call(json!({"path": "/etc/shadow"})), Seen::Denied);
    assert_eq!(
        gate.call(json!({"path": "/tmp/a"})),
        Seen::Ran(json!({"path": "/tmp/a"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct RenamedAliased {
    #[serde(rename = "target", alias = "path")]
    path: Option<String>,
}

#[test]
fn evasion_rename_plus_alias_is_rejected() {
    let gate = Gate::new::<RenamedAliased>(&deny_glob("/target", "/etc/*"));
    assert_not_read(gate.call(json!({"path": "/etc/shadow"})));
    assert_eq!(gate.call(json!({"target": "/etc/shadow"})), Seen::Denied);
    assert_eq!(
        gate.call(json!({"target": "/tmp/a"})),
        Seen::Ran(json!({"target": "/tmp/a"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CamelCase {
    file_path: String,
}

#[test]
fn evasion_rename_all_other_spelling_is_rejected() {
    let gate = Gate::new::<CamelCase>(&deny_glob("/filePath", "/etc/*"));
    // The Rust spelling beside the schema's: the type reads only one of them.
    assert_not_read(gate.call(json!({"filePath": "/tmp/a", "file_path": "/etc/shadow"})));
    assert_eq!(gate.call(json!({"filePath": "/etc/shadow"})), Seen::Denied);
    assert_eq!(
        gate.call(json!({"filePath": "/tmp/a"})),
        Seen::Ran(json!({"filePath": "/tmp/a"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Open {
    path: String,
}

#[test]
fn evasion_unknown_extra_field_is_rejected() {
    let gate = Gate::new::<Open>(&deny_glob("/path", "/etc/*"));
    assert_not_read(gate.call(json!({"path": "/tmp/a", "SECRET_extra": "/etc/shadow"})));
    assert_eq!(
        gate.call(json!({"path": "/tmp/a"})),
        Seen::Ran(json!({"path": "/tmp/a"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Closed {
    path: String,
}

#[test]
fn evasion_unknown_field_with_deny_unknown_fields_is_rejected_by_the_schema() {
    let gate = Gate::new::<Closed>(&deny_glob("/path", "/etc/*"));
    let Seen::Invalid(content) = gate.call(json!({"path": "/tmp/a", "file": "/etc/shadow"})) else {
        panic!("not rejected")
    };
    assert!(content.contains("(additionalProperties)"), "{content}");
    assert!(
        !content.contains("file") && !content.contains("shadow"),
        "{content}"
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct InnerTarget {
    #[serde(alias = "file", default = "workspace")]
    path: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Flattened {
    #[serde(flatten)]
    target: InnerTarget,
    mode: String,
}

#[test]
fn evasion_flatten_struct_with_alias_inside_is_rejected() {
    let gate = Gate::new::<Flattened>(&deny_glob("/path", "/etc/*"));
    assert_not_read(gate.call(json!({"file": "/etc/shadow", "mode": "r"})));
    assert_eq!(
        gate.call(json!({"path": "/etc/shadow", "mode": "r"})),
        Seen::Denied
    );
    // The flattened default is filled in where the rule can see it.
    assert_eq!(
        gate.call(json!({"mode": "r"})),
        Seen::Ran(json!({"path": "/work/default", "mode": "r"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct WithMap {
    #[serde(alias = "file")]
    path: Option<String>,
    #[serde(flatten)]
    extra: BTreeMap<String, String>,
}

#[test]
fn evasion_flatten_map_beside_an_alias_is_rejected() {
    let gate = Gate::new::<WithMap>(&deny_glob("/path", "/etc/*"));
    assert_not_read(gate.call(json!({"file": "/etc/shadow", "note": "x"})));
    assert_eq!(
        gate.call(json!({"path": "/etc/shadow", "note": "x"})),
        Seen::Denied
    );
    // Keys the map collects round-trip, so a legitimate call passes unchanged.
    assert_eq!(
        gate.call(json!({"path": "/tmp/a", "note": "x", "tag": "y"})),
        Seen::Ran(json!({"path": "/tmp/a", "note": "x", "tag": "y"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Privileged {
    path: String,
    #[serde(skip_deserializing)]
    admin: bool,
}

#[test]
fn evasion_skip_deserializing_field_is_rejected_when_sent() {
    let gate = Gate::new::<Privileged>(&deny_glob("/path", "/etc/*"));
    // The model believes it set `admin`; the handler would get `false`: rejected, not ignored.
    assert_not_read(gate.call(json!({"path": "/tmp/a", "admin": true})));
    assert_eq!(
        gate.call(json!({"path": "/tmp/a"})),
        Seen::Ran(json!({"path": "/tmp/a", "admin": false}))
    );
}

#[test]
fn typed_validate_agrees_with_prepare() {
    let tool = ToolDefinition::typed("t", "", |_: Aliased| Ok(String::new())).unwrap();
    assert!(tool.validate(&json!({"path": "/tmp/a"})).is_ok());
    let errors = tool.validate(&json!({"file": "/etc/shadow"})).unwrap_err();
    assert_eq!(errors.violations()[0].keyword, "argumentType");
    assert_eq!(errors.violations()[0].pointer, "/*");
    let debug = format!("{errors:?}");
    assert!(
        !debug.contains("file") && !debug.contains("shadow"),
        "{debug}"
    );
}
