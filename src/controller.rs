//! The controller: every module joined in the safe order behind two calls.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use crate::approvals::{
    Answered, ApprovalError, ApprovalRequest, ApprovalResponse, PendingApprovals,
};
use crate::authorized::{Authorized, PolicyOutcome};
use crate::contract::{ToolCall, ToolResult};
use crate::policy::Policy;
use crate::registry::ToolRegistry;
use crate::runtime::ToolRuntime;

/// What [`ToolController::handle`] did with a call.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Outcome {
    /// The call ran, or failed to run for a reason the model can read.
    Completed(ToolResult),
    /// The call waits for a person; answer it with [`ToolController::resolve`].
    PendingApproval(ApprovalRequest),
}

/// The registry and policy in force; replaced whole, never edited in place, so a call sees one
/// consistent pair from start to end.
struct Gate {
    runtime: Arc<ToolRuntime>,
    policy: Arc<dyn Policy>,
}

/// Joins registry, runtime, policy and approvals so that calls go through them in order.
///
/// # Guarantees
///
/// - `handle` runs a handler only for a call that resolved, validated and was allowed; `resolve`
///   only for an approved request whose call re-prepared against the current registry and was not
///   denied by the current policy (G1, G2, G6).
/// - Each approval is answered once, also under concurrent answers (G5).
/// - `Send + Sync`: share it between threads behind an `Arc`. No lock is held while a handler runs,
///   so a slow handler blocks no other call and a panicking one poisons nothing; waiting approvals
///   survive it (G8).
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::*;
///
/// let patch = |_: &Value| -> Result<String, ToolError> { Ok("patched".into()) };
/// let spec = ToolSpec::new("apply_patch", "Apply a patch.", json!({"type": "object"}));
/// let controller = ToolController::new(
///     ToolRegistry::new([ToolDefinition::new(spec, patch)?])?,
///     ToolPolicy::new(Vec::<String>::new(), ["apply_patch"])?,
/// );
///
/// let Outcome::PendingApproval(request) = controller.handle(ToolCall::new("c1", "apply_patch", json!({}))) else {
///     panic!("apply_patch needs confirmation");
/// };
/// let result = controller.resolve(ApprovalResponse::approve(request.approval_id))?;
/// assert_eq!(result, ToolResult::ok("c1", "patched"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ToolController {
    gate: RwLock<Arc<Gate>>,
    pending: PendingApprovals,
}

impl fmt::Debug for ToolController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolController")
            .field("registry", &self.gate().runtime.registry())
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl ToolController {
    /// A controller over `registry` and `policy`, with no waiting approvals.
    pub fn new(registry: ToolRegistry, policy: impl Policy + 'static) -> Self {
        Self {
            gate: RwLock::new(Arc::new(Gate {
                runtime: Arc::new(ToolRuntime::new(registry)),
                policy: Arc::new(policy),
            })),
            pending: PendingApprovals::new(),
        }
    }

    /// Takes a proposed call through preparation and policy: runs it if allowed, holds it if the
    /// policy asks, and otherwise returns an error result saying why. Every result carries the
    /// call's id (G7).
    ///
    /// A panic in the handler reaches the caller; the controller stays usable.
    pub fn handle(&self, call: ToolCall) -> Outcome {
        let gate = self.gate();
        let prepared = match gate.runtime.prepare(call) {
            Ok(prepared) => prepared,
            Err(result) => return Outcome::Completed(result),
        };
        match Authorized::by_policy(gate.policy.as_ref(), prepared) {
            PolicyOutcome::Allowed(authorized) => {
                Outcome::Completed(gate.runtime.execute(authorized))
            }
            PolicyOutcome::Denied { prepared, decision } => {
                Outcome::Completed(PolicyOutcome::denial_result(prepared, &decision))
            }
            PolicyOutcome::NeedsApproval { prepared, decision } => {
                let call = prepared.into_call();
                let call_id = call.call_id.clone();
                match self.pending.request(call, decision.reason) {
                    Ok(request) => Outcome::PendingApproval(request),
                    // Fail closed: without an unguessable id the call is not held, and not run.
                    Err(error) => Outcome::Completed(ToolResult::error(
                        call_id,
                        format!("could not hold the call for approval: {error}"),
                    )),
                }
            }
        }
    }

    /// Applies a person's answer. A rejection gives an error result for the call; an approval
    /// re-prepares the call against the current registry and re-decides it with the current
    /// policy (a denial wins), then runs it.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if the id is unknown or was already answered; nothing runs.
    pub fn resolve(&self, response: ApprovalResponse) -> Result<ToolResult, ApprovalError> {
        let approval = match self.pending.answer(response)? {
            Answered::Rejected(request) => {
                return Ok(ToolResult::error(
                    request.call.call_id,
                    "rejected: the person reviewing this call did not approve it; it did not run",
                ));
            }
            Answered::Approved(approval) => approval,
        };
        let gate = self.gate();
        Ok(
            match Authorized::by_approval(&gate.runtime, gate.policy.as_ref(), approval) {
                Ok(authorized) => gate.runtime.execute(authorized),
                Err(result) => result,
            },
        )
    }

    /// The requests waiting for a person.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        self.pending.list()
    }

    /// The specs to show the model, from the current registry, in registration order.
    pub fn specs(&self) -> Vec<crate::ToolSpec> {
        self.gate().runtime.registry().specs().cloned().collect()
    }

    /// Replaces the tools. Calls already running finish with the tools they started with; waiting
    /// approvals are checked against the new tools when answered.
    pub fn replace_registry(&self, registry: ToolRegistry) {
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        *gate = Arc::new(Gate {
            runtime: Arc::new(ToolRuntime::new(registry)),
            policy: Arc::clone(&gate.policy),
        });
    }

    /// Replaces the policy. Waiting approvals are decided again under the new policy when
    /// answered; a denial then wins.
    pub fn replace_policy(&self, policy: impl Policy + 'static) {
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        *gate = Arc::new(Gate {
            runtime: Arc::clone(&gate.runtime),
            policy: Arc::new(policy),
        });
    }

    /// Builds a policy against the current registry and puts it in force only if it built: on an
    /// error the old policy stays, untouched. The registry cannot change while `build` runs.
    /// Waiting approvals are decided again under the new policy when answered.
    ///
    /// # Errors
    ///
    /// Whatever `build` returned; the policy in force is unchanged then.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::*;
    ///
    /// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    /// let controller = ToolController::new(
    ///     ToolRegistry::new([ToolDefinition::new(ToolSpec::new("t", "", json!({})), noop)?])?,
    ///     ToolPolicy::default(),
    /// );
    /// let bad = r#"{"rules": [{"id": "x", "tool": "missing", "action": "allow", "reason": "r"}]}"#;
    /// assert!(controller.try_replace_policy(|registry| RulePolicy::from_json(bad, registry)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_replace_policy<P, E>(
        &self,
        build: impl FnOnce(&ToolRegistry) -> Result<P, E>,
    ) -> Result<(), E>
    where
        P: Policy + 'static,
    {
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        let policy = build(gate.runtime.registry())?;
        *gate = Arc::new(Gate {
            runtime: Arc::clone(&gate.runtime),
            policy: Arc::new(policy),
        });
        Ok(())
    }

    /// The gate in force, shared; the lock is released before anything runs.
    fn gate(&self) -> Arc<Gate> {
        Arc::clone(&self.gate.read().unwrap_or_else(PoisonError::into_inner))
    }
}
