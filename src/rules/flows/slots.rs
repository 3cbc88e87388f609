//! What a call looks at and is recorded in: the counters of the flow rules covering it and of
//! the histories observing it.

use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::{canonical_json, hex_digest};
use crate::contract::Principal;
use crate::decision::{PolicyAction, RateSlot, Reason, Refuses};
use crate::rules::condition::{CallPaths, PathSettings};

use super::*;

impl Flows {
    /// The counters a call looks at (flow rules covering it) and is recorded in (histories
    /// observing it). A `same` value that cannot be judged is a counter that always refuses, so
    /// the rule takes its action and every other counter still judges the call.
    pub(in crate::rules) fn slots(
        &self,
        tool: &str,
        caller: Option<&Principal>,
        arguments: &Value,
        paths: &PathSettings,
    ) -> Vec<RateSlot> {
        let mut slots = Vec::new();
        let mut call_paths = CallPaths::new(paths);
        for flow in self.provenance.iter().filter(|flow| flow.covers(tool)) {
            flow.slots(tool, arguments, &mut call_paths, &mut slots);
        }
        for flow in self.flows.iter().filter(|flow| flow.covers.matches(tool)) {
            // Restrictive: a call it cannot judge is judged by it.
            let applies = flow
                .when
                .as_ref()
                .is_none_or(|when| when.truth(tool, arguments, &mut call_paths) != Some(false));
            if !applies {
                continue;
            }
            let history = &self.histories[flow.history];
            let base = history.bucket_for(caller);
            let slot = |bucket: String, refuses| {
                let slot = RateSlot::new(
                    Arc::clone(&flow.id),
                    flow.window_ms,
                    0,
                    flow.action,
                    flow.reason.clone(),
                )
                .in_bucket(bucket)
                .judged(0, refuses)
                .of_flow();
                let slot = match &flow.approvers {
                    Some(approvers) => slot.approved_by(Arc::clone(approvers)),
                    None => slot,
                };
                if history.by_principal {
                    slot.across_sessions()
                } else {
                    slot
                }
            };
            let refuses = if history.restricts {
                Refuses::AnyCounted
            } else {
                Refuses::NothingCounted
            };
            let (Some(now), Some((_, compared))) = (&flow.now, &history.same) else {
                slots.push(slot(base, refuses));
                continue;
            };
            match keys(now.resolve(arguments), *compared, paths) {
                // Each element of a list is matched on its own, as a limit's keys are: `after`
                // refuses if any was seen, `unless_after` unless every one was.
                Some(keys) => {
                    for key in keys {
                        slots.push(slot(format!("{base}:{key}"), refuses));
                    }
                    if history.restricts {
                        slots.push(slot(format!("{base}:{ANY_KEY}"), refuses));
                    }
                }
                // What cannot be matched takes the rule's action — as a counter that always
                // refuses, so every other limit and flow rule still judges the call.
                None => slots.push(slot(format!("{base}:unjudged"), Refuses::Always)),
            }
        }
        for history in self
            .histories
            .iter()
            .filter(|history| history.covers.matches(tool))
        {
            let recorded = history.when.as_ref().is_none_or(|when| {
                when.truth(tool, arguments, &mut call_paths)
                    .unwrap_or(history.restricts)
            });
            if !recorded {
                continue;
            }
            let base = history.bucket_for(caller);
            let buckets = match &history.same {
                None => vec![base],
                Some((earlier, compared)) => {
                    match keys(earlier.resolve(arguments), *compared, paths) {
                        Some(keys) => keys
                            .into_iter()
                            .map(|key| format!("{base}:{key}"))
                            .collect(),
                        None if history.restricts => vec![format!("{base}:{ANY_KEY}")],
                        None => continue,
                    }
                }
            };
            slots.extend(
                buckets
                    .into_iter()
                    .map(|bucket| history.record_slot(bucket)),
            );
        }
        slots
    }
}

impl Flows {
    /// The records a result labelled `label` takes: in every `after` history looking for that
    /// label, as a call of a labelled tool (a history comparing a value records under the key
    /// every check looks at: a result has no argument to compare). `unless_after` histories get
    /// nothing: a result never permits.
    pub(in crate::rules) fn label_records(
        &self,
        label: &str,
        caller: Option<&Principal>,
    ) -> Vec<RateSlot> {
        self.histories
            .iter()
            .filter(|history| history.restricts && history.result_label.as_deref() == Some(label))
            .map(|history| {
                let base = history.bucket_for(caller);
                let bucket = if history.same.is_some() {
                    format!("{base}:{ANY_KEY}")
                } else {
                    base
                };
                history.record_slot(bucket)
            })
            .collect()
    }
}

impl History {
    /// The record of one event in `bucket`: it never refuses, and only whether such an event
    /// happened is asked of it, so the latest one is kept.
    fn record_slot(&self, bucket: String) -> RateSlot {
        let slot = RateSlot::new(
            "flow-record",
            self.window_ms,
            0,
            PolicyAction::Deny,
            Reason::from_static("recorded for a flow rule"),
        )
        .in_bucket(bucket)
        .judged(1, Refuses::Never)
        .of_flow()
        .replacing();
        if self.by_principal {
            slot.across_sessions()
        } else {
            slot
        }
    }

    fn bucket_for(&self, caller: Option<&Principal>) -> String {
        if !self.by_principal {
            return self.bucket.clone();
        }
        let who = caller.map_or_else(
            || "null".to_owned(),
            |p| canonical_json(&Value::from(p.id.as_str())),
        );
        format!(
            "{}:p:{}",
            self.bucket,
            hex_digest(&Sha256::digest(who.as_bytes()))
        )
    }
}

/// The digests a value is matched by (never the value), an element of a list at a time; `None`
/// when it cannot be judged (a path spelling no lexical check can read, a non-string compared as a
/// path, more elements than a call may count).
fn keys(value: Option<&Value>, compared: SameText, paths: &PathSettings) -> Option<Vec<String>> {
    let mut elements = Vec::new();
    if let Some(value) = value {
        leaves(value, &mut elements);
    }
    if elements.is_empty() {
        return Some(vec![digest("none")]);
    }
    // More elements than a call's keys may have: not matched one by one (see ANY_KEY).
    if elements.len() > crate::limits::MAX_KEYS_PER_CALL {
        return None;
    }
    let mut keys = Vec::with_capacity(elements.len());
    for element in elements {
        let text = match (element, compared) {
            (Value::String(path), SameText::Path) => {
                format!("path:/{}", paths.components(path)?.join("/"))
            }
            (_, SameText::Path) => return None,
            (value, SameText::Exact) => canonical_json(value),
            (value, SameText::Folded) => {
                canonical_json(&crate::rules::limits::folded(&as_text(value)))
            }
            (value, SameText::Normalized) => canonical_json(
                &crate::rules::condition::compared_value(&as_text(value), true),
            ),
        };
        let key = digest(&text);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Some(keys)
}

/// A number as its text, so `1` and `"1"` name one order when text is compared loosely.
fn as_text(value: &Value) -> Value {
    match value {
        Value::Number(number) => Value::String(canonical_json(&Value::Number(number.clone()))),
        other => other.clone(),
    }
}

fn digest(text: &str) -> String {
    hex_digest(&Sha256::digest(text.as_bytes()))
}

/// The elements a value is matched by: each of a list's (nested lists by theirs), else the
/// value; `null` is no element.
fn leaves<'v>(value: &'v Value, out: &mut Vec<&'v Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
        Value::Null => {}
        other => out.push(other),
    }
}
