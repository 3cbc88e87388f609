//! Replacing the registry (or the policy) never leaves a silently weaker policy
//! in force. A pair that does not fit is refused whole, the old pair stays, and a controller built
//! over a misfit denies every call until a fitting pair is loaded.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::rules::PolicyLoadError;
use toolgate::*;

const POLICY: &str = r#"{"paths": {"working_directory": "/work"}, "rules": [
  {"id": "ws", "tool": "read_file", "action": "allow", "reason": "workspace",
   "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}},
  {"id": "secrets", "tool": "read_file", "action": "deny", "reason": "secrets",
   "when": {"path_glob": {"pointer": "/path", "pattern": "/work/secrets/**"}}},
  {"id": "shell", "tool": "shell", "action": "ask", "reason": "commands need a person"}
]}"#;

fn read_file(schema: Value, runs: &Arc<AtomicUsize>) -> ToolDefinition {
    counted("read_file", schema, runs)
}

fn path_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}

fn shell(runs: &Arc<AtomicUsize>) -> ToolDefinition {
    counted(
        "shell",
        json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        runs,
    )
}

fn controller(runs: &Arc<AtomicUsize>) -> ToolController {
    let tools = registry([read_file(path_schema(), runs), shell(runs)]);
    let policy = RulePolicy::from_json(POLICY, &tools).expect("policy loads");
    ToolController::try_new(tools, policy).expect("policy fits")
}

fn secret_read(controller: &ToolController, arguments: Value) -> ToolResult {
    match controller.handle(ToolCall::new("c", "read_file", arguments)) {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(request) => panic!("unexpected ask: {request:?}"),
    }
}

/// Registries the policy above does not fit, and the word the mismatch must name.
fn misfits(runs: &Arc<AtomicUsize>) -> Vec<(&'static str, ToolRegistry, &'static str)> {
    let renamed =
        json!({"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]});
    let nested = json!({"type": "object", "properties": {"target": {"type": "object", "properties": {"path": {"type": "string"}}}}});
    vec![
        (
            "field renamed (path -> file)",
            registry([read_file(renamed, runs), shell(runs)]),
            "names no field",
        ),
        (
            "field moved under another object",
            registry([read_file(nested, runs), shell(runs)]),
            "names no field",
        ),
        (
            "tool removed",
            registry([shell(runs)]),
            "not in the registry",
        ),
        (
            "other tool removed",
            registry([read_file(path_schema(), runs)]),
            "not in the registry",
        ),
        ("everything removed", registry([]), "not in the registry"),
        (
            "schema with no properties at all",
            registry([read_file(json!({"type": "object"}), runs), shell(runs)]),
            "names no field",
        ),
    ]
}

#[test]
fn registry_replacement_that_the_policy_does_not_fit_is_refused_and_the_old_pair_stays() {
    let runs = Arc::default();
    let controller = controller(&runs);
    for (what, misfit, message) in misfits(&runs) {
        let error = controller.replace_registry(misfit).expect_err(what);
        assert!(
            error.problems.iter().any(|p| p.message.contains(message)),
            "{what}: {error}"
        );
        // The deny rule still holds, on the old schema, for every spelling.
        for spelling in ["/work/secrets/key", "secrets//key", "x/../secrets/key"] {
            let result = secret_read(&controller, json!({"path": spelling}));
            assert!(result.is_error, "{what}: {spelling} ran");
        }
        // And the renamed field is still unknown to the schema in force: the alias never reaches
        // a handler under an allow that no deny could see.
        let result = secret_read(&controller, json!({"file": "/work/secrets/key"}));
        assert!(result.is_error, "{what}: the new field name was accepted");
    }
    assert_eq!(run_count(&runs), 0);
    let ok = secret_read(&controller, json!({"path": "/work/a.txt"}));
    assert!(!ok.is_error, "{ok:?}");
}

#[test]
fn registry_replacement_that_fits_is_accepted() {
    let runs = Arc::default();
    let controller = controller(&runs);
    // More fields and another tool: every rule still means what it meant.
    let wider = json!({"type": "object", "properties": {"path": {"type": "string"}, "encoding": {"type": "string"}}, "required": ["path"]});
    controller
        .replace_registry(registry([
            read_file(wider, &runs),
            shell(&runs),
            counted("extra", json!({"type": "object"}), &runs),
        ]))
        .expect("fits");
    assert!(secret_read(&controller, json!({"path": "/work/secrets/k"})).is_error);
    assert!(!secret_read(&controller, json!({"path": "/work/a", "encoding": "utf-8"})).is_error);
    assert_eq!(controller.specs().len(), 3);
}

#[test]
fn a_field_whose_type_changes_fails_closed() {
    let runs = Arc::default();
    let controller = controller(&runs);
    // The field is still declared, so the policy loads; but no condition can judge a list as a
    // path, so the allow never applies and the deny always does — saying it cannot judge the
    // field rather than quoting the deny rule's reason about secrets.
    let listed = json!({"type": "object", "properties": {"path": {"type": "array", "items": {"type": "string"}}}});
    controller
        .replace_registry(registry([read_file(listed, &runs), shell(&runs)]))
        .expect("the fields still exist");
    for path in [json!(["/work/a"]), json!([]), json!(["/work/secrets/k"])] {
        let result = secret_read(&controller, json!({"path": path}));
        assert!(
            result.is_error && result.content.contains("cannot judge /path"),
            "{result:?}"
        );
    }
    assert_eq!(run_count(&runs), 0);
}

#[test]
fn tools_and_policy_change_together_through_replace() {
    let runs = Arc::default();
    let controller = controller(&runs);
    let renamed =
        json!({"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]});
    let tools = registry([read_file(renamed.clone(), &runs), shell(&runs)]);
    let policy =
        RulePolicy::from_json(&POLICY.replace("\"/path\"", "\"/file\""), &tools).expect("loads");
    // The policy for the new tools does not fit the old ones: refused on its own.
    let error = controller
        .replace_policy(
            RulePolicy::from_json(&POLICY.replace("\"/path\"", "\"/file\""), &tools)
                .expect("loads"),
        )
        .expect_err("the new policy does not fit the old tools");
    assert!(error.to_string().contains("names no field"), "{error}");
    controller
        .replace(tools, policy)
        .expect("they fit each other");
    assert!(secret_read(&controller, json!({"file": "secrets//key"})).is_error);
    assert!(!secret_read(&controller, json!({"file": "a.txt"})).is_error);
    // A mismatched pair is refused whole.
    let old_tools = registry([read_file(path_schema(), &runs), shell(&runs)]);
    let mismatch = controller.replace(
        old_tools,
        RulePolicy::from_json(
            &POLICY.replace("\"/path\"", "\"/file\""),
            &registry([read_file(renamed, &runs), shell(&runs)]),
        )
        .expect("loads"),
    );
    assert!(mismatch.is_err());
    assert!(!secret_read(&controller, json!({"file": "a.txt"})).is_error);
}

#[test]
fn a_policy_built_for_other_tools_is_refused_by_try_replace_policy_and_try_new() {
    let runs = Arc::default();
    let controller = controller(&runs);
    let old = registry([read_file(path_schema(), &runs), shell(&runs)]);
    let renamed = registry([
        read_file(
            json!({"type": "object", "properties": {"file": {"type": "string"}}}),
            &runs,
        ),
        shell(&runs),
    ]);
    let for_old = RulePolicy::from_json(POLICY, &old).expect("loads");
    let error = ToolController::try_new(renamed, for_old).expect_err("misfit");
    assert!(!error.problems.is_empty());
    // try_replace_policy builds against the registry in force, so a misfit there is a load error.
    let result = controller.try_replace_policy(|registry| {
        RulePolicy::from_json(&POLICY.replace("\"/path\"", "\"/file\""), registry)
    });
    assert!(matches!(result, Err(PolicyLoadError::Invalid { .. })));
    assert!(secret_read(&controller, json!({"path": "secrets/k"})).is_error);
}

#[test]
fn a_controller_over_a_misfit_denies_every_call_until_a_fitting_registry_arrives() {
    let runs = Arc::default();
    let old = registry([read_file(path_schema(), &runs), shell(&runs)]);
    let policy = RulePolicy::from_json(POLICY, &old).expect("loads");
    let renamed = json!({"type": "object", "properties": {"file": {"type": "string"}}});
    let controller =
        ToolController::new(registry([read_file(renamed, &runs), shell(&runs)]), policy);
    for arguments in [
        json!({"file": "/work/a"}),
        json!({"file": "/work/secrets/k"}),
        json!({}),
    ] {
        let result = secret_read(&controller, arguments);
        assert!(
            result.is_error && result.content.contains("does not fit"),
            "{result:?}"
        );
    }
    let asked = controller.handle(ToolCall::new("s", "shell", json!({"command": "ls"})));
    assert!(
        matches!(asked, Outcome::Completed(ref r) if r.is_error),
        "{asked:?}"
    );
    assert_eq!(run_count(&runs), 0);
    // Another misfit is refused; a fitting registry restores the policy.
    assert!(
        controller
            .replace_registry(registry([shell(&runs)]))
            .is_err()
    );
    controller
        .replace_registry(registry([read_file(path_schema(), &runs), shell(&runs)]))
        .expect("the policy fits these tools");
    assert!(!secret_read(&controller, json!({"path": "/work/a"})).is_error);
    assert!(secret_read(&controller, json!({"path": "/work/secrets/a"})).is_error);
}

#[test]
fn waiting_approvals_are_rechecked_against_the_pair_in_force_after_a_refused_replacement() {
    let runs = Arc::default();
    let controller = controller(&runs);
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("s", "shell", json!({"command": "ls"})))
    else {
        panic!("shell asks");
    };
    // The shell tool disappears from a new registry: refused, so the approval still runs on the
    // tools and policy in force.
    assert!(
        controller
            .replace_registry(registry([read_file(path_schema(), &runs)]))
            .is_err()
    );
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .expect("pending");
    assert!(!result.is_error, "{result:?}");
    assert_eq!(run_count(&runs), 1);
}

#[test]
fn a_rule_policy_shared_through_an_arc_still_refuses_tools_it_does_not_fit() {
    let runs = Arc::default();
    let old = registry([read_file(path_schema(), &runs), shell(&runs)]);
    let shared = Arc::new(RulePolicy::from_json(POLICY, &old).expect("loads"));
    let controller = ToolController::try_new(old, Arc::clone(&shared)).expect("fits");
    let renamed = json!({"type": "object", "properties": {"file": {"type": "string"}}});
    let error = controller
        .replace_registry(registry([read_file(renamed, &runs), shell(&runs)]))
        .expect_err("the shared policy is checked like the policy itself");
    assert!(error.to_string().contains("names no field"), "{error}");
}
