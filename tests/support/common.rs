//! Tools and policies shared by the integration tests.
#![allow(
    dead_code,
    reason = "each test file uses a different subset of the helpers"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::{
    Outcome, RulePolicy, ToolDefinition, ToolError, ToolPolicy, ToolRegistry, ToolSpec,
};

pub fn calculator_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    })
}

pub fn calculator() -> ToolDefinition {
    let add = |args: &Value| -> Result<String, ToolError> {
        let (a, b) = (args["a"].as_i64(), args["b"].as_i64());
        match (a, b) {
            (Some(a), Some(b)) => a
                .checked_add(b)
                .map(|sum| sum.to_string())
                .ok_or_else(|| ToolError::new("overflow")),
            _ => Err(ToolError::new("a and b must be integers")),
        }
    };
    ToolDefinition::new(
        ToolSpec::new(
            "calculator",
            "Add exactly two integers named a and b.",
            calculator_schema(),
        ),
        add,
    )
    .expect("calculator schema compiles")
}

/// A tool that counts how often its handler ran, with the given schema.
pub fn counted(name: &str, schema: Value, runs: &Arc<AtomicUsize>) -> ToolDefinition {
    let runs = Arc::clone(runs);
    ToolDefinition::new(
        ToolSpec::new(name, "Counts its runs.", schema),
        move |_: &Value| -> Result<String, ToolError> {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(format!("run {run}"))
        },
    )
    .expect("schema compiles")
}

pub fn patch_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"patch": {"type": "string"}},
        "required": ["patch"]
    })
}

pub fn panicking(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new(name, "Always panics.", json!({"type": "object"})),
        |_: &Value| -> Result<String, ToolError> { panic!("handler defect") },
    )
    .expect("schema compiles")
}

pub fn failing(name: &str, message: &'static str) -> ToolDefinition {
    ToolDefinition::new(
        ToolSpec::new(name, "Always reports a failure.", json!({"type": "object"})),
        move |_: &Value| -> Result<String, ToolError> { Err(ToolError::new(message)) },
    )
    .expect("schema compiles")
}

pub fn registry(definitions: impl IntoIterator<Item = ToolDefinition>) -> ToolRegistry {
    ToolRegistry::new(definitions).expect("distinct names")
}

pub fn policy(allowed: &[&str], ask: &[&str]) -> ToolPolicy {
    ToolPolicy::new(allowed.iter().copied(), ask.iter().copied()).expect("disjoint sets")
}

pub fn run_count(counter: &Arc<AtomicUsize>) -> usize {
    counter.load(Ordering::SeqCst)
}

/// A minimal executor for the async tests: polls on the current thread and parks between polls.
/// toolgate's async API needs no particular runtime, and this proves it.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

/// A future that is pending once and is woken from another thread before it completes, like a
/// handler waiting on I/O.
pub struct WokenLater<T> {
    value: Option<T>,
    waited: bool,
}

impl<T> WokenLater<T> {
    pub fn new(value: T) -> Self {
        Self {
            value: Some(value),
            waited: false,
        }
    }
}

impl<T: Unpin> std::future::Future for WokenLater<T> {
    type Output = T;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<T> {
        if self.waited {
            return std::task::Poll::Ready(self.value.take().expect("polled after completion"));
        }
        self.waited = true;
        let waker = cx.waker().clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(5));
            waker.wake();
        });
        std::task::Poll::Pending
    }
}

/// When an [`AlteringStore`] alters a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alter {
    /// As it is stored.
    OnInsert,
    /// As it is taken back to be answered.
    OnTake,
}

/// A memory store that alters its requests, as someone with write access to a durable ledger
/// could (without redoing the digest): `alter` runs on each request at the point `when` says.
#[derive(Debug)]
pub struct AlteringStore {
    pub inner: toolgate::approvals::MemoryApprovalStore,
    pub when: Alter,
    pub alter: fn(&mut toolgate::ApprovalRequest),
}

impl AlteringStore {
    pub fn new(when: Alter, alter: fn(&mut toolgate::ApprovalRequest)) -> Self {
        Self {
            inner: toolgate::approvals::MemoryApprovalStore::new(),
            when,
            alter,
        }
    }
}

impl toolgate::approvals::ApprovalStore for AlteringStore {
    fn insert(
        &self,
        request: &toolgate::ApprovalRequest,
        expires_ms: Option<u64>,
        max_pending: usize,
        now_ms: u64,
    ) -> Result<(), toolgate::approvals::ApprovalError> {
        let mut stored = request.clone();
        if self.when == Alter::OnInsert {
            (self.alter)(&mut stored);
        }
        self.inner.insert(&stored, expires_ms, max_pending, now_ms)
    }

    fn take(
        &self,
        approval_id: toolgate::approvals::ApprovalId,
        transition: toolgate::approvals::Transition,
        admit: toolgate::approvals::Admit<'_>,
        now_ms: u64,
    ) -> Result<(toolgate::ApprovalRequest, bool), toolgate::approvals::ApprovalError> {
        let (mut request, expired) = self.inner.take(approval_id, transition, admit, now_ms)?;
        if self.when == Alter::OnTake {
            (self.alter)(&mut request);
        }
        Ok((request, expired))
    }

    fn pending(
        &self,
        now_ms: u64,
    ) -> Result<Vec<toolgate::ApprovalRequest>, toolgate::approvals::ApprovalError> {
        self.inner.pending(now_ms)
    }

    fn record_outcome(
        &self,
        approval_id: toolgate::approvals::ApprovalId,
        outcome: toolgate::approvals::ExecutionOutcome,
    ) -> Result<(), toolgate::approvals::ApprovalError> {
        self.inner.record_outcome(approval_id, outcome)
    }

    fn state(
        &self,
        approval_id: toolgate::approvals::ApprovalId,
    ) -> Result<Option<toolgate::approvals::ApprovalState>, toolgate::approvals::ApprovalError>
    {
        self.inner.state(approval_id)
    }
}

/// Runs counted per tool name, by tools made with [`any_tool`].
pub type RunsByName = Arc<Mutex<BTreeMap<String, usize>>>;

/// A tool taking any object, counting its runs in `runs` under its name.
pub fn any_tool(name: &str, runs: &RunsByName) -> ToolDefinition {
    let runs = Arc::clone(runs);
    let owned = name.to_owned();
    ToolDefinition::new(
        ToolSpec::new(name, "probe", json!({"type": "object"})),
        move |_: &Value| -> Result<String, ToolError> {
            *runs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(owned.clone())
                .or_default() += 1;
            Ok("ran".to_owned())
        },
    )
    .expect("schema compiles")
}

/// A fresh count of runs by tool name.
pub fn runs_by_name() -> RunsByName {
    Arc::new(Mutex::new(BTreeMap::new()))
}

/// How often the tool `name` ran.
pub fn runs_of(runs: &RunsByName, name: &str) -> usize {
    runs.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(name)
        .copied()
        .unwrap_or(0)
}

/// A registry of [`any_tool`]s named `names`.
pub fn any_tools(names: &[&str], runs: &RunsByName) -> ToolRegistry {
    registry(names.iter().map(|name| any_tool(name, runs)))
}

/// What a call came to, comparable across controllers.
pub fn outcome_summary(outcome: &Outcome) -> (String, String, bool) {
    match outcome {
        Outcome::Completed(result) => (
            "completed".to_owned(),
            result.content.clone(),
            result.is_error,
        ),
        Outcome::PendingApproval(request) => (
            "pending".to_owned(),
            request.reason.as_str().to_owned(),
            false,
        ),
    }
}

/// An object schema with the fields the policy probes judge: `path`, `command`, `argv`, `mode`.
pub fn probe_schema() -> Value {
    json!({"type": "object", "properties": {
        "path": {"type": "string"}, "command": {"type": "string"},
        "argv": {"type": "array", "items": {"type": "string"}}, "mode": {"type": "string"}}})
}

/// Tools named `names` with [`probe_schema`], counting their runs in `runs`.
pub fn probe_tools(runs: &Arc<AtomicUsize>, names: &[&str]) -> ToolRegistry {
    registry(names.iter().map(|name| counted(name, probe_schema(), runs)))
}

/// The rule policy `text` over `registry`; a load error fails the test with its message.
pub fn rule_policy(text: &str, registry: &ToolRegistry) -> RulePolicy {
    RulePolicy::from_json(text, registry).unwrap_or_else(|e| panic!("{e}"))
}

/// Whether the call ran: completed, and not as an error.
pub fn ran(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Completed(result) if !result.is_error)
}
