//! Issue 37's corpus: policy pairs over tools with the schemas real servers declare (patterns,
//! `minProperties`, required-key alternatives, bounded numbers, lists, objects), with principals,
//! working directories, layers and flow rules. For every pair and tool: a "same" is re-decided on
//! sampled valid calls and callers (zero false "same"), every witness is valid and decided
//! differently again (zero false "differs"), and an "unknown" names a documented construct.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::policy::{Layers, Policy};
use toolgate::rules::analysis::{self, Analysed, ToolDiff};
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([
        counted(
            "refund",
            json!({"type": "object", "properties": {
                "order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
                "cents": {"type": "integer", "minimum": 0, "maximum": 100000},
                "currency": {"enum": ["EUR", "USD"]}
            }, "required": ["order_id", "cents"]}),
            &runs,
        ),
        counted(
            "mail",
            json!({"type": "object", "properties": {
                "to": {"type": "string", "pattern": "^[a-z0-9.]+@[a-z0-9.]+$"},
                "cc": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                "body": {"type": "string"}
            }, "required": ["to"]}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "cwd": {"type": "string"}
            }, "oneOf": [{"required": ["command"]}, {"required": ["argv"]}]}),
            &runs,
        ),
        counted(
            "tag",
            json!({"type": "object", "properties": {
                "label": {"type": "string"},
                "colour": {"enum": ["red", "blue"]},
                "meta": {"type": "object"}
            }, "minProperties": 1}),
            &runs,
        ),
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            &runs,
        ),
    ])
}

/// Valid and near-boundary arguments for each tool (invalid ones are dropped by the runtime).
fn samples(tool: &str) -> Vec<Value> {
    match tool {
        "refund" => {
            let mut out = Vec::new();
            for order in ["ORD-000001", "ORD-000002", "ORD-123456", "ORD-999999"] {
                for cents in [
                    0, 1, 99, 100, 101, 500, 999, 1000, 1001, 5000, 99999, 100000,
                ] {
                    out.push(json!({"order_id": order, "cents": cents}));
                    out.push(json!({"order_id": order, "cents": cents, "currency": "EUR"}));
                    out.push(json!({"order_id": order, "cents": cents, "currency": "USD"}));
                }
            }
            out
        }
        "mail" => {
            let mut out = Vec::new();
            for to in [
                "ops@example.com",
                "a@b",
                "eve@evil.example",
                "zz-toolgate-fresh@x",
            ] {
                out.push(json!({"to": to}));
                out.push(json!({"to": to, "cc": []}));
                out.push(json!({"to": to, "cc": ["ops@example.com"]}));
                out.push(json!({"to": to, "cc": ["x@y", "z@w"]}));
                out.push(json!({"to": to, "body": "hello"}));
            }
            out
        }
        "shell" => vec![
            json!({"command": "ls"}),
            json!({"command": "ls -la"}),
            json!({"command": "rm -rf /"}),
            json!({"command": "zz-toolgate-fresh"}),
            json!({"argv": ["ls"]}),
            json!({"argv": []}),
            json!({"argv": ["rm", "-rf", "/"]}),
            json!({"command": "ls", "cwd": "/tmp"}),
            json!({"argv": ["ls"], "cwd": "/srv"}),
        ],
        "tag" => vec![
            json!({"label": "x"}),
            json!({"colour": "red"}),
            json!({"colour": "blue"}),
            json!({"label": "urgent", "colour": "red"}),
            json!({"meta": {}}),
            json!({"meta": {"a": "b"}}),
            json!({"label": "x", "meta": {}}),
        ],
        "read_file" => [
            "/srv/a",
            "/srv/secret/k",
            "/srv",
            "/etc/passwd",
            "a",
            "secret/k",
            "../etc/passwd",
            "~/x",
            "/srv/./secret/k",
            "/SRV/a",
            "/zz-toolgate-fresh",
            "/tmp/x",
        ]
        .iter()
        .map(|path| json!({ "path": path }))
        .collect(),
        _ => Vec::new(),
    }
}

fn callers() -> Vec<Option<Principal>> {
    vec![
        None,
        Some(Principal::new("alice", ["ops"])),
        Some(Principal::new("bob", ["dev"])),
        Some(Principal::new("mallory", Vec::<String>::new())),
    ]
}

/// One side of a pair: layers (highest first) of policy JSON.
struct Side {
    analysed: Analysed,
    decider: Box<dyn Policy>,
}

fn side(layers: &[&str]) -> Side {
    let registry = tools();
    let load = |text: &str| {
        RulePolicy::from_json(text, &registry).unwrap_or_else(|error| panic!("{error}\n{text}"))
    };
    if let [one] = layers {
        return Side {
            analysed: Analysed::policy(load(one)),
            decider: Box::new(load(one)),
        };
    }
    let named = |index: usize| format!("layer{index}");
    let analysed = Analysed::layers(
        layers
            .iter()
            .enumerate()
            .map(|(index, text)| (named(index), load(text))),
    )
    .unwrap();
    let mut stack = Layers::new();
    for (index, text) in layers.iter().enumerate() {
        stack = stack.layer(named(index), load(text)).unwrap();
    }
    Side {
        analysed,
        decider: Box::new(stack),
    }
}

fn rules(rules: Value) -> String {
    json!({ "rules": rules }).to_string()
}

fn with(policy: &str, key: &str, value: Value) -> String {
    let mut parsed: Value = serde_json::from_str(policy).unwrap();
    parsed[key] = value;
    parsed.to_string()
}

/// The base policy every pair varies.
fn base() -> Value {
    json!([
        {"id": "refund-small", "tool": "refund", "action": "allow", "reason": "r",
         "when": {"range": {"pointer": "/cents", "max": 1000}}},
        {"id": "refund-one-order", "tool": "refund", "action": "ask", "reason": "r",
         "when": {"equals": {"pointer": "/order_id", "value": "ORD-123456"}}},
        {"id": "mail-ops", "tool": "mail", "action": "allow", "reason": "r",
         "when": {"one_of": {"pointer": "/to", "values": ["ops@example.com"]}}},
        {"id": "shell-ls", "tool": "shell", "action": "allow", "reason": "r",
         "when": {"equals": {"pointer": "/command", "value": "ls"}}},
        {"id": "tag-red", "tool": "tag", "action": "allow", "reason": "r",
         "when": {"equals": {"pointer": "/colour", "value": "red"}}},
        {"id": "read-srv", "tool": "read_file", "action": "allow", "reason": "r",
         "when": {"path_within": {"pointer": "/path", "roots": ["/srv"]}}},
        {"id": "no-secrets", "tool": "read_file", "action": "deny", "reason": "r",
         "when": {"path_within": {"pointer": "/path", "roots": ["/srv/secret"]}}}
    ])
}

/// `base()` with rule `id` replaced by `rule` (or removed when `rule` is null).
fn replaced(id: &str, rule: Value) -> Value {
    let mut out: Vec<Value> = base()
        .as_array()
        .unwrap()
        .iter()
        .filter(|existing| existing["id"] != id)
        .cloned()
        .collect();
    if !rule.is_null() {
        out.push(rule);
    }
    Value::Array(out)
}

fn added(rule: Value) -> Value {
    let mut out = base().as_array().unwrap().clone();
    out.push(rule);
    Value::Array(out)
}

/// One pair: its name, the old and new layers, the tool the change is about and whether it
/// changes a decision there (`None`: not asserted).
type Pair = (String, Vec<String>, Vec<String>, &'static str, Option<bool>);

fn pairs() -> Vec<Pair> {
    let base_text = rules(base());
    let mut out: Vec<Pair> = Vec::new();
    let mut pair = |name: &str, new: String, tool: &'static str, changes: Option<bool>| {
        out.push((
            name.to_owned(),
            vec![base_text.clone()],
            vec![new],
            tool,
            changes,
        ));
    };
    for tool in ["refund", "mail", "shell", "tag", "read_file"] {
        pair(
            &format!("identical on {tool}"),
            rules(base()),
            tool,
            Some(false),
        );
    }
    let r = |id: &str, tool: &str, action: &str, when: Value| json!({"id": id, "tool": tool, "action": action, "reason": "r", "when": when});
    for (max, changes) in [
        (1000, false),
        (1001, true),
        (999, true),
        (100000, true),
        (0, true),
    ] {
        pair(
            &format!("refund range max {max}"),
            rules(replaced(
                "refund-small",
                r(
                    "refund-small",
                    "refund",
                    "allow",
                    json!({"range": {"pointer": "/cents", "max": max}}),
                ),
            )),
            "refund",
            Some(changes),
        );
    }
    pair(
        "refund range min 0 added",
        rules(replaced(
            "refund-small",
            r(
                "refund-small",
                "refund",
                "allow",
                json!({"range": {"pointer": "/cents", "min": 0, "max": 1000}}),
            ),
        )),
        "refund",
        Some(false),
    );
    pair(
        "refund order asks -> denies",
        rules(replaced(
            "refund-one-order",
            r(
                "refund-one-order",
                "refund",
                "deny",
                json!({"equals": {"pointer": "/order_id", "value": "ORD-123456"}}),
            ),
        )),
        "refund",
        Some(true),
    );
    pair(
        "refund order spelled like the fresh name",
        rules(replaced(
            "refund-one-order",
            r(
                "refund-one-order",
                "refund",
                "ask",
                json!({"equals": {"pointer": "/order_id", "value": "zz-toolgate-fresh"}}),
            ),
        )),
        "refund",
        Some(true),
    );
    pair(
        "refund currency",
        rules(added(r(
            "no-usd",
            "refund",
            "deny",
            json!({"equals": {"pointer": "/currency", "value": "USD"}}),
        ))),
        "refund",
        Some(true),
    );
    pair(
        "refund rule removed",
        rules(replaced("refund-small", Value::Null)),
        "refund",
        Some(true),
    );
    for (values, changes) in [
        (json!(["ops@example.com"]), false),
        (json!(["ops@example.com", "a@b"]), true),
        (json!(["zz-toolgate-fresh@x"]), true),
        (json!(["OPS@example.com"]), true),
    ] {
        pair(
            &format!("mail recipients {values}"),
            rules(replaced(
                "mail-ops",
                r(
                    "mail-ops",
                    "mail",
                    "allow",
                    json!({"one_of": {"pointer": "/to", "values": values}}),
                ),
            )),
            "mail",
            Some(changes),
        );
    }
    pair(
        "mail cc empty denied",
        rules(added(r(
            "no-empty-cc",
            "mail",
            "deny",
            json!({"equals": {"pointer": "/cc", "value": []}}),
        ))),
        "mail",
        Some(true),
    );
    pair(
        "mail cc one list asks",
        rules(added(r(
            "cc-ops",
            "mail",
            "ask",
            json!({"equals": {"pointer": "/cc", "value": ["ops@example.com"]}}),
        ))),
        "mail",
        Some(true),
    );
    pair(
        "mail to everyone",
        rules(replaced(
            "mail-ops",
            json!({"id": "mail-ops", "tool": "mail", "action": "allow", "reason": "r"}),
        )),
        "mail",
        Some(true),
    );
    pair(
        "shell argv rule",
        rules(added(r(
            "argv-ls",
            "shell",
            "allow",
            json!({"equals": {"pointer": "/argv", "value": ["ls"]}}),
        ))),
        "shell",
        Some(true),
    );
    pair(
        "shell command changed",
        rules(replaced(
            "shell-ls",
            r(
                "shell-ls",
                "shell",
                "allow",
                json!({"equals": {"pointer": "/command", "value": "ls -la"}}),
            ),
        )),
        "shell",
        Some(true),
    );
    pair(
        "shell any command",
        rules(replaced(
            "shell-ls",
            json!({"id": "shell-ls", "tool": "shell", "action": "allow", "reason": "r"}),
        )),
        "shell",
        Some(true),
    );
    pair(
        "tag blue too",
        rules(replaced(
            "tag-red",
            r(
                "tag-red",
                "tag",
                "allow",
                json!({"one_of": {"pointer": "/colour", "values": ["red", "blue"]}}),
            ),
        )),
        "tag",
        Some(true),
    );
    pair(
        "tag empty meta denied",
        rules(added(r(
            "no-empty-meta",
            "tag",
            "deny",
            json!({"equals": {"pointer": "/meta", "value": {}}}),
        ))),
        "tag",
        Some(true),
    );
    pair(
        "tag any",
        rules(replaced(
            "tag-red",
            json!({"id": "tag-red", "tool": "tag", "action": "allow", "reason": "r"}),
        )),
        "tag",
        Some(true),
    );
    for (roots, changes) in [
        (json!(["/srv"]), false),
        (json!(["/srv", "/tmp"]), true),
        (json!(["/zz-toolgate-fresh"]), true),
        (json!(["/srv/a"]), true),
    ] {
        pair(
            &format!("read roots {roots}"),
            rules(replaced(
                "read-srv",
                r(
                    "read-srv",
                    "read_file",
                    "allow",
                    json!({"path_within": {"pointer": "/path", "roots": roots}}),
                ),
            )),
            "read_file",
            Some(changes),
        );
    }
    pair(
        "secrets rule removed",
        rules(replaced("no-secrets", Value::Null)),
        "read_file",
        Some(true),
    );
    pair(
        "working directory set",
        with(
            &rules(base()),
            "paths",
            json!({"working_directory": "/srv"}),
        ),
        "read_file",
        None,
    );
    for (principals, changes) in [
        (json!({"groups": ["ops"]}), true),
        (json!({"ids": ["alice"]}), true),
        (json!({"ids": ["zz-toolgate-fresh"]}), true),
        (json!({"groups": ["ops", "dev"]}), true),
    ] {
        let mut rule = r(
            "refund-small",
            "refund",
            "allow",
            json!({"range": {"pointer": "/cents", "max": 1000}}),
        );
        rule["principals"] = principals.clone();
        pair(
            &format!("refund for {principals}"),
            rules(replaced("refund-small", rule)),
            "refund",
            Some(changes),
        );
    }
    let mut approvers = r(
        "refund-one-order",
        "refund",
        "ask",
        json!({"equals": {"pointer": "/order_id", "value": "ORD-123456"}}),
    );
    approvers["approvers"] = json!({"groups": ["finance"]});
    pair(
        "refund ask answered by finance",
        rules(replaced("refund-one-order", approvers)),
        "refund",
        Some(true),
    );
    let flows = with(
        &rules(base()),
        "flows",
        json!([{"id": "no-mail-after-read", "tool": "mail", "action": "deny",
        "reason": "r", "after": {"tool": "read_file", "within": "session"}}]),
    );
    pair("a flow rule added", flows, "mail", None);
    let limits = with(
        &rules(base()),
        "limits",
        json!([{"id": "few", "tool": "refund", "max": 3,
        "per": "hour", "over": "deny", "reason": "r"}]),
    );
    pair("a limit added", limits, "refund", None);
    pair(
        "mail body denied",
        rules(added(r(
            "no-hello",
            "mail",
            "deny",
            json!({"equals": {"pointer": "/body", "value": "hello"}}),
        ))),
        "mail",
        Some(true),
    );
    pair(
        "shell cwd under /srv asks",
        rules(added(r(
            "cwd-srv",
            "shell",
            "ask",
            json!({"path_within": {"pointer": "/cwd", "roots": ["/srv"]}}),
        ))),
        "shell",
        Some(true),
    );
    pair(
        "tag urgent asks",
        rules(added(r(
            "urgent",
            "tag",
            "ask",
            json!({"equals": {"pointer": "/label", "value": "urgent"}}),
        ))),
        "tag",
        Some(true),
    );
    pair(
        "refund large denied",
        rules(added(r(
            "no-large",
            "refund",
            "deny",
            json!({"range": {"pointer": "/cents", "min": 500}}),
        ))),
        "refund",
        Some(true),
    );
    pair(
        "refund order and amount",
        rules(replaced(
            "refund-one-order",
            r(
                "refund-one-order",
                "refund",
                "ask",
                json!({"all": [{"equals": {"pointer": "/order_id", "value": "ORD-123456"}},
                       {"range": {"pointer": "/cents", "min": 1}}]}),
            ),
        )),
        "refund",
        Some(true),
    );
    pair(
        "outside /srv denied explicitly",
        rules(added(r(
            "outside",
            "read_file",
            "deny",
            json!({"not": {"path_within": {"pointer": "/path", "roots": ["/srv"]}}}),
        ))),
        "read_file",
        Some(false),
    );
    pair(
        "glob on mail",
        rules(added(r(
            "no-evil",
            "mail",
            "deny",
            json!({"glob": {"pointer": "/to", "pattern": "*@evil.example"}}),
        ))),
        "mail",
        None,
    );
    // Layers: the same rules split over two layers, and an organisation layer that denies.
    let (refunds, rest): (Vec<Value>, Vec<Value>) = base()
        .as_array()
        .unwrap()
        .iter()
        .cloned()
        .partition(|rule| rule["tool"] == "refund");
    let split = vec![
        rules(Value::Array(refunds.clone())),
        rules(Value::Array(rest.clone())),
    ];
    out.push((
        "split into layers".into(),
        vec![base_text.clone()],
        split.clone(),
        "refund",
        Some(false),
    ));
    let org = rules(json!([r(
        "org-no-big",
        "refund",
        "deny",
        json!({"range": {"pointer": "/cents", "min": 500}})
    )]));
    out.push((
        "an organisation layer".into(),
        split.clone(),
        vec![org.clone(), split[0].clone(), split[1].clone()],
        "refund",
        Some(true),
    ));
    out.push((
        "the organisation layer twice".into(),
        vec![org.clone(), base_text.clone()],
        vec![org, base_text.clone()],
        "refund",
        Some(false),
    ));
    out
}

/// Reasons an "unknown" may give: the constructs the guide documents as not compared.
const DOCUMENTED: [&str; 7] = [
    "flow rules",
    "rate limits",
    "with glob",
    "read paths or text differently",
    "budget",
    "groups; only each one alone",
    "does not fit the schema",
];

#[test]
fn the_corpus_has_no_false_same_no_false_differs_and_no_undocumented_unknown() {
    let registry = tools();
    let runtime = ToolRuntime::new(tools());
    let corpus = pairs();
    assert!(corpus.len() >= 50, "{} pairs", corpus.len());
    let (mut same, mut differs, mut unknown, mut checked_calls) = (0, 0, 0, 0);
    for (name, old, new, about, changes) in &corpus {
        let old_refs: Vec<&str> = old.iter().map(String::as_str).collect();
        let new_refs: Vec<&str> = new.iter().map(String::as_str).collect();
        let (old, new) = (side(&old_refs), side(&new_refs));
        for diff in analysis::diff(&old.analysed, &new.analysed, &registry) {
            let tool = diff.tool().to_owned();
            match &diff {
                ToolDiff::Same { .. } => {
                    same += 1;
                    for arguments in samples(&tool) {
                        for caller in callers() {
                            let mut call = ToolCall::new("c", tool.clone(), arguments.clone());
                            if let Some(caller) = &caller {
                                call = call.with_principal(caller.clone());
                            }
                            let Ok(prepared) = runtime.prepare(call) else {
                                continue;
                            };
                            checked_calls += 1;
                            let (a, b) =
                                (old.decider.decide(&prepared), new.decider.decide(&prepared));
                            assert!(
                                a.action == b.action && a.approvers == b.approvers,
                                "{name}: false same on {tool}: {arguments} {caller:?}: {:?} vs {:?}",
                                a.action,
                                b.action
                            );
                        }
                    }
                }
                ToolDiff::Differs { witnesses, .. } => {
                    differs += 1;
                    for witness in witnesses {
                        let mut call = ToolCall::new("c", tool.clone(), witness.arguments.clone());
                        if let Some(caller) = &witness.principal {
                            call = call.with_principal(caller.clone());
                        }
                        let prepared = runtime.prepare(call).unwrap_or_else(|_| {
                            panic!("{name}: invalid witness {}", witness.arguments)
                        });
                        let (a, b) = (old.decider.decide(&prepared), new.decider.decide(&prepared));
                        assert!(
                            a.action != b.action || a.approvers != b.approvers,
                            "{name}: false differs on {tool}: {}",
                            witness.arguments
                        );
                    }
                }
                ToolDiff::Unknown { reason, .. } => {
                    unknown += 1;
                    assert!(
                        DOCUMENTED
                            .iter()
                            .any(|construct| reason.contains(construct)),
                        "{name}: undocumented unknown on {tool}: {reason}"
                    );
                }
                _ => {}
            }
            if tool == *about
                && let Some(changes) = changes
            {
                let found = matches!(diff, ToolDiff::Differs { .. });
                assert_eq!(found, *changes, "{name}: {diff:#?}");
            }
        }
    }
    // The corpus's own figures, printed for the note (`--nocapture`).
    println!(
        "{} pairs: {same} same, {differs} differ, {unknown} unknown verdicts; {checked_calls} sampled calls re-decided",
        corpus.len()
    );
}
