//! Asynchronous checks (a classifier, a remote policy service) for the calls no synchronous rule
//! settles, bounded by a timeout that fails closed.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::decision::{PolicyDecision, Reason};
use crate::definition::BoxFuture;
use crate::runtime::PreparedToolCall;

/// A policy that decides asynchronously. Used through
/// [`ToolController::with_async_check`](crate::ToolController::with_async_check): it is asked only
/// about calls the synchronous policy left undecided (its decision is a
/// [`fallback`](PolicyDecision::fallback)), and only within a timeout that fails closed.
///
/// Like [`Policy`](super::Policy), it returns a decision only: the controller turns it into the
/// proof types, so an async check can never authorize a call by itself. The future must own what
/// it needs of the call (clone the arguments it judges); it is polled on whatever thread awaits
/// [`handle_async`](crate::ToolController::handle_async), or driven on the calling thread by
/// [`handle`](crate::ToolController::handle) and the `resolve` forms.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use serde_json::{json, Value};
/// use toolgate::*;
/// use toolgate::definition::BoxFuture;
///
/// let read = |_: &Value| -> Result<String, ToolError> { Ok("read".into()) };
/// let spec = ToolSpec::new("read_file", "Read.", json!({"type": "object"}));
/// let registry = ToolRegistry::new([ToolDefinition::new(spec, read)?])?;
/// let rules = RulePolicy::from_json(r#"{"rules": []}"#, &registry)?;
/// // No rule decides read_file: the classifier does.
/// let classifier = |_: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
///     Box::pin(async { PolicyDecision::allow(Reason::from_static("the classifier found nothing")) })
/// };
/// let controller = ToolController::new(registry, rules)
///     .with_async_check(classifier, Duration::from_secs(2));
/// let Outcome::Completed(result) = controller.handle(ToolCall::new("c", "read_file", json!({}))) else {
///     unreachable!("allowed")
/// };
/// assert!(!result.is_error);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AsyncPolicy: Send + Sync {
    /// The decision for `call`, eventually.
    fn decide(&self, call: &PreparedToolCall) -> BoxFuture<'static, PolicyDecision>;
}

impl<F> AsyncPolicy for F
where
    F: Fn(&PreparedToolCall) -> BoxFuture<'static, PolicyDecision> + Send + Sync,
{
    fn decide(&self, call: &PreparedToolCall) -> BoxFuture<'static, PolicyDecision> {
        self(call)
    }
}

/// An async check and its timeout, as the controller holds them.
#[derive(Clone)]
pub(crate) struct AsyncCheck {
    check: Arc<dyn AsyncPolicy>,
    timeout: Duration,
}

impl std::fmt::Debug for AsyncCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncCheck")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl AsyncCheck {
    pub(crate) fn new(check: Arc<dyn AsyncPolicy>, timeout: Duration) -> Self {
        Self { check, timeout }
    }

    /// The check's decision for `call`, or a denial naming the timeout if it takes longer.
    ///
    /// The deadline starts before the check is asked: time the check spends in `decide` itself,
    /// before it returns its future, counts against the timeout like time spent awaiting it.
    pub(crate) fn decide(&self, call: &PreparedToolCall) -> Deadline {
        let deadline = Instant::now() + self.timeout;
        Deadline {
            inner: self.check.decide(call),
            timeout: self.timeout,
            deadline,
            timer: None,
        }
    }
}

/// The waker a timer thread wakes at the deadline; `None` once the check finished.
type TimerSlot = Arc<Mutex<Option<Waker>>>;

/// A check's future bounded by a deadline, without an async runtime: the first time it waits, a
/// timer thread sleeps until the deadline and then wakes the latest waker.
pub(crate) struct Deadline {
    inner: BoxFuture<'static, PolicyDecision>,
    timeout: Duration,
    deadline: Instant,
    timer: Option<TimerSlot>,
}

impl Deadline {
    fn timed_out(&self) -> PolicyDecision {
        let millis = self.timeout.as_millis();
        PolicyDecision::deny(
            Reason::new(format!(
                "the async policy check did not decide within {millis} ms (timeout; fails closed)"
            ))
            .unwrap_or_else(|_| Reason::from_static("the async policy check timed out")),
        )
    }

    fn stop_timer(&mut self) {
        if let Some(slot) = self.timer.take() {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = None;
        }
    }
}

impl Future for Deadline {
    type Output = PolicyDecision;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<PolicyDecision> {
        if let Poll::Ready(decision) = self.inner.as_mut().poll(context) {
            self.stop_timer();
            // A decision that arrives after the deadline (a check that blocked inside its poll, or
            // one woken just late) is too late: fail closed as for a check that never answers.
            if Instant::now() >= self.deadline {
                return Poll::Ready(self.timed_out());
            }
            return Poll::Ready(decision);
        }
        if Instant::now() >= self.deadline {
            self.stop_timer();
            return Poll::Ready(self.timed_out());
        }
        match &self.timer {
            Some(slot) => {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(context.waker().clone());
            }
            None => {
                let slot: TimerSlot = Arc::new(Mutex::new(Some(context.waker().clone())));
                let woken = Arc::clone(&slot);
                let deadline = self.deadline;
                let spawned = std::thread::Builder::new()
                    .name("toolgate-check-timeout".to_owned())
                    .spawn(move || {
                        let now = Instant::now();
                        if deadline > now {
                            std::thread::sleep(deadline - now);
                        }
                        let waker = woken.lock().unwrap_or_else(PoisonError::into_inner).take();
                        if let Some(waker) = waker {
                            waker.wake();
                        }
                    });
                if spawned.is_err() {
                    // Without a timer nothing would end a check that never finishes: fail closed.
                    return Poll::Ready(self.timed_out());
                }
                self.timer = Some(slot);
            }
        }
        Poll::Pending
    }
}

/// A policy with the async check asked where it leaves a call undecided, for the approval path.
pub(crate) struct DrivenCheck<'p> {
    pub(crate) policy: &'p dyn super::Policy,
    pub(crate) check: &'p AsyncCheck,
}

/// The policy, with the async check asked — driven on this thread — where the policy leaves the
/// call undecided: one decision per call, so a policy with side effects (a shadow's counters)
/// sees each call once.
impl super::Policy for DrivenCheck<'_> {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        let decision = self.policy.decide(call);
        if decision.fallback {
            crate::definition::block_on(self.check.decide(call))
        } else {
            decision
        }
    }

    fn rate_slots(&self, call: &PreparedToolCall) -> Result<Vec<super::RateSlot>, PolicyDecision> {
        self.policy.rate_slots(call)
    }

    fn result_sources(&self, tool_name: &str) -> Option<crate::provenance::ResultSources> {
        self.policy.result_sources(tool_name)
    }

    fn judges_results(&self, tool_name: &str) -> bool {
        self.policy.judges_results(tool_name)
    }

    fn judge_result(
        &self,
        tool_name: &str,
        principal: Option<&crate::Principal>,
        result: &mut crate::ToolResult,
    ) -> Vec<super::RateSlot> {
        self.policy.judge_result(tool_name, principal, result)
    }
}
