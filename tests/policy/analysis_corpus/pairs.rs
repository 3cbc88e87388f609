//! The corpus's pairs: a base policy over the five tools, and each change to it (a bound, a value,
//! a root, a caller, approvers, a flow rule, a limit, layers) with the tool it is about and whether
//! it changes a decision there.

use super::*;

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
pub(super) type Pair = (String, Vec<String>, Vec<String>, &'static str, Option<bool>);

pub(super) fn pairs() -> Vec<Pair> {
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
