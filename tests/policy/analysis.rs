//! A policy you can prove: examples checked at load, the diff of two policies with a witness call
//! (never a false "same"), and the rules and layers that add nothing.

use std::sync::Arc;
use toolgate::policy::Shadow;

use crate::common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolgate::rules::analysis::{self, Analysed, FindingKind, ToolDiff};
use toolgate::rules::{PolicyExample, PolicyLoadError};
use toolgate::*;

fn tools() -> ToolRegistry {
    let runs = Arc::default();
    registry([
        counted(
            "refund",
            json!({"type": "object", "properties": {
                "cents": {"type": "integer"},
                "currency": {"type": "string"},
                "note": {"type": "string"}
            }, "required": ["cents"]}),
            &runs,
        ),
        counted(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            &runs,
        ),
        counted(
            "shell",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
            &runs,
        ),
        counted(
            "deploy",
            json!({"type": "object", "properties": {"env": {"enum": ["dev", "staging", "prod"]}}, "required": ["env"]}),
            &runs,
        ),
    ])
}

fn load(text: &str) -> RulePolicy {
    RulePolicy::from_json(text, &tools()).unwrap_or_else(|error| panic!("{error}"))
}

fn one(text: &str) -> Analysed {
    Analysed::policy(load(text))
}

fn verdict<'a>(diffs: &'a [ToolDiff], tool: &str) -> &'a ToolDiff {
    diffs.iter().find(|diff| diff.tool() == tool).unwrap()
}

/// The witness of `tool`, checked: valid, and decided as reported by both policies again.
fn witness(old: &Analysed, new: &Analysed, tool: &str) -> analysis::Witness {
    let diffs = analysis::diff(old, new, &tools());
    let ToolDiff::Differs { witnesses, .. } = verdict(&diffs, tool).clone() else {
        panic!("expected a witness for {tool}: {diffs:#?}")
    };
    for witness in &witnesses {
        assert_ne!(
            (witness.old.action, witness.old.approvers.len()),
            (witness.new.action, witness.new.approvers.len()),
            "{witness:?}"
        );
    }
    // One per pair of decisions.
    let pairs: Vec<_> = witnesses
        .iter()
        .map(|w| (w.old.action, w.new.action))
        .collect();
    for (index, pair) in pairs.iter().enumerate() {
        assert!(!pairs[index + 1..].contains(pair), "{pairs:?}");
    }
    witnesses.into_iter().next().unwrap()
}

const REFUNDS: &str = r#"{"rules": [
  {"id": "small", "tool": "refund", "action": "allow", "reason": "small",
   "when": {"all": [{"range": {"pointer": "/cents", "min": 0, "max": 1000}},
                    {"one_of": {"pointer": "/currency", "values": ["EUR", "USD"]}}]}},
  {"id": "read-data", "tool": "read_file", "action": "allow", "reason": "data",
   "when": {"path_within": {"pointer": "/path", "roots": ["/srv/data"]}}},
  {"id": "deploy-dev", "tool": "deploy", "action": "allow", "reason": "dev",
   "when": {"equals": {"pointer": "/env", "value": "dev"}}},
  {"id": "deploy-prod", "tool": "deploy", "action": "ask", "reason": "prod",
   "when": {"equals": {"pointer": "/env", "value": "prod"}}}
]}"#;

// ---- never a false "same" -----------------------------------------------------------------------

/// A random rule on `refund` (cents, currency) or `read_file` (path), from the kinds whose
/// classes the analysis knows exactly.
fn rule_strategy() -> impl Strategy<Value = Value> {
    let bound = -3_i64..6;
    let range = (
        proptest::option::of(bound.clone()),
        proptest::option::of(bound),
    )
        .prop_filter("a range has a bound", |(a, b)| a.is_some() || b.is_some())
        .prop_map(|(min, max)| {
            let mut range = json!({"pointer": "/cents"});
            if let Some(min) = min {
                range["min"] = json!(min);
            }
            if let Some(max) = max {
                range["max"] = json!(max);
            }
            json!({ "range": range })
        });
    // Literals and roots spelled like the names the analysis builds "any other value" from.
    let currency = prop::sample::subsequence(vec!["EUR", "USD", "GBP", "zz-toolgate-fresh"], 1..3)
        .prop_map(|values| json!({"one_of": {"pointer": "/currency", "values": values}}));
    let leaf = prop_oneof![range, currency];
    let refund_condition = leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(|items| json!({ "all": items })),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|items| json!({ "any": items })),
            inner.prop_map(|item| json!({ "not": item })),
        ]
    });
    let within = prop::sample::subsequence(vec!["/a", "/a/b", "/c", "/zz-toolgate-fresh"], 1..3)
        .prop_map(|roots| json!({"path_within": {"pointer": "/path", "roots": roots}}));
    let path_condition = within.prop_recursive(2, 4, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..3).prop_map(|items| json!({ "all": items })),
            inner.prop_map(|item| json!({ "not": item })),
        ]
    });
    let action = prop::sample::select(vec!["allow", "ask", "deny"]);
    // Groups, or an id spelled like the name the analysis builds "any other caller" from.
    let principals = proptest::option::of(prop::sample::select(vec![
        "ops",
        "dev",
        "id:zz-toolgate-fresh",
        "id:p",
    ]));
    prop_oneof![
        (action.clone(), refund_condition, principals).prop_map(|(action, when, group)| {
            let mut rule = json!({"tool": "refund", "action": action, "reason": "r", "when": when});
            if let Some(group) = group {
                rule["principals"] = match group.strip_prefix("id:") {
                    Some(id) => json!({ "ids": [id] }),
                    None => json!({ "groups": [group] }),
                };
            }
            rule
        }),
        (action, path_condition).prop_map(|(action, when)| json!({"tool": "read_file",
            "action": action, "reason": "r", "when": when})),
    ]
}

fn random_policy() -> impl Strategy<Value = Value> {
    let working_directory = proptest::option::of(prop::sample::select(vec!["/a", "/c/d"]));
    (
        prop::collection::vec(rule_strategy(), 0..4),
        working_directory,
    )
        .prop_map(|(rules, cwd)| {
            let rules: Vec<Value> = rules
                .into_iter()
                .enumerate()
                .map(|(index, mut rule)| {
                    rule["id"] = json!(format!("r{index}"));
                    rule
                })
                .collect();
            match cwd {
                Some(cwd) => json!({ "rules": rules, "paths": {"working_directory": cwd} }),
                None => json!({ "rules": rules }),
            }
        })
}

fn random_call() -> impl Strategy<Value = (String, Value, Option<Principal>)> {
    let cents = prop_oneof![
        (-6_i64..10).prop_map(|n| json!(n)),
        (-60_i32..100).prop_map(|n| json!(f64::from(n) / 10.0)),
        Just(json!(1e300)),
    ];
    let currency = proptest::option::of(prop::sample::select(vec![
        "EUR",
        "USD",
        "GBP",
        "eur",
        "JPY",
        "zz-toolgate-fresh",
        "zz-toolgate-fresh-1",
    ]));
    let path = prop::sample::select(vec![
        "/a",
        "/a/",
        "/a/b",
        "/a/b/c",
        "/a/bc",
        "/c",
        "/c/../a",
        "/d",
        "a",
        "b",
        "../a/b",
        "d/x",
        "~/x",
        "/a/./b",
        "/zz-toolgate-fresh",
        "/zz-toolgate-fresh/x",
        "zz-toolgate-fresh",
        "/zz-toolgate-fresh-1",
    ]);
    let principal = proptest::option::of((
        prop::sample::select(vec!["p", "q", "zz-toolgate-fresh", "zz-toolgate-fresh-1"]),
        prop::sample::subsequence(vec!["ops", "dev", "x"], 0..3),
    ))
    .prop_map(|caller| caller.map(|(id, groups)| Principal::new(id, groups)));
    prop_oneof![
        (cents, currency, principal.clone()).prop_map(|(cents, currency, principal)| {
            let mut arguments = json!({ "cents": cents });
            if let Some(currency) = currency {
                arguments["currency"] = json!(currency);
            }
            ("refund".to_owned(), arguments, principal)
        }),
        (path, principal).prop_map(|(path, principal)| (
            "read_file".to_owned(),
            json!({"path": path}),
            principal
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Whatever two random policies are, a "same" verdict holds for random calls, and every
    /// witness is decided differently when decided again.
    #[test]
    fn a_same_verdict_never_hides_a_difference(
        old in random_policy(),
        new in random_policy(),
        calls in prop::collection::vec(random_call(), 1..40),
    ) {
        let registry = tools();
        let (Ok(old), Ok(new)) = (
            RulePolicy::from_json(&old.to_string(), &registry),
            RulePolicy::from_json(&new.to_string(), &registry),
        ) else {
            return Ok(()); // a policy the loader refuses (a contradiction, a repeat): no policy
        };
        let (old_text, new_text) = (
            serde_json::to_string(old.config()).unwrap(),
            serde_json::to_string(new.config()).unwrap(),
        );
        let diffs = analysis::diff(
            &Analysed::policy(RulePolicy::from_json(&old_text, &registry).unwrap()),
            &Analysed::policy(RulePolicy::from_json(&new_text, &registry).unwrap()),
            &registry,
        );
        let runtime = ToolRuntime::new(tools());
        for (tool, arguments, principal) in calls {
            // Only calls valid against the schema: the controller decides no other.
            if runtime.prepare(ToolCall::new("c", tool.clone(), arguments.clone())).is_err() {
                continue;
            }
            let decide = |policy: &RulePolicy| {
                policy.decide_for(&tool, principal.as_ref(), &arguments).action
            };
            if matches!(verdict(&diffs, &tool), ToolDiff::Same { .. }) {
                prop_assert_eq!(decide(&old), decide(&new), "{} {} {:?}", tool, arguments, principal);
            }
        }
        for diff in &diffs {
            match diff {
                ToolDiff::Differs { tool, witnesses } => {
                    for witness in witnesses {
                        let decide = |policy: &RulePolicy| {
                            policy.decide_for(tool, witness.principal.as_ref(), &witness.arguments)
                        };
                        let (a, b) = (decide(&old), decide(&new));
                        prop_assert!(a.action != b.action || a.approvers != b.approvers);
                    }
                }
                ToolDiff::Unknown { tool, reason, .. } => {
                    prop_assert!(
                        reason.contains("read paths or text differently"),
                        "only exact classes on {}, yet unknown: {}", tool, reason
                    );
                }
                _ => {}
            }
        }
    }
}

mod diff;
mod examples;
mod explanations;
mod findings;
