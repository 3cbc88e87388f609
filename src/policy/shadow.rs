//! Shadow mode: a candidate policy decides beside the enforced one, and only its differences are
//! recorded.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::{Policy, PolicyMismatch};
use crate::audit::{AuditEvent, AuditKind, AuditSink, AuditSubject};
use crate::decision::{PolicyAction, PolicyDecision};
use crate::registry::ToolRegistry;
use crate::runtime::PreparedToolCall;

/// A decision as the report counts it: the action, and the rule and layer that took it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct DecisionKey {
    /// What the policy decided.
    pub action: PolicyAction,
    /// The deciding rule, when a rule decided.
    pub rule_id: Option<Arc<str>>,
    /// The deciding layer, in a stack of layers.
    pub layer: Option<Arc<str>>,
}

impl DecisionKey {
    fn of(decision: &PolicyDecision) -> Self {
        Self {
            action: decision.action,
            rule_id: decision.rule_id.clone(),
            layer: decision.layer.clone(),
        }
    }
}

/// How often the candidate would have decided differently, by the pair of decisions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShadowReport {
    /// Calls decided since the shadow started.
    pub calls: u64,
    /// Calls the candidate would have decided with another action.
    pub differing: u64,
    /// Calls where the candidate panicked (the enforced decision stood; nothing was compared).
    pub candidate_failures: u64,
    /// Each pair (enforced, candidate) that differed, with its count, most frequent first.
    pub differences: Vec<(DecisionKey, DecisionKey, u64)>,
    /// Every decision the candidate took, with its count: which rules decide real calls.
    pub candidate_decisions: Vec<(DecisionKey, u64)>,
}

impl ShadowReport {
    /// Of `rule_ids` (a candidate's rules, as written), those that decided no call in this run:
    /// rules real traffic never reached.
    pub fn rules_never_deciding<'a>(
        &self,
        rule_ids: impl IntoIterator<Item = &'a str>,
    ) -> Vec<&'a str> {
        rule_ids
            .into_iter()
            .filter(|id| {
                !self
                    .candidate_decisions
                    .iter()
                    .any(|(key, _)| key.rule_id.as_deref() == Some(*id))
            })
            .collect()
    }
}

/// A candidate policy tried beside the enforced one: the enforced policy decides every call,
/// exactly as it would alone; the candidate decides too, and where its action differs the
/// difference is counted (by enforced and candidate rule) and recorded as an
/// [`AuditKind::ShadowDifference`] event when an audit sink is given. Nothing changes for the call.
///
/// # Guarantees
///
/// - The decision returned is the enforced policy's, unchanged (the candidate cannot loosen or
///   tighten anything, a candidate that panics is counted in
///   [`candidate_failures`](ShadowReport::candidate_failures), and a failing audit sink changes
///   nothing). The candidate runs inline: a slow candidate slows every call.
/// - Differences are counted exactly: [`report`](Self::report) tells how many calls each pair of
///   decisions covered.
/// - Both policies must fit the registry ([`Policy::check_registry`]), so a candidate written for
///   other tools is refused instead of reporting nonsense.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use toolgate::*;
/// use toolgate::policy::Shadow;
///
/// let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
/// let registry = ToolRegistry::new([
///     ToolDefinition::new(ToolSpec::new("shell", "Run.", json!({"type": "object"})), noop)?,
/// ])?;
/// let shadow = Arc::new(Shadow::new(
///     ToolPolicy::new(["shell"], Vec::<String>::new())?,   // enforced: shell runs
///     ToolPolicy::new(Vec::<String>::new(), ["shell"])?,   // candidate: shell would ask
/// ));
/// let controller = ToolController::try_new(registry, Arc::clone(&shadow))?;
/// assert!(matches!(controller.handle(ToolCall::new("c1", "shell", json!({}))), Outcome::Completed(_)));
/// let report = shadow.report();
/// assert_eq!((report.calls, report.differing), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Shadow {
    enforced: Arc<dyn Policy>,
    candidate: Arc<dyn Policy>,
    audit: Option<Arc<dyn AuditSink>>,
    calls: AtomicU64,
    candidate_failures: AtomicU64,
    // The lock is taken only when the two differ, and never while anything else runs.
    differences: Mutex<BTreeMap<(DecisionKey, DecisionKey), u64>>,
    // The candidate's decisions by key: a read lock and an atomic add per call; the write lock
    // only for a key seen the first time.
    decided: RwLock<HashMap<DecisionKey, AtomicU64>>,
}

impl fmt::Debug for Shadow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shadow")
            .field("report", &self.report())
            .finish_non_exhaustive()
    }
}

impl Shadow {
    /// `enforced` decides; `candidate` is only compared.
    pub fn new(enforced: impl Policy + 'static, candidate: impl Policy + 'static) -> Self {
        Self {
            enforced: Arc::new(enforced),
            candidate: Arc::new(candidate),
            audit: None,
            calls: AtomicU64::new(0),
            candidate_failures: AtomicU64::new(0),
            differences: Mutex::new(BTreeMap::new()),
            decided: RwLock::new(HashMap::new()),
        }
    }

    /// The same shadow, recording each difference in `sink` as well.
    #[must_use]
    pub fn with_audit_sink(mut self, sink: impl AuditSink + 'static) -> Self {
        self.audit = Some(Arc::new(sink));
        self
    }

    /// How the candidate differed so far.
    pub fn report(&self) -> ShadowReport {
        let differences = self
            .differences
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut differences: Vec<(DecisionKey, DecisionKey, u64)> = differences
            .into_iter()
            .map(|((enforced, candidate), count)| (enforced, candidate, count))
            .collect();
        differences.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1))));
        let mut candidate_decisions: Vec<(DecisionKey, u64)> = self
            .decided
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(key, count)| (key.clone(), count.load(Ordering::Relaxed)))
            .collect();
        candidate_decisions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ShadowReport {
            candidate_decisions,
            calls: self.calls.load(Ordering::Relaxed),
            candidate_failures: self.candidate_failures.load(Ordering::Relaxed),
            differing: differences.iter().map(|(_, _, count)| count).sum(),
            differences,
        }
    }
}

impl Shadow {
    fn count_decision(&self, decision: &PolicyDecision) {
        let key = DecisionKey::of(decision);
        let known = self.decided.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = known.get(&key) {
            count.fetch_add(1, Ordering::Relaxed);
            return;
        }
        drop(known);
        self.decided
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .fetch_add(1, Ordering::Relaxed);
    }
}

impl Policy for Shadow {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        let enforced = self.enforced.decide(call);
        self.calls.fetch_add(1, Ordering::Relaxed);
        // A candidate on trial must not take the calls down: a panic in it is counted, and the
        // enforced decision stands.
        let candidate =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.candidate.decide(call)));
        let Ok(candidate) = candidate else {
            self.candidate_failures.fetch_add(1, Ordering::Relaxed);
            return enforced;
        };
        self.count_decision(&candidate);
        if enforced.action != candidate.action {
            let key = (DecisionKey::of(&enforced), DecisionKey::of(&candidate));
            *self
                .differences
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_default() += 1;
            if let Some(sink) = &self.audit {
                // Nothing changes for the call: a sink that fails is the shadow's loss only.
                let _ = sink.record_deferred(&AuditEvent {
                    reason: Some(format!(
                        "the candidate policy would {} this call where the enforced one decided {}",
                        candidate.action, enforced.action
                    )),
                    ..AuditSubject::of(call.call())
                        .with_definition(call.definition().digest())
                        .decision(&candidate)
                }
                .with_kind(AuditKind::ShadowDifference));
            }
        }
        enforced
    }

    /// As the enforced policy: the candidate never changes what runs, nor what is listed.
    fn denies_every_call(&self, tool_name: &str) -> bool {
        self.enforced.denies_every_call(tool_name)
    }

    fn denies_every_call_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        self.enforced.denies_every_call_for(tool_name, caller)
    }

    fn always_denies_for(&self, tool_name: &str, caller: Option<&crate::Principal>) -> bool {
        self.enforced.always_denies_for(tool_name, caller)
    }

    /// The enforced policy's: a candidate's limits are not counted (it decides nothing).
    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<super::RateSlot>, PolicyDecision> {
        self.enforced.rate_slots(call)
    }

    /// The enforced policy's, so results are recorded as the policy in force reads them.
    fn result_sources(&self, tool_name: &str) -> Option<crate::provenance::ResultSources> {
        self.enforced.result_sources(tool_name)
    }

    /// The enforced policy's: a candidate's result rules change nothing.
    fn judges_results(&self, tool_name: &str) -> bool {
        self.enforced.judges_results(tool_name)
    }

    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&crate::Principal>,
        result: &mut crate::ToolResult,
    ) -> Vec<super::RateSlot> {
        self.enforced.judge_result(tool_name, principal, result)
    }

    fn check_registry(&self, registry: &ToolRegistry) -> Result<(), PolicyMismatch> {
        self.enforced.check_registry(registry)?;
        self.candidate
            .check_registry(registry)
            .map_err(|mismatch| PolicyMismatch {
                problems: mismatch
                    .problems
                    .into_iter()
                    .map(|problem| super::LoadProblem {
                        place: format!("shadow candidate: {}", problem.place),
                        message: problem.message,
                    })
                    .collect(),
            })
    }
}
