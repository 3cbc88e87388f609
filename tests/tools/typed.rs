//! Tools defined from Rust types (feature `schemars`): the schema is generated, the arguments are
//! normalized to what the handler receives, and a rule on a field sees every value the handler
//! will get in it. The catalogue below has one case per serde attribute that could make the two
//! differ; each drives a real `ToolController` with a `RulePolicy`.
#![cfg(feature = "schemars")]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use toolgate::definition::DefinitionError;

use crate::common::*;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use toolgate::*;

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Transfer {
    /// Account to debit.
    from: String,
    /// Amount in cents.
    amount: u32,
    memo: Option<String>,
}

/// Only accepts even-length codes, which the generated schema (a plain string) cannot say.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(try_from = "String")]
struct EvenCode(String);

impl TryFrom<String> for EvenCode {
    type Error = String;
    fn try_from(code: String) -> Result<Self, String> {
        if code.len().is_multiple_of(2) {
            Ok(Self(code))
        } else {
            Err(format!("odd code {code}"))
        }
    }
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Redeem {
    code: EvenCode,
}

fn transfer() -> ToolDefinition {
    ToolDefinition::typed("transfer", "Move money.", |args: Transfer| {
        Ok(format!(
            "{} cents from {} ({})",
            args.amount,
            args.from,
            args.memo.unwrap_or_default()
        ))
    })
    .unwrap()
}

#[test]
fn the_schema_is_generated_from_the_type() {
    let tool = transfer();
    let schema = &tool.spec().input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["from", "amount"]));
    assert_eq!(schema["properties"]["amount"]["minimum"], 0);
    assert_eq!(schema["additionalProperties"], false);
}

#[test]
fn typed_arguments_are_validated_then_deserialized() {
    let controller = ToolController::new(registry([transfer()]), policy(&["transfer"], &[]));
    let run = |arguments| match controller.handle(ToolCall::new("c", "transfer", arguments)) {
        Outcome::Completed(result) => result,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        run(json!({"from": "acct-1", "amount": 250})),
        ToolResult::ok("c", "250 cents from acct-1 ()")
    );
    let negative = run(json!({"from": "acct-1", "amount": -5}));
    assert!(
        negative.is_error && negative.content.contains("at \"/amount\" (minimum)"),
        "{}",
        negative.content
    );
    let extra = run(json!({"from": "a", "amount": 1, "to": "evil"}));
    assert!(
        extra.content.contains("additionalProperties"),
        "{}",
        extra.content
    );
}

#[test]
fn a_deserialization_failure_is_an_error_result_without_the_value() {
    let redeem =
        ToolDefinition::typed("redeem", "Redeem a code.", |args: Redeem| Ok(args.code.0)).unwrap();
    let controller = ToolController::new(registry([redeem]), policy(&["redeem"], &[]));
    let result = match controller.handle(ToolCall::new("c", "redeem", json!({"code": "SECRET7"}))) {
        Outcome::Completed(result) => result,
        other => panic!("{other:?}"),
    };
    assert!(result.is_error);
    assert_eq!(result.call_id, "c");
    assert!(
        result.content.contains("not the tool's argument type"),
        "{}",
        result.content
    );
    assert!(!result.content.contains("SECRET7"));
    assert_eq!(
        controller.handle(ToolCall::new("d", "redeem", json!({"code": "AB"}))),
        Outcome::Completed(ToolResult::ok("d", "AB"))
    );
}

// ---- The catalogue: a rule on a field is never evaded ----

/// What became of one call.
#[derive(Debug, PartialEq)]
enum Seen {
    /// The handler ran; what it received, written back as JSON.
    Ran(Value),
    /// A rule denied it.
    Denied,
    /// A rule asked; the arguments the person is shown.
    Asked(Value),
    /// Rejected before any policy: the result's content.
    Invalid(String),
}

/// A controller over one typed tool `t` whose handler records what it receives, under `rules`
/// (JSON rule objects for tool `t`) plus an unconditional allow.
struct Gate {
    controller: ToolController,
    received: Arc<Mutex<Vec<Value>>>,
}

impl Gate {
    fn new<T>(rules: &str) -> Self
    where
        T: DeserializeOwned + Serialize + JsonSchema + 'static,
    {
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let tool = ToolDefinition::typed("t", "A typed tool.", move |args: T| {
            log.lock()
                .unwrap()
                .push(serde_json::to_value(&args).unwrap());
            Ok("ran".to_owned())
        })
        .unwrap();
        let tools = registry([tool]);
        let text = format!(
            r#"{{"rules": [{{"id": "a-allow", "tool": "t", "action": "allow", "reason": "the rest"}}, {rules}]}}"#
        );
        let policy = RulePolicy::from_json(&text, &tools).unwrap_or_else(|error| panic!("{error}"));
        Self {
            controller: ToolController::new(tools, policy),
            received,
        }
    }

    fn call(&self, arguments: Value) -> Seen {
        let before = self.received.lock().unwrap().len();
        let seen = match self.controller.handle(ToolCall::new("c", "t", arguments)) {
            Outcome::Completed(result) if !result.is_error => {
                assert_eq!(result.content, "ran");
                let received = self.received.lock().unwrap();
                assert_eq!(received.len(), before + 1);
                return Seen::Ran(received[before].clone());
            }
            Outcome::Completed(result) if result.content.starts_with("denied: ") => Seen::Denied,
            Outcome::Completed(result) => {
                assert!(
                    result.content.starts_with("invalid arguments for t: "),
                    "{}",
                    result.content
                );
                Seen::Invalid(result.content)
            }
            Outcome::PendingApproval(request) => Seen::Asked(request.call.arguments),
        };
        assert_eq!(
            self.received.lock().unwrap().len(),
            before,
            "the handler ran"
        );
        seen
    }
}

/// A deny rule: `pointer`'s path matches `pattern`.
fn deny_glob(pointer: &str, pattern: &str) -> String {
    format!(
        r#"{{"id": "deny", "tool": "t", "action": "deny", "reason": "no", "when": {{"path_glob": {{"pointer": "{pointer}", "pattern": "{pattern}"}}}}}}"#
    )
}

/// A deny rule: `pointer`'s value is `"w"`.
fn deny_w(pointer: &str) -> String {
    format!(
        r#"{{"id": "deny", "tool": "t", "action": "deny", "reason": "no writes", "when": {{"equals": {{"pointer": "{pointer}", "value": "w"}}}}}}"#
    )
}

/// Rejected as not read by the type, at a masked pointer, quoting nothing sent.
fn assert_not_read(seen: Seen) {
    let Seen::Invalid(content) = seen else {
        panic!("not rejected: {seen:?}")
    };
    assert!(content.contains("(argumentType)"), "{content}");
    assert!(
        !content.contains("shadow") && !content.contains("SECRET"),
        "{content}"
    );
}

fn write_mode() -> String {
    "w".to_owned()
}

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
struct DefaultedMode {
    path: String,
    #[serde(default = "write_mode")]
    mode: String,
}

#[test]
fn evasion_default_field_equal_to_the_denied_value_is_denied() {
    let gate = Gate::new::<DefaultedMode>(&deny_w("/mode"));
    assert_eq!(gate.call(json!({"path": "/tmp/a"})), Seen::Denied);
    assert_eq!(
        gate.call(json!({"path": "/tmp/a", "mode": "w"})),
        Seen::Denied
    );
    assert_eq!(
        gate.call(json!({"path": "/tmp/a", "mode": "r"})),
        Seen::Ran(json!({"path": "/tmp/a", "mode": "r"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(default)]
struct ContainerDefault {
    path: String,
    mode: String,
}

impl Default for ContainerDefault {
    fn default() -> Self {
        Self {
            path: "/tmp/x".to_owned(),
            mode: "w".to_owned(),
        }
    }
}

#[test]
fn evasion_container_default_is_asked_about_with_the_default_shown() {
    let ask = r#"{"id": "ask", "tool": "t", "action": "ask", "reason": "writes", "when": {"equals": {"pointer": "/mode", "value": "w"}}}"#;
    let gate = Gate::new::<ContainerDefault>(ask);
    // The person approving sees the mode the handler would use.
    assert_eq!(
        gate.call(json!({})),
        Seen::Asked(json!({"path": "/tmp/x", "mode": "w"}))
    );
    assert_eq!(
        gate.call(json!({"mode": "r"})),
        Seen::Ran(json!({"path": "/tmp/x", "mode": "r"}))
    );
}

// Issue 21, item 5: untagged unions are refused when the tool is defined. In each shape, one
// variant carries what a rule on another variant's field watches (a path as a plain string, or
// under another name), so the rule could not judge it; tagged shapes are accepted.

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Target {
    Read {
        #[serde(alias = "file")]
        path: String,
    },
    Fetch {
        url: String,
    },
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum PathOrSpec {
    Spec { path: String },
    Plain(String),
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Nested {
    target: PathOrSpec,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct InList {
    targets: Vec<PathOrSpec>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Optional {
    target: Option<PathOrSpec>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind")]
enum TaggedOuter {
    Copy { from: PathOrSpec },
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
enum Scalars {
    Number(i64),
    Text(String),
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct NumberOrText {
    value: Scalars,
}

fn refused_at<T: DeserializeOwned + Serialize + JsonSchema + 'static>() -> String {
    match ToolDefinition::typed("t", "A typed tool.", |_: T| Ok(String::new())) {
        Err(DefinitionError::UntaggedUnion { tool, place }) => {
            assert_eq!(tool, "t");
            place
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn untagged_unions_are_refused_when_the_tool_is_defined() {
    let places = [
        ("top level", refused_at::<Target>()),
        ("a field", refused_at::<Nested>()),
        ("a list element", refused_at::<InList>()),
        ("an optional field", refused_at::<Optional>()),
        ("inside a tagged variant", refused_at::<TaggedOuter>()),
        ("of scalars", refused_at::<NumberOrText>()),
    ];
    for (how, place) in &places {
        assert!(place.ends_with("/anyOf"), "{how}: {place}");
    }
    assert_eq!(places[0].1, "/anyOf");
    assert_eq!(places[1].1, "/$defs/PathOrSpec/anyOf");
    let error = ToolDefinition::typed("t", "A typed tool.", |_: Nested| Ok(String::new()))
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("untagged enum") && error.contains("tag the enum"),
        "{error}"
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
enum External {
    Read { path: String },
    Plain(String),
    Unit,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "op", content = "args")]
enum AdjacentPaths {
    Read { path: String },
    Plain(String),
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Tagged {
    external: External,
    adjacent: AdjacentPaths,
    optional: Option<External>,
    text: Option<String>,
    units: Vec<Unit>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
enum Unit {
    A,
    B,
}

#[test]
fn tagged_unions_and_options_are_accepted() {
    // The control: every tagged shape serde writes, and `Option`, define a tool.
    assert!(ToolDefinition::typed("t", "A typed tool.", |_: Tagged| Ok(String::new())).is_ok());
    // And a rule on an externally tagged variant's field judges every call of that variant.
    let gate = Gate::new::<External>(&deny_glob("/Read/path", "/etc/*"));
    assert_eq!(
        gate.call(json!({"Read": {"path": "/etc/shadow"}})),
        Seen::Denied
    );
    assert_eq!(
        gate.call(json!({"Plain": "/tmp/x"})),
        Seen::Ran(json!({"Plain": "/tmp/x"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "op")]
enum Operation {
    Open {
        path: String,
        #[serde(default = "write_mode")]
        mode: String,
    },
    Stat {
        path: String,
    },
}

#[test]
fn evasion_internally_tagged_enum_default_is_denied() {
    let gate = Gate::new::<Operation>(&deny_w("/mode"));
    assert_eq!(
        gate.call(json!({"op": "Open", "path": "/tmp/a"})),
        Seen::Denied
    );
    assert_not_read(gate.call(json!({"op": "Stat", "path": "/tmp/a", "mode": "w"})));
    assert_eq!(
        gate.call(json!({"op": "Open", "path": "/tmp/a", "mode": "r"})),
        Seen::Ran(json!({"op": "Open", "path": "/tmp/a", "mode": "r"}))
    );
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "op", content = "args")]
enum Adjacent {
    Open {
        path: String,
        #[serde(default = "write_mode")]
        mode: String,
    },
}

#[test]
fn evasion_adjacently_tagged_enum_default_is_denied() {
    let gate = Gate::new::<Adjacent>(&deny_w("/args/mode"));
    assert_eq!(
        gate.call(json!({"op": "Open", "args": {"path": "/tmp/a"}})),
        Seen::Denied
    );
    assert_eq!(
        gate.call(json!({"op": "Open", "args": {"path": "/tmp/a", "mode": "r"}})),
        Seen::Ran(json!({"op": "Open", "args": {"path": "/tmp/a", "mode": "r"}}))
    );
}

fn some_write() -> Option<String> {
    Some("w".to_owned())
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct OptionalModes {
    path: String,
    #[serde(default = "some_write")]
    mode: Option<String>,
    note: Option<String>,
}

#[test]
fn evasion_option_field_default_is_denied_and_absent_stays_absent() {
    let ask_note = r#"{"id": "ask-note", "tool": "t", "action": "ask", "reason": "notes", "when": {"glob": {"pointer": "/note", "pattern": "*secret*"}}}"#;
    let gate = Gate::new::<OptionalModes>(&format!("{}, {ask_note}", deny_w("/mode")));
    assert_eq!(gate.call(json!({"path": "/tmp/a"})), Seen::Denied);
    // An explicit null is `None`, as the handler receives it. The absent `note` is not turned
    // into `null` (which a glob could not judge, so the ask rule would fire on every call).
    assert_eq!(
        gate.call(json!({"path": "/tmp/a", "mode": null})),
        Seen::Ran(json!({"path": "/tmp/a", "mode": null, "note": null}))
    );
    assert_eq!(
        gate.call(json!({"path": "/tmp/a", "mode": "r", "note": "my secret"})),
        Seen::Asked(json!({"path": "/tmp/a", "mode": "r", "note": "my secret"}))
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

/// A typed tool normalizes the arguments (fills serde defaults) before the approval is made; with
/// an audit sink the approval digest must be of the normalized call, or approving it would be
/// refused as altered.
#[test]
fn an_audited_typed_tool_with_defaults_runs_once_approved() {
    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    #[serde(default)]
    struct Write {
        path: String,
        mode: String,
    }
    impl Default for Write {
        fn default() -> Self {
            Self {
                path: "/tmp/x".to_owned(),
                mode: "w".to_owned(),
            }
        }
    }
    let tool = ToolDefinition::typed("write", "Writes.", |args: Write| {
        Ok::<_, ToolError>(format!("{} {}", args.mode, args.path))
    })
    .unwrap();
    let sink = Arc::new(toolgate::audit::MemoryAuditSink::new());
    let controller =
        ToolController::new(registry([tool]), policy(&[], &["write"])).with_audit_sink(sink);
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "write", json!({"path": "/tmp/a"})))
    else {
        panic!("write asks");
    };
    assert_eq!(
        request.call.arguments,
        json!({"path": "/tmp/a", "mode": "w"})
    );
    assert!(request.digest_matches());
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    assert_eq!(result, ToolResult::ok("c", "w /tmp/a"));
}
