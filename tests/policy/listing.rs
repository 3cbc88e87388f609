//! Each caller lists only what it may call (issue 40, item 3): a tool some rule allows or asks for
//! only for other callers, or that a rule denies to every call of this caller, is left out of its
//! list — and a property test holds the listing to the decisions: a tool hidden from a caller is
//! denied on every call of theirs.

use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::policy::Layers;
use toolgate::*;

use crate::common::*;

fn tools(names: &[&str]) -> ToolRegistry {
    let runs = Arc::default();
    let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
    registry(
        names
            .iter()
            .map(|name| counted(name, schema.clone(), &runs)),
    )
}

fn principal(id: &str, groups: &[&str]) -> Principal {
    Principal::new(id, groups.iter().copied())
}

/// Whether the call was refused (nothing ran, nobody was asked).
fn denied(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Completed(result) if result.is_error)
}

fn listed(controller: &ToolController, caller: Option<&Principal>) -> Vec<String> {
    controller
        .listed_specs_for(caller)
        .iter()
        .map(|spec| spec.name.clone())
        .collect()
}

const POLICY: &str = r#"{"rules": [
  {"id": "read", "tool": "read", "action": "allow", "reason": "anyone reads"},
  {"id": "ops-deploy", "tool": "deploy", "action": "allow", "reason": "ops deploy",
   "principals": {"groups": ["ops"]}},
  {"id": "carol-asks-deploy", "tool": "deploy", "action": "ask", "reason": "carol asks",
   "principals": {"ids": ["carol"]}},
  {"id": "wipe", "tool": "wipe", "action": "ask", "reason": "a person confirms"},
  {"id": "no-wipe-for-contractors", "tool": "wipe", "action": "deny", "reason": "never",
   "principals": {"groups": ["contractors"]}},
  {"id": "small-exports", "tool": "export", "action": "allow", "reason": "small ones",
   "when": {"range": {"pointer": "/x", "max": 10}}},
  {"id": "no-big-exports-for-contractors", "tool": "export", "action": "deny", "reason": "big",
   "principals": {"groups": ["contractors"]}, "when": {"range": {"pointer": "/x", "min": 11}}}
]}"#;

#[test]
fn a_caller_lists_the_tools_some_call_of_theirs_could_pass() {
    let registry = tools(&["read", "deploy", "wipe", "export"]);
    let policy = rule_policy(POLICY, &registry);
    let controller = ToolController::try_new(registry, policy).unwrap();
    let ops = principal("alice", &["ops"]);
    let carol = principal("carol", &[]);
    let contractor = principal("dan", &["contractors", "ops"]);
    let nobody = principal("eve", &[]);
    assert_eq!(
        listed(&controller, Some(&ops)),
        ["read", "deploy", "wipe", "export"]
    );
    assert_eq!(
        listed(&controller, Some(&carol)),
        ["read", "deploy", "wipe", "export"]
    );
    // A deny without a condition hides; one with a condition leaves the other calls.
    assert_eq!(
        listed(&controller, Some(&contractor)),
        ["read", "deploy", "export"]
    );
    assert_eq!(
        listed(&controller, Some(&nobody)),
        ["read", "wipe", "export"]
    );
    assert_eq!(listed(&controller, None), ["read", "wipe", "export"]);
    // The list every caller may see is unchanged: rules for some callers still show there.
    let all: Vec<String> = controller
        .listed_specs()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(all, ["read", "deploy", "wipe", "export"]);
    // Hidden is still gated: calling it is denied.
    let call = ToolCall::new("c", "deploy", json!({})).with_principal(nobody.clone());
    assert!(denied(&controller.handle(call)));
    // Groups in another order are the same caller; another group another caller.
    let reordered = principal("dan", &["ops", "contractors"]);
    assert_eq!(
        listed(&controller, Some(&reordered)),
        ["read", "deploy", "export"]
    );
    // A new policy is a new list, for a caller listed before.
    controller
        .replace_policy(rule_policy(
            r#"{"rules": [{"id": "read", "tool": "read", "action": "allow", "reason": "r"}]}"#,
            &tools(&["read", "deploy", "wipe", "export"]),
        ))
        .unwrap();
    assert_eq!(listed(&controller, Some(&ops)), ["read"]);
}

#[test]
fn a_layer_that_denies_every_call_of_a_caller_hides_the_tool_from_the_stack() {
    let registry = tools(&["read", "wipe"]);
    let organisation = rule_policy(
        r#"{"rules": [{"id": "no-wipe", "tool": "wipe", "action": "deny", "reason": "never",
            "principals": {"groups": ["contractors"]}}]}"#,
        &registry,
    );
    let project = rule_policy(
        r#"{"rules": [{"id": "read", "tool": "read", "action": "allow", "reason": "r"},
                      {"id": "wipe", "tool": "wipe", "action": "allow", "reason": "r"}]}"#,
        &registry,
    );
    let layers = Layers::new()
        .layer("organisation", organisation)
        .unwrap()
        .layer("project", project)
        .unwrap();
    let controller = ToolController::try_new(registry, layers).unwrap();
    let staff = principal("alice", &["staff"]);
    assert_eq!(listed(&controller, Some(&staff)), ["read", "wipe"]);
    // The organisation's deny wins for contractors in every call, whatever the project allows.
    let contractor = principal("dan", &["contractors"]);
    let call = ToolCall::new("c", "wipe", json!({})).with_principal(contractor.clone());
    assert!(denied(&controller.handle(call)));
    assert_eq!(listed(&controller, Some(&contractor)), ["read"]);
}

const TOOLS: [&str; 3] = ["t0", "t1", "t2"];

fn rule_strategy() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("t0"), Just("t1"), Just("t2"), Just("t*")],
        prop_oneof![Just("allow"), Just("ask"), Just("deny")],
        prop_oneof![
            Just(Value::Null),
            Just(json!({"ids": ["a"]})),
            Just(json!({"groups": ["g1"]})),
            Just(json!({"groups": ["g2"]})),
        ],
        prop_oneof![
            Just(Value::Null),
            Just(json!({"range": {"pointer": "/x", "max": 5}})),
            Just(json!({"range": {"pointer": "/x", "min": 6}})),
        ],
    )
        .prop_map(|(tool, action, principals, when)| {
            let mut rule = json!({"tool": tool, "action": action, "reason": "r"});
            if !principals.is_null() {
                rule["principals"] = principals;
            }
            if !when.is_null() {
                rule["when"] = when;
            }
            rule
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A tool left out of a caller's list is denied on every call of that caller.
    #[test]
    fn a_tool_hidden_from_a_caller_is_denied_on_every_call_of_theirs(
        rules in prop::collection::vec(rule_strategy(), 0..7),
        layered in any::<bool>(),
        split in 0_usize..4,
    ) {
        let rules: Vec<Value> = rules
            .into_iter()
            .enumerate()
            .map(|(index, mut rule)| {
                rule["id"] = json!(format!("r{index}"));
                rule
            })
            .collect();
        let registry = tools(&TOOLS);
        // The first rules a layer of their own above the rest, or one policy.
        let (upper, lower) = rules.split_at(split.min(rules.len()));
        let text = json!({"upper": upper, "lower": lower, "layered": layered}).to_string();
        let load = |rules: &[Value]| RulePolicy::from_json(&json!({"rules": rules}).to_string(), &registry);
        let controller = if layered {
            // Policies the loader refuses (a shadowed or repeated rule) say nothing here.
            let (Ok(upper), Ok(lower)) = (load(upper), load(lower)) else {
                return Ok(());
            };
            let stack = Layers::new().layer("upper", upper).unwrap().layer("lower", lower).unwrap();
            ToolController::try_new(tools(&TOOLS), stack).unwrap()
        } else {
            let Ok(policy) = load(&rules) else { return Ok(()) };
            ToolController::try_new(tools(&TOOLS), policy).unwrap()
        };
        let callers = [
            None,
            Some(principal("a", &[])),
            Some(principal("b", &["g1"])),
            Some(principal("c", &["g1", "g2"])),
            Some(principal("d", &["g3"])),
        ];
        for caller in &callers {
            let shown = listed(&controller, caller.as_ref());
            for tool in TOOLS {
                if shown.iter().any(|name| name == tool) {
                    continue;
                }
                for x in [-3, 0, 5, 6, 40] {
                    let mut call = ToolCall::new("c", tool, json!({"x": x}));
                    call.principal = caller.clone().map(Arc::new);
                    let outcome = controller.handle(call);
                    prop_assert!(
                        denied(&outcome),
                        "{} hidden from {:?} but decided otherwise for x = {}: {}", tool, caller, x, text
                    );
                }
            }
        }
    }
}
