//! What happens to a result between the handler and the model: the policy's result rules judge
//! it (withheld, redacted, or the session labelled), then its values are recorded for the
//! provenance rules (see [`crate::provenance`] and [`crate::rules::ResultRuleConfig`]).

use std::sync::Arc;

use super::ToolController;
use super::gate::Gate;
use crate::Policy;
use crate::contract::{Principal, ToolResult};
use crate::limits::{Take, Taken};
use crate::provenance::ResultSources;
use crate::runtime::PreparedToolCall;

/// What is done with a result about to be returned: decided before the handler runs (which
/// consumes the call); `None` when the policy in force neither judges nor records it.
pub(super) struct Observing {
    policy: Arc<dyn Policy>,
    tool: String,
    principal: Option<Arc<Principal>>,
    judges: bool,
    sources: Option<ResultSources>,
}

impl ToolController {
    /// What will be done with the result of `call` under `policy`.
    #[inline(always)]
    pub(super) fn observing(&self, gate: &Gate, call: &PreparedToolCall) -> Option<Observing> {
        // Fast path: a `ToolPolicy` (the gate's table) neither judges nor records results.
        if gate.by_tool.is_some() {
            // Tests run with debug assertions: a `ToolPolicy` that came to judge or record
            // results would fail every test that calls one.
            debug_assert!(
                !gate.policy.judges_results(call.tool_name())
                    && gate.policy.result_sources(call.tool_name()).is_none(),
                "a ToolPolicy's results are neither judged nor recorded"
            );
            return None;
        }
        let policy = &gate.policy;
        let tool = call.tool_name();
        let judges = policy.judges_results(tool);
        let mut sources = policy.result_sources(tool);
        if let Some(sources) = sources.as_mut().filter(|sources| sources.lookup) {
            // A directory is read only whole: a call with arguments (a search, a page, one user)
            // chooses which records come back — a word shared with the records left out would
            // look unique — and may write itself into them.
            let whole = match call.arguments() {
                serde_json::Value::Object(arguments) => arguments.is_empty(),
                serde_json::Value::Null => true,
                _ => false,
            };
            sources.lookup = whole;
        }
        if !judges && sources.is_none() {
            return None;
        }
        Some(Observing {
            policy: Arc::clone(policy),
            tool: tool.to_owned(),
            principal: call.call().principal.clone(),
            judges,
            sources,
        })
    }

    /// What a running call of `tool` sends toward the model besides its result — a progress
    /// message, a log message, a request it makes of the client — judged as its result would be,
    /// for `principal`: the policy's result rules (a label recorded, a match redacted) and then
    /// provenance (its values recorded as the tool's results' are). `Some` of the text to send
    /// (redacted where a rule redacts; `text` itself where no rule matched), or `None` when a
    /// rule withholds it, or its label or values cannot be recorded: send none of it. Without
    /// this, an upstream's progress messages carried a private key past a rule withholding it in
    /// results, and an IBAN past a provenance rule that denies one a result named.
    pub fn judge_interim(
        &self,
        tool: &str,
        principal: Option<&Principal>,
        text: &str,
    ) -> Option<String> {
        self.judge_interim_result(tool, principal, ToolResult::ok("interim", text))
            .map(|judged| judged.content)
    }

    /// [`judge_interim`](Self::judge_interim) of JSON the call sends (a log message's data, an
    /// upstream's sampling request): judged leaf by leaf, as a result's structured content is,
    /// and then whole, as its JSON text. Leaf by leaf, a pattern anchored at a string's start
    /// (`^password=`) holds as it does in a result (read only whole, it missed: a second
    /// independent attack); whole, compact and spaced, a pattern over a key and its value
    /// (`"password": "…"`, `"password":"…"`) holds (read only leaf by leaf, it missed: a third). `Some` of the value to send, its strings
    /// redacted where a rule redacts them; `None` where a rule withholds it, or matches the JSON
    /// text beyond its strings (that cannot be redacted in place).
    pub fn judge_interim_value(
        &self,
        tool: &str,
        principal: Option<&Principal>,
        value: &serde_json::Value,
    ) -> Option<serde_json::Value> {
        let result = ToolResult {
            structured: Some(value.clone()),
            ..ToolResult::ok("interim", "")
        };
        let leaves = self
            .judge_interim_result(tool, principal, result)?
            .structured
            .unwrap_or_default();
        // Whole, compact and spaced: a pattern written either way (`"key":"`, `"key": "`).
        for text in [leaves.to_string(), crate::spaced_json::spaced_json(&leaves)] {
            let whole = self.judge_interim(tool, principal, &text)?;
            if whole != text {
                return None;
            }
        }
        Some(leaves)
    }

    /// `result`, a running call's interim words, judged as its result would be; `None` withheld.
    fn judge_interim_result(
        &self,
        tool: &str,
        principal: Option<&Principal>,
        result: ToolResult,
    ) -> Option<ToolResult> {
        let gate = self.gate();
        let policy = &gate.policy;
        let judges = policy.judges_results(tool);
        // A directory is read only from a whole result, never from what a call says meanwhile.
        let sources = policy.result_sources(tool).map(|sources| ResultSources {
            lookup: false,
            ..sources
        });
        if !judges && sources.is_none() {
            return Some(result);
        }
        let observing = Observing {
            policy: Arc::clone(policy),
            tool: tool.to_owned(),
            principal: principal.map(|principal| Arc::new(principal.clone())),
            judges,
            sources,
        };
        let judged = self.observed_by(observing, result);
        (!judged.is_error).then_some(judged)
    }

    /// `result` as the model gets it: judged by the result rules, its labels recorded, its
    /// values recorded. A label that cannot be recorded withholds the result (the flow rules
    /// reading it would not see it).
    #[inline(always)]
    pub(super) fn observed(&self, observing: Option<Observing>, result: ToolResult) -> ToolResult {
        // Fast path: a policy that neither judges nor records results costs one branch here.
        match observing {
            None => result,
            Some(observing) => self.observed_by(observing, result),
        }
    }

    /// [`observed`](Self::observed) under a policy that judges or records results.
    #[inline(never)]
    fn observed_by(&self, observing: Observing, result: ToolResult) -> ToolResult {
        let mut result = result;
        if observing.judges {
            let labels = observing.policy.judge_result(
                &observing.tool,
                observing.principal.as_deref(),
                &mut result,
            );
            if !labels.is_empty() {
                let takes: Vec<Take<'_>> = labels
                    .iter()
                    .map(|slot| Take {
                        refuses: slot.refuses,
                        weight: slot.weight,
                        replaces: slot.replaces,
                        across_sessions: slot.across_sessions,
                        ..Take::limit(&slot.bucket, slot.window_ms, 0)
                    })
                    .collect();
                if !matches!(
                    self.counters.take(&takes, self.clock.now_ms()),
                    Ok(Taken::All)
                ) {
                    return ToolResult::error(
                        result.call_id,
                        "the tool ran, but its result is withheld: a result rule labelled it and the label could not be recorded for the flow rules",
                    );
                }
            }
        }
        match &observing.sources {
            Some(sources) => self.record_values(
                sources,
                observing.principal.as_deref(),
                &observing.tool,
                result,
            ),
            None => result,
        }
    }
}
