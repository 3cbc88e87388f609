//! Who answers a call flow rules ask about, where the rules' names can meet or no rule decides:
//! one id in two layers, a layer `a/b` beside `b` nested in `a`, a policy's own two slots of one
//! id, an async check deciding (attacks on the fixes of `flow_askers`, 7 December 2026).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolgate::approvals::ApprovalError;
use toolgate::definition::BoxFuture;
use toolgate::limits::MemoryRateCounters;
use toolgate::policy::Layers;
use toolgate::*;

use super::flow_askers::{RULES, alice, flow, held, policy, registry};

fn layered(org: &str, project: &str, runs: &Arc<AtomicUsize>) -> ToolController {
    let registry = registry(runs);
    let layers = Layers::new()
        .layer("org", policy(org, &registry))
        .unwrap()
        .layer("project", policy(project, &registry))
        .unwrap();
    ToolController::try_new(registry, layers)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default())
}

/// Two layers each hold a flow rule of one id (ids are unique only within a policy): each asks,
/// each names its approvers, and both must agree (a second attack: the second layer's were
/// dropped, as the first's id already asked).
#[test]
fn same_flow_id_in_two_layers_both_approvers_bind() {
    for (org, project) in [
        (
            flow("after-secret", r#"{"groups": ["security"]}"#),
            flow("after-secret", r#"{"ids": ["olga"]}"#),
        ),
        (
            flow("after-secret", r#"{"ids": ["olga"]}"#),
            flow("after-secret", r#"{"groups": ["security"]}"#),
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = layered(
            &format!(r#"{{{RULES}, "flows": [{org}]}}"#),
            &format!(r#"{{{RULES}, "flows": [{project}]}}"#),
            &runs,
        );
        let request = held(&controller);
        let before = runs.load(Ordering::SeqCst);
        // Sam is in security but is not olga; olga is not in security.
        for who in [
            Principal::new("sam", ["security"]),
            Principal::new("olga", ["ops"]),
        ] {
            let answer = controller
                .resolve(ApprovalResponse::approve(request.approval_id).by_principal(who.clone()));
            assert_eq!(
                runs.load(Ordering::SeqCst),
                before,
                "org {org} / project {project}: {who:?} alone approved a call both layers' flow rules asked about: {answer:?}; held approvers {:?}",
                request.approvers
            );
        }
    }
}

/// One id in two layers, one naming `allow_self` and one nobody: the asker does not answer her
/// own call on the page.
#[test]
fn same_flow_id_in_two_layers_unnamed_bars_the_asker() {
    for (org, project) in [
        (
            flow("after-secret", r#"{"allow_self": true}"#),
            flow("after-secret", ""),
        ),
        (
            flow("after-secret", ""),
            flow("after-secret", r#"{"allow_self": true}"#),
        ),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let controller = layered(
            &format!(r#"{{{RULES}, "flows": [{org}]}}"#),
            &format!(r#"{{{RULES}, "flows": [{project}]}}"#),
            &runs,
        );
        let request = held(&controller);
        let before = runs.load(Ordering::SeqCst);
        let answer = controller.resolve(
            ApprovalResponse::approve(request.approval_id)
                .by_principal(alice())
                .out_of_band(),
        );
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "org {org} / project {project}: alice approved her own call on the page: {answer:?}; approvers {:?}",
            request.approvers
        );
    }
}

fn allowing_check() -> impl Fn(&PreparedToolCall) -> BoxFuture<'static, PolicyDecision> {
    |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
        Box::pin(async {
            PolicyDecision::allow(Reason::from_static("the classifier found nothing"))
        })
    }
}

const ONLY_READ: &str = r#""rules": [
    {"id": "r", "tool": "read_secret", "action": "allow", "reason": "ok"}]"#;

/// The async check decides `deploy` (no rule does) and a flow rule asks: a reload naming other
/// approvers refuses a former one before the take, and a reload withdrawing `allow_self` keeps
/// the asker off the page (a second attack: the rules' fallback denial ended the check before
/// the flow rules were asked).
#[test]
fn an_async_check_deciding_leaves_a_reloaded_flow_rules_approvers_checked() {
    // (approvers before the reload, after it, who answers, on the page)
    let cases = [
        (
            r#"{"ids": ["carol"]}"#,
            r#"{"ids": ["dave"]}"#,
            Principal::new("carol", ["ops"]),
            false,
        ),
        (
            r#"{"ids": ["alice", "bob"], "allow_self": true}"#,
            r#"{"ids": ["alice", "bob"]}"#,
            alice(),
            true,
        ),
    ];
    for (before_reload, after_reload, who, page) in cases {
        let runs = Arc::new(AtomicUsize::new(0));
        let version = |approvers: &str| {
            policy(
                &format!(r#"{{{ONLY_READ}, "flows": [{}]}}"#, flow("f", approvers)),
                &registry(&runs),
            )
        };
        let controller = ToolController::try_new(registry(&runs), version(before_reload))
            .unwrap()
            .with_rate_counters(MemoryRateCounters::default())
            .with_async_check(allowing_check(), Duration::from_secs(5));
        let request = held(&controller);
        controller.replace_policy(version(after_reload)).unwrap();
        let before = runs.load(Ordering::SeqCst);
        let mut answer = ApprovalResponse::approve(request.approval_id).by_principal(who);
        if page {
            answer = answer.out_of_band();
        }
        let answer = controller.resolve(answer);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "{after_reload}: {answer:?}"
        );
        assert!(
            matches!(answer, Err(ApprovalError::ApproverRefused { .. })),
            "{after_reload}: refused before the take: {answer:?}"
        );
        assert_eq!(
            controller.pending().len(),
            1,
            "{after_reload}: still waiting"
        );
    }
}

fn check_both_bind(controller: &ToolController, runs: &Arc<AtomicUsize>, label: &str) {
    let request = held(controller);
    let before = runs.load(Ordering::SeqCst);
    // Sam is in security but is not olga; olga is not in security.
    for who in [
        Principal::new("sam", ["security"]),
        Principal::new("olga", ["ops"]),
    ] {
        let answer = controller
            .resolve(ApprovalResponse::approve(request.approval_id).by_principal(who.clone()));
        assert_eq!(
            runs.load(Ordering::SeqCst),
            before,
            "{label}: {who:?} alone approved a call both rules asked about: {answer:?}; held approvers {:?}",
            request.approvers
        );
    }
}

/// Layer names are joined with `/` when stacks nest: a layer named `a/b` and a layer `b` nested in
/// a layer `a` are both `a/b`, and each holds a flow rule of one id: both bind (a third attack:
/// the second was taken for the first, its approvers dropped).
#[test]
fn nested_layer_names_that_spell_alike_keep_both_approvers() {
    for swap in [false, true] {
        let runs = Arc::new(AtomicUsize::new(0));
        let registry = registry(&runs);
        let (first, second) = if swap {
            (r#"{"ids": ["olga"]}"#, r#"{"groups": ["security"]}"#)
        } else {
            (r#"{"groups": ["security"]}"#, r#"{"ids": ["olga"]}"#)
        };
        let flat = policy(
            &format!(r#"{{{RULES}, "flows": [{}]}}"#, flow("f", first)),
            &registry,
        );
        let inner = Layers::new()
            .layer(
                "b",
                policy(
                    &format!(r#"{{{RULES}, "flows": [{}]}}"#, flow("f", second)),
                    &registry,
                ),
            )
            .unwrap();
        let layers = Layers::new()
            .layer("a/b", flat)
            .unwrap()
            .layer("a", inner)
            .unwrap();
        let controller = ToolController::try_new(registry, layers)
            .unwrap()
            .with_rate_counters(MemoryRateCounters::default());
        check_both_bind(&controller, &runs, &format!("nested layers swap={swap}"));
    }
}

/// A custom policy naming two `ask` slots of one limit id (one per bucket: a per-tenant cap and
/// a global cap, say), each with its own approvers. Both full: both approvers must bind.
struct TwoBuckets;

impl Policy for TwoBuckets {
    fn decide(&self, _: &PreparedToolCall) -> PolicyDecision {
        PolicyDecision::allow(Reason::new("ok").unwrap())
    }
    fn rate_slots(
        &self,
        call: &PreparedToolCall,
    ) -> Result<Vec<toolgate::decision::RateSlot>, PolicyDecision> {
        if call.call().tool_name != "deploy" {
            return Ok(Vec::new());
        }
        let slot = |bucket: &str, approvers: toolgate::decision::Approvers| {
            let mut slot = toolgate::decision::RateSlot::new(
                "deploys",
                None,
                1,
                PolicyAction::Ask,
                Reason::new("more deploys need a person").unwrap(),
            );
            slot.bucket = Arc::from(bucket);
            slot.approvers = Some(Arc::new(approvers));
            slot
        };
        Ok(vec![
            slot(
                "deploys/global",
                toolgate::decision::Approvers::groups(["security"]),
            ),
            slot(
                "deploys/tenant",
                toolgate::decision::Approvers::ids(["olga"]),
            ),
        ])
    }
}

#[test]
fn a_custom_policys_two_ask_slots_of_one_id_both_bind() {
    let runs = Arc::new(AtomicUsize::new(0));
    let controller = ToolController::try_new(registry(&runs), TwoBuckets)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default());
    // The first deploy fills both caps; the second is held (read_secret first for `held`).
    let first = controller
        .handle(ToolCall::new("c0", "deploy", json!({"env": "prod"})).with_principal(alice()));
    assert!(
        matches!(first, Outcome::Completed(ref r) if !r.is_error),
        "{first:?}"
    );
    check_both_bind(&controller, &runs, "custom policy, two buckets of one id");
}
