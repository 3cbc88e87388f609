//! Defaults the type fills in (a field's, the container's, a tagged variant's, an option's): the
//! rule judges and the person approves the value the handler will get.

use super::*;

fn write_mode() -> String {
    "w".to_owned()
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
