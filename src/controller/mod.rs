//! The controller: every module joined in the safe order behind two calls.
//!
//! `mod.rs` holds the public face; `gate.rs` the registry and policy pair in force; `steps.rs` the
//! pipeline (gate → record → run), written once for the sync and async forms; `observe.rs` the
//! tracing spans.

mod answering;
mod gate;
mod limit;
mod listing;
mod lookups;
#[cfg(feature = "tracing")]
mod observe;
mod provenance;
mod recording;
mod results;
mod slot_takes;
mod steps;

/// The controller's word that the action or decision it hands to `Authorized`'s fast paths
/// (`if_allowed`, `by_decision`) is the one the policy in force took for the call, counted
/// against its limits. Its field is private to this module, so nothing else in the crate can
/// build one and reach those paths with an action of its own. Zero-sized: it costs nothing on the
/// hot path.
struct Judged(());

impl crate::authorized::GateWitness for Judged {}

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::approvals::{
    ApprovalError, ApprovalId, ApprovalLimits, ApprovalRequest, ApprovalResponse, ApprovalState,
    ApprovalStore, PendingApprovals,
};
use crate::audit::{AuditKind, AuditSink, AuditSubject};
use crate::clock::{Clock, SystemClock};
use crate::contract::{ToolCall, ToolResult};
use crate::limits::{MemoryRateCounters, RateCounters};
use crate::policy::{AsyncCheck, AsyncPolicy, Policy, PolicyMismatch};
use crate::registry::ToolRegistry;
use crate::runtime::ToolRuntime;
use gate::{Gate, NEXT_CONTROLLER_ID};
pub use provenance::RecordError;

/// What [`ToolController::handle`] did with a call.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Outcome {
    /// The call ran, or failed to run for a reason the model can read.
    Completed(ToolResult),
    /// The call waits for a person; answer it with [`ToolController::resolve`].
    PendingApproval(ApprovalRequest),
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
    // The published gate. Writers replace it under the write lock and bump `generation` before
    // releasing it; readers keep a thread-private copy per controller and generation (see
    // `gate()`), so the allow path writes no memory another thread reads.
    gate: RwLock<Arc<Gate>>,
    generation: AtomicU64,
    // Tells this controller's entries apart in the threads' caches.
    id: u64,
    pending: PendingApprovals,
    audit: Option<Arc<dyn AuditSink>>,
    // Asked only where the policy's decision is a fallback; see `with_async_check`.
    async_check: Option<AsyncCheck>,
    // Where rate limits are counted, and the time they are counted at.
    counters: Arc<dyn RateCounters>,
    clock: Arc<dyn Clock>,
    // Keys the values of results and requests for the provenance conditions.
    recorder: provenance::Recorder,
    // Which call last returned each value, so a provenance decision names it.
    seen_at: crate::provenance::SeenAt,
    // The tool lists worked out per caller for the gate in force.
    listings: std::sync::Mutex<listing::Listings>,
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
    ///
    /// If the policy does not fit the registry ([`Policy::check_registry`]: a rule names a tool or
    /// field the registry lacks), every call is denied, naming the mismatch, until a fitting
    /// registry or policy is loaded; [`try_new`](Self::try_new) reports it instead.
    pub fn new(registry: ToolRegistry, policy: impl Policy + 'static) -> Self {
        let gate = Gate::checked(Arc::new(ToolRuntime::new(registry)), Arc::new(policy))
            .unwrap_or_else(|(_, denying)| denying);
        Self::with_gate(gate)
    }

    /// A controller over `registry` and `policy`, if the policy fits the registry.
    ///
    /// # Errors
    ///
    /// [`PolicyMismatch`] listing what does not fit.
    pub fn try_new(
        registry: ToolRegistry,
        policy: impl Policy + 'static,
    ) -> Result<Self, PolicyMismatch> {
        Gate::checked(Arc::new(ToolRuntime::new(registry)), Arc::new(policy))
            .map(Self::with_gate)
            .map_err(|(mismatch, _)| mismatch)
    }

    fn with_gate(gate: Gate) -> Self {
        Self {
            gate: RwLock::new(Arc::new(gate)),
            generation: AtomicU64::new(0),
            id: NEXT_CONTROLLER_ID.fetch_add(1, Ordering::Relaxed),
            pending: PendingApprovals::new(),
            audit: None,
            async_check: None,
            counters: Arc::new(MemoryRateCounters::default()),
            clock: Arc::new(SystemClock),
            recorder: provenance::default_recorder(),
            seen_at: crate::provenance::SeenAt::default(),
            listings: std::sync::Mutex::default(),
        }
    }

    /// The same controller, counting rate limits in `counters` — a durable store shared by
    /// several processes (`SqliteRateCounters`, `PostgresRateCounters`) makes a limit hold across
    /// them. The default counts in this process's memory ([`MemoryRateCounters`]). Call before the
    /// first `handle`: counts already taken stay behind.
    ///
    /// [`MemoryRateCounters`]: crate::limits::MemoryRateCounters
    #[must_use]
    pub fn with_rate_counters(mut self, counters: impl RateCounters + 'static) -> Self {
        self.counters = Arc::new(counters);
        self
    }

    /// The same controller, reading time from `clock` — for approval expiry (see
    /// [`PendingApprovals`]'s `# Expiry`) and rate-limit windows — instead of the system's wall
    /// clock: a [`ManualClock`](crate::clock::ManualClock) in tests and simulations. Call before
    /// the first `handle`; an approval store set later keeps it.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        let clock: Arc<dyn Clock> = Arc::new(clock);
        self.pending.set_clock(Arc::clone(&clock));
        self.clock = clock;
        self
    }

    /// The same controller, asking `check` about every call the policy leaves undecided — where
    /// its decision is a [`fallback`](crate::PolicyDecision::fallback), such as a
    /// [`RulePolicy`](crate::RulePolicy)'s default deny — and taking its decision instead. Cheap
    /// synchronous rules run first; a call any rule decides never reaches the check.
    ///
    /// The check must decide within `timeout`, or the call is denied with a reason naming the
    /// timeout (fail closed); no async runtime is needed (a timer thread wakes the waiting task).
    /// The timeout runs from the moment the check is asked: time spent inside `decide` before
    /// it returns its future, or blocking inside a poll, counts, and a decision that arrives
    /// after the timeout is a denial whatever it says. A check that blocks its thread delays
    /// that denial until it returns control (nothing can interrupt a blocked thread); it can
    /// never turn it into an allow.
    /// [`handle_async`](Self::handle_async) awaits the check; [`handle`](Self::handle),
    /// [`resolve`](Self::resolve) and [`resolve_async`](Self::resolve_async) drive it on the
    /// calling thread. When an approved call is re-checked on `resolve`, the check is asked
    /// again about the call as it will run. The typestate is unchanged: the check returns a
    /// decision only, and the controller builds the proof types from it.
    #[must_use]
    pub fn with_async_check(
        mut self,
        check: impl AsyncPolicy + 'static,
        timeout: std::time::Duration,
    ) -> Self {
        self.async_check = Some(AsyncCheck::new(Arc::new(check), timeout));
        self
    }

    /// The same controller, recording every call, decision, approval and outcome in `sink`
    /// ([`AuditEvent`](crate::audit::AuditEvent)s name calls and tools and carry argument digests, never
    /// argument values). Fail closed: if an event leading to a handler cannot be recorded, the
    /// handler does not run and the model gets an error result.
    #[must_use]
    pub fn with_audit_sink(mut self, sink: impl AuditSink + 'static) -> Self {
        self.audit = Some(Arc::new(sink));
        self
    }

    /// Takes a proposed call through preparation and policy: runs it if allowed, holds it if the
    /// policy asks, and otherwise returns an error result saying why. Every result carries the
    /// call's id (G7).
    ///
    /// The same steps as [`handle_async`](Self::handle_async), driven on this thread: an async
    /// handler is awaited here (one that needs a particular runtime's reactor must go through
    /// `handle_async` inside that runtime). A panic in the handler reaches the caller; the
    /// controller stays usable.
    pub fn handle(&self, call: ToolCall) -> Outcome {
        #[cfg(feature = "tracing")]
        let span = observe::handle_span(&call).entered();
        let outcome = self.handle_blocking(call);
        #[cfg(feature = "tracing")]
        observe::record_outcome(&span, &outcome);
        outcome
    }

    /// The async form of [`handle`](Self::handle): the same steps and guarantees, with the
    /// handler awaited. No lock is held across the await.
    pub async fn handle_async(&self, call: ToolCall) -> Outcome {
        #[cfg(feature = "tracing")]
        let span = observe::handle_span(&call);
        let work = self.handle_steps(call);
        #[cfg(feature = "tracing")]
        let work = tracing::Instrument::instrument(work, span.clone());
        let outcome = work.await;
        #[cfg(feature = "tracing")]
        observe::record_outcome(&span, &outcome);
        outcome
    }

    /// Applies a person's answer. A rejection gives an error result for the call; an approval
    /// re-prepares the call against the current registry and re-decides it with the current
    /// policy (a denial wins), then runs it. Driven on this thread, as [`handle`](Self::handle).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if the id is unknown or was already answered;
    /// [`ApprovalError::ApproverRefused`] or [`ApprovalError::NotTheCallRead`] if the answer does
    /// not fit the request (it keeps waiting); nothing runs.
    pub fn resolve(&self, response: ApprovalResponse) -> Result<ToolResult, ApprovalError> {
        #[cfg(feature = "tracing")]
        let span = observe::resolve_span(&response);
        #[cfg(feature = "tracing")]
        let _entered = span.enter();
        self.resolve_blocking(
            response,
            #[cfg(feature = "tracing")]
            &span,
        )
    }

    /// The async form of [`resolve`](Self::resolve).
    ///
    /// # Errors
    ///
    /// As [`resolve`](Self::resolve).
    pub async fn resolve_async(
        &self,
        response: ApprovalResponse,
    ) -> Result<ToolResult, ApprovalError> {
        #[cfg(feature = "tracing")]
        let span = observe::resolve_span(&response);
        let work = self.resolve_steps(
            response,
            false,
            #[cfg(feature = "tracing")]
            span.clone(),
        );
        #[cfg(feature = "tracing")]
        let work = tracing::Instrument::instrument(work, span);
        Ok(work.await?.0)
    }

    /// [`resolve_async`](Self::resolve_async), also returning the request that was answered and
    /// whether it had expired — what an approval page or a command line names in its report
    /// without listing what waits. Give the answer the digest the person read
    /// ([`ApprovalResponse::for_digest`]): it is then checked in the same step that takes the
    /// request.
    ///
    /// # Errors
    ///
    /// As [`resolve`](Self::resolve); [`ApprovalError::NotTheCallRead`] when the request holds
    /// another call than the digest names (it keeps waiting).
    pub async fn resolve_request_async(
        &self,
        response: ApprovalResponse,
    ) -> Result<crate::approvals::Resolved, ApprovalError> {
        #[cfg(feature = "tracing")]
        let span = observe::resolve_span(&response);
        let approval_id = response.approval_id;
        let work = self.resolve_steps(
            response,
            true,
            #[cfg(feature = "tracing")]
            span.clone(),
        );
        #[cfg(feature = "tracing")]
        let work = tracing::Instrument::instrument(work, span);
        match work.await? {
            (result, Some((request, expired))) => Ok(crate::approvals::Resolved {
                result,
                request,
                expired,
            }),
            // `resolve_steps` keeps the request of every answer it takes.
            (_, None) => Err(ApprovalError::NotPending { approval_id }),
        }
    }

    /// The same controller with other bounds on waiting approvals (time to live, how many may
    /// wait). Call before the first `handle`: requests already waiting are dropped.
    #[must_use]
    pub fn with_approval_limits(mut self, limits: ApprovalLimits) -> Self {
        self.pending.set_limits(limits);
        self
    }

    /// The same controller, keeping approval requests in `store` — a durable store lets a new
    /// controller over the same ledger answer requests made before a restart (re-checked as
    /// always). Call before the first `handle`.
    #[must_use]
    pub fn with_approval_store(mut self, store: impl ApprovalStore + 'static) -> Self {
        self.pending.set_store(store);
        self
    }

    /// Where an approval request stands (pending, approved with its outcome, rejected, …).
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the store cannot be read.
    pub fn approval_state(
        &self,
        approval_id: ApprovalId,
    ) -> Result<Option<ApprovalState>, ApprovalError> {
        self.pending.state(approval_id)
    }

    /// The requests waiting for a person: call, reason and digest.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        self.pending.list()
    }

    /// As [`pending`](Self::pending), with the store's error instead of an empty list.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the store cannot be read.
    pub fn pending_requests(&self) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        self.pending.try_list()
    }

    /// Withdraws a waiting request; the returned error result tells the model its call did not
    /// run.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::NotPending`] if no request with that id is waiting.
    pub fn revoke(&self, approval_id: ApprovalId) -> Result<ToolResult, ApprovalError> {
        let request = self.pending.revoke(approval_id)?;
        let subject = self.audit.as_ref().map(|_| {
            AuditSubject::of(&request.call)
                .with_approval(approval_id)
                .with_definition(&request.definition_digest)
        });
        let _ = self.record_deferred(&subject, |s| s.event(AuditKind::ApprovalRevoked));
        Ok(ToolResult::error(
            request.call.call_id,
            "revoked: the approval request was withdrawn; the call did not run",
        ))
    }

    /// The specs to show the model, from the current registry, in registration order.
    pub fn specs(&self) -> Vec<crate::ToolSpec> {
        self.gate().runtime.registry().specs().cloned().collect()
    }

    /// Replaces the tools, if the policy in force fits them. Calls already running finish with the
    /// tools they started with; waiting approvals are checked against the new tools when answered.
    ///
    /// # Errors
    ///
    /// [`PolicyMismatch`] if the policy would not load against `registry` (a rule's tool is gone,
    /// a field a rule judges was renamed): the old registry stays in force, untouched. Load a
    /// policy for the new tools first, or together through [`replace`](Self::replace).
    pub fn replace_registry(&self, registry: ToolRegistry) -> Result<(), PolicyMismatch> {
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        let next = Gate::checked(
            Arc::new(ToolRuntime::new(registry)),
            Arc::clone(&gate.configured),
        )
        .map_err(|(mismatch, _)| mismatch)?;
        self.publish(&mut gate, next);
        Ok(())
    }

    /// Replaces the policy, if it fits the registry in force. Waiting approvals are decided again
    /// under the new policy when answered; a denial then wins.
    ///
    /// # Errors
    ///
    /// [`PolicyMismatch`] if the policy does not fit the registry (it was built for other tools);
    /// the policy in force stays.
    pub fn replace_policy(&self, policy: impl Policy + 'static) -> Result<(), PolicyMismatch> {
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        let next = Gate::checked(Arc::clone(&gate.runtime), Arc::new(policy))
            .map_err(|(mismatch, _)| mismatch)?;
        self.publish(&mut gate, next);
        Ok(())
    }

    /// Replaces tools and policy together, if the policy fits the tools — the way to follow a
    /// tool change that the old policy does not fit (an MCP server renamed a field).
    ///
    /// # Errors
    ///
    /// [`PolicyMismatch`] if they do not fit each other; the pair in force stays.
    pub fn replace(
        &self,
        registry: ToolRegistry,
        policy: impl Policy + 'static,
    ) -> Result<(), PolicyMismatch> {
        let next = Gate::checked(Arc::new(ToolRuntime::new(registry)), Arc::new(policy))
            .map_err(|(mismatch, _)| mismatch)?;
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        self.publish(&mut gate, next);
        Ok(())
    }

    /// Builds a policy against the current registry and puts it in force only if it built and
    /// fits: on an error the old policy stays, untouched. The registry cannot change while `build`
    /// runs. Waiting approvals are decided again under the new policy when answered.
    ///
    /// # Errors
    ///
    /// Whatever `build` returned, or its [`PolicyMismatch`] converted into `E`; the policy in force
    /// is unchanged then.
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
        E: From<PolicyMismatch>,
    {
        let mut gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        let policy = build(gate.runtime.registry())?;
        let next = Gate::checked(Arc::clone(&gate.runtime), Arc::new(policy))
            .map_err(|(mismatch, _)| E::from(mismatch))?;
        self.publish(&mut gate, next);
        Ok(())
    }
}
