//! Why a call was decided as it was, and the smallest change that would have been allowed.

use serde::Serialize;
use serde_json::Value;

use super::{Analysed, Space, prepare};
use crate::contract::{Principal, ToolCall};
use crate::decision::{PolicyAction, PolicyDecision, Refuses, SlotKind};
use crate::registry::ToolRegistry;
use crate::rules::PolicyConfig;
use crate::runtime::PreparedToolCall;

/// A decision explained for a person: what took it, and what would have been allowed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallExplanation {
    /// The decision, as the controller would take it.
    pub decision: PolicyDecision,
    /// What took it: `denied by rule "x" of layer "y"`, or `denied: no rule allows this call
    /// (default deny)` when nothing applied — two different situations to fix.
    pub summary: String,
    /// For a call not allowed: one argument (or the caller) changed to what the policy would
    /// allow, e.g. `allowed if /path were under /srv/data`, in the policy's own terms; `None`
    /// when no single change is allowed (or the call is allowed).
    pub allowed_if: Option<String>,
    /// What the session still judges before the call runs — each flow rule, provenance
    /// condition and limit covering it, named with its layer and what it can do — which no
    /// offline answer can decide: the decision above is the rules' alone. When a provenance
    /// condition holds the call in a session, its reason names the earlier call (its tool and
    /// call id) whose result last carried the value, never the value.
    pub in_session: Vec<String>,
}

/// Explains how `policy` decides `call`. The text names rules, layers, pointers and the policy's
/// own roots and values — never a value of the call's arguments.
///
/// # Errors
///
/// The call's rejection (an unknown tool, arguments that do not fit the schema), as the model
/// would read it: the policy never decides such a call.
pub fn explain(
    policy: &Analysed,
    registry: &ToolRegistry,
    call: ToolCall,
) -> Result<CallExplanation, String> {
    let prepared = crate::runtime::prepare_in(registry, call).map_err(|r| r.to_string())?;
    let decision = policy.decide(&prepared);
    let summary = summary(&decision);
    let in_session = in_session(policy, &prepared, decision.action);
    if decision.action == PolicyAction::Allow {
        return Ok(CallExplanation {
            decision,
            summary,
            allowed_if: None,
            in_session,
        });
    }
    let configs: Vec<&PolicyConfig> = policy.configs().collect();
    let tool = prepared.tool_name().to_owned();
    let fresh = super::fresh_for(&configs);
    let allowed_if = Space::new(&configs, registry, &tool, &fresh)
        .ok()
        .and_then(|space| allowed_if(policy, registry, &space, &prepared.call().clone()));
    Ok(CallExplanation {
        decision,
        summary,
        allowed_if,
        in_session,
    })
}

/// The flow rules, provenance conditions and limits the session judges `call` by, once the
/// rules decided `action` (a denied call is judged by none); each once, in the order checked.
fn in_session(policy: &Analysed, call: &PreparedToolCall, action: PolicyAction) -> Vec<String> {
    if action == PolicyAction::Deny {
        return Vec::new();
    }
    let slots = match policy.rate_slots(call) {
        Ok(slots) => slots,
        Err(refused) => return vec![format!("the call cannot be counted: {}", refused.reason)],
    };
    let mut out: Vec<String> = Vec::new();
    for slot in slots.iter().filter(|slot| slot.refuses != Refuses::Never) {
        let layer = slot
            .layer
            .as_deref()
            .map(|layer| format!(" of layer {layer:?}"))
            .unwrap_or_default();
        let does = match slot.over {
            PolicyAction::Deny => "denies",
            PolicyAction::Ask => "holds for a person",
            PolicyAction::Allow => "allows",
        };
        let line = match slot.kind {
            SlotKind::Provenance => format!(
                "flow rule {:?}{layer} {does} the call by where a value of it was seen: {}",
                &*slot.limit_id,
                slot.reason.as_str()
            ),
            SlotKind::Flow => format!(
                "flow rule {:?}{layer} {does} the call by the session's earlier calls: {}",
                &*slot.limit_id,
                slot.reason.as_str()
            ),
            SlotKind::Limit => format!(
                "limit {:?}{layer} {does} the call past {} in its window: {}",
                &*slot.limit_id,
                slot.max,
                slot.reason.as_str()
            ),
            SlotKind::Sum => format!(
                "limit {:?}{layer} {does} the call past a sum of {} in its window: {}",
                &*slot.limit_id,
                slot.max,
                slot.reason.as_str()
            ),
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// What took `decision`, in one sentence.
fn summary(decision: &PolicyDecision) -> String {
    let done = match decision.action {
        PolicyAction::Allow => "allowed",
        PolicyAction::Ask => "held for a person",
        PolicyAction::Deny => "denied",
    };
    match (&decision.rule_id, &decision.layer) {
        (Some(rule), Some(layer)) => format!("{done} by rule {rule:?} of layer {layer:?}"),
        (Some(rule), None) => format!("{done} by rule {rule:?}"),
        (None, _) => format!("{done}: no rule allows this call (default deny)"),
    }
}

/// The first single change of `call` — one pointer's value, else the caller — that `policy`
/// allows, described in the policy's terms.
fn allowed_if(
    policy: &Analysed,
    registry: &ToolRegistry,
    space: &Space,
    call: &ToolCall,
) -> Option<String> {
    let allows = |changed: ToolCall| {
        prepare(registry, changed)
            .is_some_and(|prepared| policy.decide(&prepared).action == PolicyAction::Allow)
    };
    for (pointer, candidates) in &space.pointers {
        let roots = space.roots.get(pointer).map_or(&[][..], Vec::as_slice);
        for candidate in candidates {
            let Some(meaning) = meaning(candidate.value.as_ref(), roots, &space.fresh) else {
                continue;
            };
            let mut arguments = call.arguments.clone();
            if !super::calls::set(&mut arguments, pointer, candidate.value.as_ref()) {
                continue;
            }
            if arguments != call.arguments
                && allows(ToolCall {
                    arguments,
                    ..call.clone()
                })
            {
                return Some(format!("allowed if {pointer} {meaning}"));
            }
        }
    }
    for principal in space.principals.iter().flatten() {
        let mut changed = call.clone();
        changed.principal = Some(std::sync::Arc::new(principal.clone()));
        if allows(changed) {
            return Some(format!("allowed for {}", caller(principal, &space.fresh)));
        }
    }
    None
}

/// What a candidate value means, in the policy's terms; `None` for one not worth proposing (a
/// spelling no check can judge, a value named by no rule).
fn meaning(value: Option<&Value>, roots: &[String], fresh: &str) -> Option<String> {
    let Some(value) = value else {
        return Some("were left out".to_owned());
    };
    match value {
        Value::String(text) if text.starts_with('~') => None,
        Value::String(text) if !roots.is_empty() => {
            let inside = roots
                .iter()
                .map(|root| root.trim_end_matches('/'))
                .filter(|root| text == root || text.starts_with(&format!("{root}/")))
                .max_by_key(|root| root.len());
            match inside {
                Some(root) => Some(format!("were under {root}")),
                None if text.starts_with('/') => Some(format!("were outside {}", roots.join(", "))),
                None => None,
            }
        }
        Value::String(text) if text.contains(fresh) => None,
        Value::Array(_) | Value::Object(_) if other_holds(value, fresh) => None,
        other => Some(format!("were {other}")),
    }
}

/// Whether a list or object holds the fresh name (a value no rule names: not worth proposing).
fn other_holds(value: &Value, fresh: &str) -> bool {
    let mut strings = Vec::new();
    super::cells::strings_in(value, &mut strings);
    strings.iter().any(|text| text.contains(fresh))
}

fn caller(principal: &Principal, fresh: &str) -> String {
    let named = if principal.id == fresh {
        "a caller".to_owned()
    } else {
        format!("caller {:?}", principal.id)
    };
    if principal.groups.is_empty() {
        named
    } else {
        format!("{named} in {}", principal.groups.join(" and "))
    }
}
