//! Pairs of policies the analysis called "same" though a controller decides some call, or some
//! session, differently (an independent attack, session 62): each is now told apart or left
//! "unknown", and each pair is shown to decide differently, so the verdict is not vacuous.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::*;
use serde_json::json;
use toolgate::rules::analysis::{self, Analysed, ToolDiff};
use toolgate::*;

fn tools(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    let schema = json!({"type": "object", "properties": {"env": {"type": "string"}}});
    registry([
        counted("deploy", schema.clone(), runs),
        counted("x", schema.clone(), runs),
        counted("y", schema, runs),
    ])
}

fn load(text: &str) -> RulePolicy {
    RulePolicy::from_json(text, &tools(&Arc::default())).unwrap_or_else(|e| panic!("{e}"))
}

fn verdict(old: &str, new: &str, tool: &str) -> ToolDiff {
    analysis::diff(
        &Analysed::policy(load(old)),
        &Analysed::policy(load(new)),
        &tools(&Arc::default()),
    )
    .into_iter()
    .find(|diff| diff.tool() == tool)
    .unwrap()
}

/// What a controller made of `outcome`, and how many tools ran so far.
fn said(outcome: &Outcome, runs: &Arc<AtomicUsize>) -> String {
    let what = match outcome {
        Outcome::Completed(result) if !result.is_error => "ran".to_owned(),
        Outcome::Completed(result) => format!("refused: {}", result.content),
        Outcome::PendingApproval(_) => "asked".to_owned(),
    };
    format!("{what} [{} runs]", run_count(runs))
}

fn controller(text: &str) -> (ToolController, Arc<AtomicUsize>) {
    let runs = Arc::default();
    let registry = tools(&runs);
    let policy = RulePolicy::from_json(text, &registry).unwrap();
    (ToolController::new(registry, policy), runs)
}

const ASK_ALICE: &str = r#"{"rules": [{"id": "deploy-asks", "tool": "deploy", "action": "ask",
    "reason": "confirm", "approvers": {"ids": ["alice"]}}]}"#;

#[test]
fn approvers_letting_the_asker_answer_out_of_band_are_not_the_same() {
    let own = ASK_ALICE.replace(r#"["alice"]}"#, r#"["alice"], "allow_self": true}"#);
    assert!(
        matches!(verdict(ASK_ALICE, &own, "deploy"), ToolDiff::Differs { .. }),
        "{:?}",
        verdict(ASK_ALICE, &own, "deploy")
    );
    // Alice asks, then answers her own call on the approval page.
    let answered = |text: &str| {
        let (controller, runs) = controller(text);
        let alice = Principal::new("alice", Vec::<String>::new());
        let call = ToolCall::new("c1", "deploy", json!({})).with_principal(alice.clone());
        let Outcome::PendingApproval(request) = controller.handle(call) else {
            panic!("asked")
        };
        let answer = ApprovalResponse::approve(request.approval_id)
            .by_principal(alice)
            .out_of_band();
        let refused = controller.resolve(answer).is_err();
        (refused, run_count(&runs))
    };
    assert_eq!(answered(ASK_ALICE), (true, 0));
    assert_eq!(answered(&own), (false, 1));
}

const EXPLICIT_DENY: &str =
    r#"{"rules": [{"id": "no-deploy", "tool": "deploy", "action": "deny", "reason": "never"}]}"#;
const DEFAULT_DENY: &str = r#"{"rules": []}"#;
const BASE: &str =
    r#"{"rules": [{"id": "ok", "tool": "deploy", "action": "allow", "reason": "ok"}]}"#;

#[test]
fn a_deny_by_a_rule_and_the_default_deny_differ_in_the_stack_compared_whole() {
    // Alone they decide alike; above a layer that allows, the default is no opinion.
    assert!(matches!(
        verdict(EXPLICIT_DENY, DEFAULT_DENY, "deploy"),
        ToolDiff::Same { .. }
    ));
    let stack =
        |upper: &str| Analysed::layers([("team", load(upper)), ("base", load(BASE))]).unwrap();
    let diffs = analysis::diff(
        &stack(EXPLICIT_DENY),
        &stack(DEFAULT_DENY),
        &tools(&Arc::default()),
    );
    assert!(
        matches!(diffs[0], ToolDiff::Differs { .. }),
        "{:?}",
        diffs[0]
    );
    let run = |upper: &str| {
        let runs = Arc::default();
        let registry = tools(&runs);
        let stack = policy::Layers::new()
            .layer("team", RulePolicy::from_json(upper, &registry).unwrap())
            .unwrap()
            .layer("base", RulePolicy::from_json(BASE, &registry).unwrap())
            .unwrap();
        let controller = ToolController::new(registry, stack);
        said(
            &controller.handle(ToolCall::new("c1", "deploy", json!({}))),
            &runs,
        )
    };
    assert_ne!(run(EXPLICIT_DENY), run(DEFAULT_DENY));
}

fn after_x(x_action: &str) -> String {
    format!(
        r#"{{"rules": [
            {{"id": "x", "tool": "x", "action": "{x_action}", "reason": "x"}},
            {{"id": "y", "tool": "y", "action": "allow", "reason": "y"}}],
          "flows": [{{"id": "y-after-x", "tool": "y", "action": "deny", "reason": "not after x",
            "after": {{"tool": "x", "within": "session"}}}}]}}"#
    )
}

#[test]
fn a_tool_whose_flow_rule_reads_a_tool_decided_otherwise_is_not_the_same() {
    let (old, new) = (after_x("allow"), after_x("deny"));
    let y = verdict(&old, &new, "y");
    assert!(
        matches!(&y, ToolDiff::Unknown { reason, .. } if reason.contains("\"x\" is not decided alike")),
        "{y:?}"
    );
    let x_then_y = |text: &str| {
        let (controller, runs) = controller(text);
        let _x = controller.handle(ToolCall::new("c1", "x", json!({})));
        said(
            &controller.handle(ToolCall::new("c2", "y", json!({}))),
            &runs,
        )
    };
    assert_ne!(x_then_y(&old), x_then_y(&new));
    // Without any rule reading what ran before, the other tools stay "same".
    let plain = |x: &str| {
        format!(
            r#"{{"rules": [{{"id": "x", "tool": "x", "action": "{x}", "reason": "x"}},
                {{"id": "y", "tool": "y", "action": "allow", "reason": "y"}}]}}"#
        )
    };
    assert!(matches!(
        verdict(&plain("allow"), &plain("deny"), "y"),
        ToolDiff::Same { .. }
    ));
}

#[cfg(feature = "unicode")]
mod normalized {
    use super::*;

    const EQUALS: &str = r#"{"text": {"normalize": true}, "rules": [
        {"id": "one-dir", "tool": "deploy", "action": "allow", "reason": "the one directory",
         "when": {"equals": {"pointer": "/env", "value": "/srv/a"}}}]}"#;
    const WITHIN: &str = r#"{"text": {"normalize": true}, "rules": [
        {"id": "outside", "tool": "deploy", "action": "deny", "reason": "outside /srv/a",
         "when": {"not": {"path_within": {"pointer": "/env", "roots": ["/srv/a"]}}}}]}"#;

    #[test]
    fn text_compared_normalized_in_one_layer_and_read_as_a_path_in_another_is_unknown() {
        let layers = |names: &[&str]| {
            Analysed::layers(names.iter().map(|name| match *name {
                "path" => ("path", load(WITHIN)),
                _ => ("eq", load(EQUALS)),
            }))
            .unwrap()
        };
        let diffs = analysis::diff(
            &layers(&["eq"]),
            &layers(&["path", "eq"]),
            &tools(&Arc::default()),
        );
        assert!(
            matches!(&diffs[0], ToolDiff::Unknown { reason, .. } if reason.contains("also judged as a path")),
            "{:?}",
            diffs[0]
        );
        let run = |names: &[&str]| {
            let runs = Arc::default();
            let registry = tools(&runs);
            let mut stack = policy::Layers::new();
            for name in names {
                let text = if *name == "path" { WITHIN } else { EQUALS };
                stack = stack
                    .layer(*name, RulePolicy::from_json(text, &registry).unwrap())
                    .unwrap();
            }
            let controller = ToolController::new(registry, stack);
            let call = ToolCall::new("c1", "deploy", json!({"env": "/SRV/A"}));
            said(&controller.handle(call), &runs)
        };
        assert_ne!(run(&["eq"]), run(&["path", "eq"]));
    }

    #[test]
    fn a_literal_the_schema_refuses_in_one_spelling_is_no_empty_class_when_text_is_normalized() {
        let upper = |runs: &Arc<AtomicUsize>| {
            let schema = json!({"type": "object", "properties": {
                "env": {"type": "string", "pattern": "^[A-Z]+$"}}, "required": ["env"]});
            registry([counted("deploy", schema, runs)])
        };
        let deny_prod = r#"{"text": {"normalize": true}, "rules": [
            {"id": "all", "tool": "deploy", "action": "allow", "reason": "r"},
            {"id": "not-prod", "tool": "deploy", "action": "deny", "reason": "not prod",
             "when": {"equals": {"pointer": "/env", "value": "prod"}}}]}"#;
        let allow_all = r#"{"text": {"normalize": true}, "rules": [
            {"id": "all", "tool": "deploy", "action": "allow", "reason": "r"}]}"#;
        let registry = upper(&Arc::default());
        let loaded = |text: &str| Analysed::policy(RulePolicy::from_json(text, &registry).unwrap());
        let diffs = analysis::diff(&loaded(deny_prod), &loaded(allow_all), &registry);
        assert!(!matches!(diffs[0], ToolDiff::Same { .. }), "{:?}", diffs[0]);
        let run = |text: &str| {
            let runs = Arc::default();
            let registry = upper(&runs);
            let policy = RulePolicy::from_json(text, &registry).unwrap();
            let controller = ToolController::new(registry, policy);
            said(
                &controller.handle(ToolCall::new("c1", "deploy", json!({"env": "PROD"}))),
                &runs,
            )
        };
        assert_ne!(run(deny_prod), run(allow_all));
        // Compared as sent, `prod` is a value no valid call holds: the two are the same.
        let raw = |text: &str| loaded(&text.replace(r#""text": {"normalize": true}, "#, ""));
        let diffs = analysis::diff(&raw(deny_prod), &raw(allow_all), &registry);
        assert!(matches!(diffs[0], ToolDiff::Same { .. }), "{:?}", diffs[0]);
    }
}
