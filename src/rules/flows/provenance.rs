//! Provenance conditions: a flow rule judging an argument by where its value was seen before —
//! in results of untrusted or trusted tools, of a named tool or label, or in what the person
//! asked (see [`crate::provenance`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::load::Context;
pub use super::reading::{TokenKind, ValueRead};
use super::{Covers, PerTool};
use crate::canonical::{canonical_json, hex_lower};
use crate::decision::{PolicyAction, RateSlot, Reason, Refuses, SlotKind};
use crate::provenance::extract::{self, Token};
use crate::provenance::{Look, ValueLook, source};
use crate::rules::condition::{CallPaths, Pointer};

/// A flow rule's condition on where an argument's value was seen: it holds for a call when some
/// value read at `pointer` was seen in any of `seen_in` (if given) and in none of `not_seen_in`.
///
/// # Examples
///
/// "A payee seen only in untrusted results, never named by the person, is asked":
///
/// ```
/// use toolgate::rules::FlowConfig;
///
/// let rule: FlowConfig = serde_json::from_str(r#"{
///     "id": "payee-from-a-document", "tool": "send_money", "action": "ask",
///     "reason": "the payee came from a document, not from you",
///     "provenance": {"pointer": "/iban", "seen_in": ["untrusted"],
///                    "not_seen_in": ["person", "trusted"]}}"#)?;
/// assert!(rule.provenance.is_some());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ValueProvenance {
    /// The argument judged: a JSON Pointer naming a field of every covered tool's schema. A list
    /// there is judged an element at a time.
    pub pointer: String,
    /// How its values are read: the whole value (default), each value inside a text (`tokens`:
    /// the links in a message body), a link's host (`host`), or an amount of money (`amount`:
    /// `35.5` or `"EUR 35.50"`; `minor_units`: a whole number of cents, `3550`).
    #[serde(default, skip_serializing_if = "ValueRead::is_value")]
    pub read: ValueRead,
    /// With `read: "tokens"`: only these kinds of values inside the text are judged (`link` —
    /// a link and its host —, `email`, `iban`, `number`, `path`, `handle`); empty: every kind.
    /// "A message carrying a link from a web page" reads `["link"]`, so a reference number
    /// copied from the same page is not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<TokenKind>,
    /// Where the value must have been seen for the rule to hold (any of them); empty: anywhere
    /// or nowhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_in: Vec<ValueSource>,
    /// Where the value must not have been seen for the rule to hold (none of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_seen_in: Vec<ValueSource>,
    /// The rule holds only in a session where the person named some value of the kind judged
    /// (an amount, when it reads an amount — any currency or word for money, read as an amount
    /// or not): "when the person gave an amount, another is asked", while a task whose amount
    /// only a bill names is not. Goes with `"person"` in `not_seen_in`. A session whose records
    /// overflowed, or whose person's request could not be recorded, counts as one where the
    /// person named one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub if_person_named: bool,
}

/// Where a value may have been seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ValueSource {
    /// A built-in source.
    Kind(SourceKind),
    /// Results of a tool (or pattern), or of the tools carrying a label: `{"tool": "web__*"}`,
    /// `{"label": "mail"}`.
    Named(NamedSource),
}

/// The built-in sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// What the person asked (see `ToolController::record_person_request`).
    Person,
    /// Results of tools the policy's `sources` does not call trusted.
    Untrusted,
    /// Results of tools the policy's `sources` calls trusted.
    Trusted,
    /// Results of any tool.
    Results,
}

/// Results of named tools: exactly one of `tool` and `label`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct NamedSource {
    /// A tool's exact name or a pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A label of the policy's `labels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// A provenance flow, compiled.
#[derive(Debug)]
pub(super) struct ProvenanceFlow {
    id: Arc<str>,
    covers: Covers,
    when: Option<PerTool>,
    pointer: Pointer,
    read: ValueRead,
    // With `Tokens`: the kinds judged (empty: all).
    kinds: Vec<TokenKind>,
    // Record names: seen in any of these (empty: no such requirement) …
    seen_in: Vec<Arc<str>>,
    // … and, for a result source among them, an overflowed session counts as seen.
    seen_in_results: bool,
    // … and in none of these …
    not_seen_in: Vec<Arc<str>>,
    // … and, if set, the person named a value of the same kind (or the session overflowed).
    if_person_named: bool,
    action: PolicyAction,
    reason: Reason,
    approvers: Option<Arc<crate::decision::Approvers>>,
}

/// Compiles a flow rule's `provenance`; problems are pushed with their places.
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one rule, each checked"
)]
pub(super) fn load(
    config: &super::FlowConfig,
    provenance: &ValueProvenance,
    place: &str,
    context: &Context<'_>,
    labels: &std::collections::BTreeMap<String, Vec<String>>,
    classes: &mut super::sources::Classes,
    reason: Reason,
    approvers: Option<Arc<crate::decision::Approvers>>,
    push: &mut dyn FnMut(String, String),
) -> Option<ProvenanceFlow> {
    if config.after.is_some() || config.unless_after.is_some() {
        push(
            place.to_owned(),
            "a rule with provenance looks at where values were seen, not at earlier calls: drop after and unless_after".to_owned(),
        );
    }
    if !provenance.kinds.is_empty() && provenance.read != ValueRead::Tokens {
        push(
            format!("{place}.provenance.kinds"),
            "kinds says which values inside a text are judged: it goes with read \"tokens\" only"
                .to_owned(),
        );
    }
    if provenance.if_person_named
        && !provenance
            .not_seen_in
            .contains(&ValueSource::Kind(SourceKind::Person))
    {
        push(
            format!("{place}.provenance.if_person_named"),
            "if_person_named narrows a rule on values the person did not name: it goes with \"person\" in not_seen_in".to_owned(),
        );
    }
    if provenance.seen_in.is_empty() && provenance.not_seen_in.is_empty() {
        push(
            format!("{place}.provenance"),
            "needs seen_in or not_seen_in (or both)".to_owned(),
        );
    }
    let (covers, tools) = context.target(
        place,
        config.tool.as_deref(),
        config.label.as_deref(),
        labels,
        push,
    )?;
    for tool in &tools {
        let schema = context
            .registry
            .resolve(tool)
            .map(|t| &t.spec().input_schema);
        if schema.map(|s| crate::rules::schema_pointer::lookup(s, &provenance.pointer))
            != Some(crate::rules::condition::SchemaLookup::Declared)
        {
            push(
                format!("{place}.provenance.pointer"),
                format!(
                    "{:?} names no field of tool {tool:?}'s schema",
                    provenance.pointer
                ),
            );
        } else if let Some(schema) = schema
            && let Some(problem) =
                super::reading::reading_fits(provenance.read, schema, &provenance.pointer)
        {
            push(
                format!("{place}.provenance.read"),
                format!("{problem} (tool {tool:?})"),
            );
        }
    }
    let when = config
        .when
        .as_ref()
        .map(|when| context.compile(when, &format!("{place}.when"), &tools, true, push));
    let mut names = |sources: &[ValueSource], side: &str| -> (Vec<Arc<str>>, bool) {
        let mut out: Vec<Arc<str>> = Vec::new();
        let mut results = false;
        for (index, source) in sources.iter().enumerate() {
            let built_in = |name: &str| vec![Arc::<str>::from(name)];
            let more = match source {
                ValueSource::Kind(SourceKind::Person) => built_in(source::PERSON),
                ValueSource::Kind(SourceKind::Untrusted) => built_in(source::UNTRUSTED),
                ValueSource::Kind(SourceKind::Trusted) => built_in(source::TRUSTED),
                ValueSource::Kind(SourceKind::Results) => {
                    vec![Arc::from(source::UNTRUSTED), Arc::from(source::TRUSTED)]
                }
                ValueSource::Named(named) => {
                    let Some((source_covers, _)) = context.target(
                        &format!("{place}.provenance.{side}[{index}]"),
                        named.tool.as_deref(),
                        named.label.as_deref(),
                        labels,
                        push,
                    ) else {
                        continue;
                    };
                    // Named by what it is as written — a label with the tools it names, so two
                    // layers' labels of one name but other tools never share records — so a
                    // reload that keeps it keeps its records.
                    let identity = canonical_json(&serde_json::json!({
                        "tool": named.tool,
                        "label": named.label,
                        "tools": named.label.as_ref().and_then(|label| labels.get(label)),
                    }));
                    let name: Arc<str> = Arc::from(format!(
                        "s{}",
                        &hex_lower(&Sha256::digest(identity.as_bytes()))[..16]
                    ));
                    if !classes.named.iter().any(|(known, _)| *known == name) {
                        classes.named.push((Arc::clone(&name), source_covers));
                    }
                    vec![name]
                }
            };
            results |= !matches!(source, ValueSource::Kind(SourceKind::Person));
            for name in more {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        (out, results)
    };
    let (seen_in, seen_in_results) = names(&provenance.seen_in, "seen_in");
    let (not_seen_in, _) = names(&provenance.not_seen_in, "not_seen_in");
    Some(ProvenanceFlow {
        id: Arc::from(config.id.as_str()),
        covers,
        when,
        pointer: Pointer::parse(&provenance.pointer),
        read: provenance.read,
        kinds: provenance.kinds.clone(),
        seen_in,
        seen_in_results,
        not_seen_in,
        if_person_named: provenance.if_person_named,
        action: config.action,
        reason,
        approvers,
    })
}

impl ProvenanceFlow {
    pub(super) fn covers(&self, tool: &str) -> bool {
        self.covers.matches(tool)
    }

    /// The looks a call's value is judged by: for each value read, one group per source it
    /// must have been seen in (each with every source it must not have been seen in); a value
    /// that cannot be read, or more values than a call may have, takes the rule's action.
    pub(super) fn slots<'a>(
        &'a self,
        tool: &str,
        arguments: &'a Value,
        paths: &mut CallPaths<'a>,
        slots: &mut Vec<RateSlot>,
    ) {
        let applies = self
            .when
            .as_ref()
            .is_none_or(|when| when.truth(tool, arguments, paths) != Some(false));
        if !applies {
            return;
        }
        let slot = |refuses| {
            let slot = RateSlot::new(
                Arc::clone(&self.id),
                crate::provenance::KEPT_FOR_MS,
                0,
                self.action,
                self.reason.clone(),
            )
            .judged(0, refuses)
            .of_kind(SlotKind::Provenance);
            match &self.approvers {
                Some(approvers) => slot.approved_by(Arc::clone(approvers)),
                None => slot,
            }
        };
        let resolved = self.pointer.resolve(arguments);
        let Some(tokens) = super::reading::values_at(self.read, &self.kinds, resolved) else {
            slots.push(slot(Refuses::Always).in_bucket(format!("{}:unjudged", self.id)));
            return;
        };
        let mut group = 0_u32;
        // Overflowed (`None`): as if seen in every result source.
        let overflowed_too = self.seen_in_results || self.seen_in.is_empty();
        let positives = self
            .seen_in
            .iter()
            .map(Some)
            .chain(overflowed_too.then_some(None));
        // With `if_person_named`: each group also needs the person to have named a value of
        // the token's kind — or the session to have overflowed, when that record may be lost.
        let person_named = |token: &Token| {
            let marker = Token {
                kind: extract::Kind::AnyOf,
                canonical: token.kind.tag().to_owned(),
            };
            [
                ValueLook(Look::Seen {
                    source: Arc::from(crate::provenance::source::PERSON),
                    token: marker,
                }),
                ValueLook(Look::Overflowed),
            ]
        };
        for token in &tokens {
            let conditions: Vec<Option<ValueLook>> = if self.if_person_named {
                person_named(token).into_iter().map(Some).collect()
            } else {
                vec![None]
            };
            for condition in &conditions {
                for positive in positives.clone() {
                    let look = |source: &Arc<str>| {
                        ValueLook(Look::Seen {
                            source: Arc::clone(source),
                            token: token.clone(),
                        })
                    };
                    match (positive, self.seen_in.is_empty()) {
                        (Some(source), _) => {
                            slots.push(
                                slot(Refuses::AnyCounted)
                                    .looking_up(look(source))
                                    .in_group(group),
                            );
                        }
                        (None, false) => slots.push(
                            slot(Refuses::AnyCounted)
                                .looking_up(ValueLook(Look::Overflowed))
                                .in_group(group),
                        ),
                        (None, true) => {}
                    }
                    for source in &self.not_seen_in {
                        slots.push(
                            slot(Refuses::NothingCounted)
                                .looking_up(look(source))
                                .in_group(group),
                        );
                    }
                    if let Some(condition) = condition {
                        slots.push(
                            slot(Refuses::AnyCounted)
                                .looking_up(condition.clone())
                                .in_group(group),
                        );
                    }
                    group += 1;
                }
            }
        }
    }
}
