//! The name policy (`ToolPolicy`) and its per-registry table: a table decision equals
//! `decide_for` and the general path, with and without an audit sink, and so does its audit
//! trail; the async check is asked on default denies only; wrappers, layers, shadows and user
//! policies are always asked; an unfit policy denies until a fitting one is in force;
//! replacements racing `handle` never mix registries; two controllers on one thread keep their
//! own tables; a held call is decided again by the policy in force when it is answered.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use toolgate::policy::Layers;
use toolgate::policy::PolicyMismatch;
use toolgate::policy::Shadow;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::audit::{AuditEvent, MemoryAuditSink};
use toolgate::decision::RateSlot;
use toolgate::definition::BoxFuture;
use toolgate::*;

/// The parts of an audit event that do not depend on time or ids.
fn comparable(events: &[AuditEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{:?}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{}",
                e.kind,
                e.call_id,
                e.tool,
                e.action,
                e.reason,
                e.rule_id,
                e.policy_digest,
                e.is_error,
                // Salted afresh on each run: only its presence compares.
                e.argument_commitment.starts_with("salted-sha256:")
            )
        })
        .collect()
}

const NAMES: [&str; 7] = ["d", "allowed", "c", "asked", "a", "allowed2", "nul"];

fn name_policy() -> ToolPolicy {
    // Names the registry lacks, too: they must not shift the table.
    ToolPolicy::new(["allowed", "allowed2", "missing"], ["asked", "gone", "nul"]).unwrap()
}

/// Table decisions (with and without a sink) against the general path (the same ToolPolicy behind
/// a closure): same results, same audit trail, same as `decide_for`.
#[test]
fn policy_table_decides_as_decide_for_and_as_the_general_path() {
    let policy = name_policy();
    let general = {
        let policy = policy.clone();
        move |call: &PreparedToolCall| policy.decide_for(call.tool_name())
    };
    let runs_table = runs_by_name();
    let runs_general = runs_by_name();
    let sink_table = Arc::new(MemoryAuditSink::new());
    let sink_general = Arc::new(MemoryAuditSink::new());
    let table = ToolController::new(any_tools(&NAMES, &runs_table), policy.clone());
    let table_audited =
        ToolController::new(any_tools(&NAMES, &runs_table), Arc::new(policy.clone()))
            .with_audit_sink(Arc::clone(&sink_table));
    let general_audited = ToolController::new(any_tools(&NAMES, &runs_general), general)
        .with_audit_sink(Arc::clone(&sink_general));
    for round in 0..3 {
        for name in NAMES.iter().chain(&["missing", "gone", "ALLOWED"]) {
            let call = || ToolCall::new(format!("c{round}{name}"), *name, json!({"x": round}));
            let a = outcome_summary(&table.handle(call()));
            let b = outcome_summary(&table_audited.handle(call()));
            let c = outcome_summary(&general_audited.handle(call()));
            assert_eq!(a, b, "{name:?}");
            assert_eq!(b, c, "{name:?}");
            let expected = policy.decide_for(name);
            let kind = match expected.action {
                _ if !NAMES.contains(name) => "completed",
                PolicyAction::Allow | PolicyAction::Deny => "completed",
                _ => "pending",
            };
            assert_eq!(a.0, kind, "{name:?}");
            if NAMES.contains(name) && expected.action == PolicyAction::Deny {
                assert!(a.1.contains(expected.reason.as_str()), "{name:?}: {}", a.1);
            }
        }
    }
    assert_eq!(
        comparable(&sink_table.events()),
        comparable(&sink_general.events())
    );
    // Each allowed tool ran in both the table controllers, nothing else ran.
    for name in NAMES {
        let expected = if policy.decide_for(name).action == PolicyAction::Allow {
            6
        } else {
            0
        };
        assert_eq!(runs_of(&runs_table, name), expected, "{name:?}");
        assert_eq!(runs_of(&runs_general, name) * 2, expected, "{name:?}");
    }
}

/// The async check is asked on fallback decisions only — a ToolPolicy's default deny is one —
/// on the table path exactly as on the general path, with and without a sink.
#[test]
fn policy_table_asks_the_async_check_on_default_deny_only() {
    for audited in [false, true] {
        for table in [true, false] {
            let asked = Arc::new(Mutex::new(Vec::<String>::new()));
            let check = {
                let asked = Arc::clone(&asked);
                move |call: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
                    asked.lock().unwrap().push(call.tool_name().to_owned());
                    Box::pin(async { PolicyDecision::allow(Reason::from_static("check allows")) })
                }
            };
            let runs = runs_by_name();
            let policy = name_policy();
            let controller = if table {
                ToolController::new(any_tools(&NAMES, &runs), policy)
            } else {
                let general = move |call: &PreparedToolCall| policy.decide_for(call.tool_name());
                ToolController::new(any_tools(&NAMES, &runs), general)
            };
            let mut controller =
                controller.with_async_check(check, std::time::Duration::from_secs(5));
            if audited {
                controller = controller.with_audit_sink(MemoryAuditSink::new());
            }
            for name in NAMES {
                let _ = controller.handle(ToolCall::new("c", name, json!({})));
            }
            let mut asked = asked.lock().unwrap().clone();
            asked.sort();
            assert_eq!(asked, ["a", "c", "d"], "audited {audited}, table {table}");
            // The check allowed the default-denied tools: they ran.
            assert_eq!(runs_of(&runs, "d"), 1);
            assert_eq!(runs_of(&runs, "asked"), 0);
        }
    }
}

/// A user policy that holds a ToolPolicy but decides otherwise.
struct Overrides {
    inner: ToolPolicy,
    slots: bool,
}

impl Policy for Overrides {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        match self.inner.decide_for(call.tool_name()).action {
            PolicyAction::Allow if !self.slots => {
                PolicyDecision::deny(Reason::from_static("the wrapper denies what it allows"))
            }
            _ => self.inner.decide_for(call.tool_name()),
        }
    }

    fn rate_slots(&self, _: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
        if self.slots {
            let reason = Reason::from_static("one call per session");
            Ok(vec![RateSlot::new(
                "one",
                None,
                1,
                PolicyAction::Deny,
                reason,
            )])
        } else {
            Ok(Vec::new())
        }
    }
}

/// Every policy other than a ToolPolicy (or an Arc of one) is asked: wrappers, layers, shadows,
/// closures, trait objects — the table never answers for them.
#[test]
fn policy_table_never_answers_for_wrappers_layers_shadows_or_user_types() {
    let allow_a = || ToolPolicy::new(["a"], ["b"]).unwrap();
    let deny_a = |call: &PreparedToolCall| {
        if call.tool_name() == "a" {
            PolicyDecision::deny(Reason::from_static("layer denies a"))
        } else {
            PolicyDecision::allow(Reason::from_static("layer allows"))
        }
    };
    let candidates: Vec<(&str, Arc<dyn Policy>)> = vec![
        (
            "wrapper",
            Arc::new(Overrides {
                inner: allow_a(),
                slots: false,
            }),
        ),
        (
            "dyn wrapper",
            Arc::new(Arc::new(Overrides {
                inner: allow_a(),
                slots: false,
            }) as Arc<dyn Policy>),
        ),
        (
            "layers",
            Arc::new(
                Layers::new()
                    .layer("tools", allow_a())
                    .unwrap()
                    .layer("deny", deny_a)
                    .unwrap(),
            ),
        ),
        (
            "shadow",
            Arc::new(Shadow::new(
                Overrides {
                    inner: allow_a(),
                    slots: false,
                },
                allow_a(),
            )),
        ),
        ("closure", Arc::new(deny_a)),
    ];
    for (label, policy) in candidates {
        for audited in [false, true] {
            let runs = runs_by_name();
            let mut controller =
                ToolController::new(any_tools(&["b", "a"], &runs), Arc::clone(&policy));
            if audited {
                controller = controller.with_audit_sink(MemoryAuditSink::new());
            }
            let outcome = outcome_summary(&controller.handle(ToolCall::new("c", "a", json!({}))));
            assert!(outcome.2, "{label}: {outcome:?}");
            assert_eq!(runs_of(&runs, "a"), 0, "{label}");
        }
    }
    // A wrapper that decides as its ToolPolicy but names a rate limit is counted.
    for audited in [false, true] {
        let runs = runs_by_name();
        let mut controller = ToolController::new(
            any_tools(&["b", "a"], &runs),
            Overrides {
                inner: allow_a(),
                slots: true,
            },
        );
        if audited {
            controller = controller.with_audit_sink(MemoryAuditSink::new());
        }
        let first = outcome_summary(&controller.handle(ToolCall::new("c", "a", json!({}))));
        let second = outcome_summary(&controller.handle(ToolCall::new("c", "a", json!({}))));
        assert!(!first.2);
        assert!(second.2 && second.1.contains("rate limit"), "{second:?}");
        assert_eq!(runs_of(&runs, "a"), 1);
    }
}

/// A policy that does not fit the registry is not put in force: every call is denied, a
/// ToolPolicy replacement later gets a table that fits.
#[test]
fn policy_table_unfit_policy_denies_then_a_fitting_one_takes_over() {
    let runs = runs_by_name();
    let registry_with = || {
        registry([ToolDefinition::new(
            ToolSpec::new(
                "read",
                "",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            |_: &Value| -> Result<String, ToolError> { Ok("ran".into()) },
        )
        .unwrap()])
    };
    let rules = RulePolicy::from_json(
        r#"{"rules": [{"id": "r", "tool": "read", "action": "allow", "reason": "ok",
            "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}]}"#,
        &registry_with(),
    )
    .unwrap();
    let controller = ToolController::new(any_tools(&["read", "other"], &runs), rules);
    for name in ["read", "other"] {
        let outcome = outcome_summary(&controller.handle(ToolCall::new(
            "c",
            name,
            json!({"path": "/work/a"}),
        )));
        assert!(outcome.2, "{name}: {outcome:?}");
    }
    controller
        .replace_policy(ToolPolicy::new(["other"], [""; 0]).unwrap())
        .unwrap();
    let other = outcome_summary(&controller.handle(ToolCall::new("c", "other", json!({}))));
    let read = outcome_summary(&controller.handle(ToolCall::new("c", "read", json!({}))));
    assert!(!other.2 && read.2, "{other:?} {read:?}");
    assert_eq!(runs_of(&runs, "other"), 1);
    assert_eq!(runs_of(&runs, "read"), 0);
}

/// Registries with the same tools in other positions, swapped in while other threads call: a
/// call prepared under one registry is never decided by another registry's table (a denied tool
/// at an allowed tool's position would run).
#[test]
fn policy_table_replacements_racing_handle_never_mix_registries() {
    let runs = runs_by_name();
    let orders: [&[&str]; 4] = [&["a", "b"], &["b", "a"], &["b", "x", "a"], &["a"]];
    let registries = || orders.map(|names| any_tools(names, &runs));
    let controller = Arc::new(ToolController::new(
        any_tools(orders[0], &runs),
        ToolPolicy::new(["a"], [""; 0]).unwrap(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let allowed_ok = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..2)
        .map(|thread| {
            let controller = Arc::clone(&controller);
            let stop = Arc::clone(&stop);
            let allowed_ok = Arc::clone(&allowed_ok);
            std::thread::spawn(move || {
                let mut calls = 0;
                while !stop.load(Ordering::Relaxed) || calls < 200 {
                    for name in ["b", "x", "a"] {
                        let outcome = controller.handle(ToolCall::new("c", name, json!({})));
                        if name == "a" && !outcome_summary(&outcome).2 {
                            allowed_ok.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    calls += 1;
                    if thread == 1 && calls % 50 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for round in 0..300 {
        let mut next = registries();
        let which = round % orders.len();
        let registry = std::mem::replace(&mut next[which], ToolRegistry::new([]).unwrap());
        match round % 4 {
            0 => controller.replace_registry(registry).unwrap(),
            1 => controller
                .replace(registry, ToolPolicy::new(["a"], [""; 0]).unwrap())
                .unwrap(),
            2 => {
                controller.replace_registry(registry).unwrap();
                controller
                    .replace_policy(Arc::new(ToolPolicy::new(["a"], [""; 0]).unwrap()))
                    .unwrap();
            }
            _ => {
                controller.replace_registry(registry).unwrap();
                controller
                    .try_replace_policy(|_| {
                        Ok::<_, PolicyMismatch>(ToolPolicy::new(["a"], [""; 0]).unwrap())
                    })
                    .unwrap();
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.join().unwrap();
    }
    assert_eq!(runs_of(&runs, "b"), 0);
    assert_eq!(runs_of(&runs, "x"), 0);
    assert_eq!(runs_of(&runs, "a"), allowed_ok.load(Ordering::Relaxed));
    assert!(runs_of(&runs, "a") > 0);
}

/// Two controllers on one thread with the same tools in other positions: each decides from its
/// own table, also when controllers come and go (their thread caches are keyed by controller).
#[test]
fn policy_table_two_controllers_on_one_thread_keep_their_own_tables() {
    let runs = runs_by_name();
    for _ in 0..20 {
        let first = ToolController::new(
            any_tools(&["a", "b"], &runs),
            ToolPolicy::new(["a"], [""; 0]).unwrap(),
        );
        let second = ToolController::new(
            any_tools(&["b", "a"], &runs),
            ToolPolicy::new(["b"], [""; 0]).unwrap(),
        );
        for _ in 0..3 {
            assert!(outcome_summary(&first.handle(ToolCall::new("c", "b", json!({})))).2);
            assert!(outcome_summary(&second.handle(ToolCall::new("c", "a", json!({})))).2);
            assert!(!outcome_summary(&first.handle(ToolCall::new("c", "a", json!({})))).2);
            assert!(!outcome_summary(&second.handle(ToolCall::new("c", "b", json!({})))).2);
        }
    }
    assert_eq!(runs_of(&runs, "a"), 60);
    assert_eq!(runs_of(&runs, "b"), 60);
}

/// A call held under the table is answered under the policy in force then (the general path).
#[test]
fn policy_table_answers_are_decided_again_by_the_policy_in_force() {
    let runs = runs_by_name();
    let controller = ToolController::new(
        any_tools(&["a", "b"], &runs),
        ToolPolicy::new(["a"], ["b"]).unwrap(),
    );
    let Outcome::PendingApproval(first) = controller.handle(ToolCall::new("c1", "b", json!({})))
    else {
        panic!("b is asked");
    };
    let Outcome::PendingApproval(second) = controller.handle(ToolCall::new("c2", "b", json!({})))
    else {
        panic!("b is asked");
    };
    assert!(
        !controller
            .resolve(ApprovalResponse::approve(first.approval_id))
            .unwrap()
            .is_error
    );
    controller
        .replace_policy(ToolPolicy::new(["a"], [""; 0]).unwrap())
        .unwrap();
    assert!(
        controller
            .resolve(ApprovalResponse::approve(second.approval_id))
            .unwrap()
            .is_error
    );
    assert_eq!(runs_of(&runs, "b"), 1);
}
