//! Result rules: what a tool returns is judged before the model sees it — secrets, personal data,
//! size, a pattern — and labelled (so flow rules restrict what follows), redacted, or withheld.

mod detect;
mod grouped;
mod texts;

use std::collections::BTreeSet;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use detect::Detector;
use texts::{Mirrors, for_each_text, respelled, whole_texts};

use crate::contract::ToolResult;
use crate::decision::Reason;
use crate::policy::LoadProblem;
use crate::registry::ToolRegistry;
use crate::rules::groups::ToolName;

/// The largest compiled size of a result rule's `pattern` (the `regex` crate's limit), so a
/// policy cannot make matching costly.
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// One result rule as written: for the results of `tool`, when any of `detect` finds something,
/// `pattern` matches, or the result is larger than `max_bytes`, take `action`.
///
/// # Examples
///
/// "After a result carrying a private key or a token, nothing leaves without asking":
///
/// ```
/// use toolgate::rules::ResultRuleConfig;
///
/// let rule: ResultRuleConfig = serde_json::from_str(r#"{
///     "id": "secrets-seen", "tool": "*", "detect": ["private_key", "cloud_token", "api_token"],
///     "action": "label", "label": "secret", "reason": "a secret reached the model"}"#)?;
/// assert_eq!(rule.label.as_deref(), Some("secret"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ResultRuleConfig {
    /// A unique id (among rules, limits and flows too), named by what the rule does.
    pub id: String,
    /// The tools whose results it judges: an exact name or a pattern.
    pub tool: String,
    /// What it looks for in every text of the result (its text, each string of its structured
    /// content, content blocks and `_meta`, and their JSON read whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detect: Vec<Detector>,
    /// A regular expression (the `regex` crate's syntax, matched in linear time) it looks for,
    /// where `detect` looks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The largest result it lets through unjudged, in bytes of its text and JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// `label`, `redact` or `withhold`.
    pub action: ResultAction,
    /// For `label`: the label the session gets, which flow rules read as an earlier call's
    /// (`"after": {"label": "secret", …}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Why; named in a withheld result; not empty.
    pub reason: String,
}

/// What a result rule does with a result it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultAction {
    /// The result passes; the session is labelled, as if a tool with the label had run.
    Label,
    /// Every match is replaced by `[redacted by result rule "ID"]`; the rest passes.
    Redact,
    /// The model gets an error result saying the tool ran and its result was withheld.
    Withhold,
}

#[derive(Debug)]
struct Compiled {
    id: Arc<str>,
    tool: ToolName,
    detect: Vec<Detector>,
    pattern: Option<Regex>,
    max_bytes: Option<u64>,
    action: ResultAction,
    label: Option<String>,
    reason: Reason,
}

impl Compiled {
    fn covers(&self, tool: &str) -> bool {
        self.tool.matches(tool)
    }

    fn detector_spans(&self, text: &str, out: &mut Vec<(usize, usize)>) {
        for detector in &self.detect {
            detector.find(text, out);
        }
    }

    /// Whether it finds anything in `text` or in its `other_spelling`.
    fn holds_in(&self, text: &str, other_spelling: Option<&str>) -> bool {
        let mut spans = Vec::new();
        self.spans(text, &mut spans);
        if let Some(other) = other_spelling {
            self.spans(other, &mut spans);
        }
        !spans.is_empty()
    }

    fn spans(&self, text: &str, out: &mut Vec<(usize, usize)>) {
        self.detector_spans(text, out);
        if let Some(pattern) = &self.pattern {
            out.extend(
                pattern
                    .find_iter(text)
                    .filter(|found| !found.is_empty())
                    .map(|found| (found.start(), found.end())),
            );
        }
    }
}

/// A policy's result rules, compiled.
#[derive(Debug, Default)]
pub(super) struct ResultRules {
    rules: Vec<Compiled>,
}

/// The labels result rules give, for the flow rules that read them.
pub(super) fn labels_given(configs: &[ResultRuleConfig]) -> BTreeSet<String> {
    configs
        .iter()
        .filter(|config| config.action == ResultAction::Label)
        .filter_map(|config| config.label.clone())
        .collect()
}

impl ResultRules {
    /// Checks and compiles `configs`; problems are pushed with their places.
    pub(super) fn load(
        configs: &[ResultRuleConfig],
        registry: &ToolRegistry,
        taken_ids: &BTreeSet<&str>,
        problems: &mut Vec<LoadProblem>,
    ) -> Self {
        let mut out = Self::default();
        let mut ids = BTreeSet::new();
        for (index, config) in configs.iter().enumerate() {
            let place = format!("results[{index}] (id {:?})", config.id);
            let mut push = |message: String| {
                problems.push(LoadProblem {
                    place: place.clone(),
                    message,
                });
            };
            if let Some(problem) = crate::rules::id_problem(&config.id) {
                push(problem.to_owned());
            } else if taken_ids.contains(config.id.as_str()) || !ids.insert(config.id.as_str()) {
                push("id repeats another result rule's, rule's, limit's or flow's id".to_owned());
            }
            let reason = Reason::new(config.reason.clone());
            if reason.is_err() {
                push("reason is empty".to_owned());
            }
            if config.detect.is_empty() && config.pattern.is_none() && config.max_bytes.is_none() {
                push("needs detect, pattern or max_bytes".to_owned());
            }
            if config.action == ResultAction::Redact
                && config.max_bytes.is_some()
                && config.detect.is_empty()
                && config.pattern.is_none()
            {
                push("redact replaces what detect or pattern finds; max_bytes alone can only label or withhold".to_owned());
            }
            match (config.action, &config.label) {
                (ResultAction::Label, None) => push("action label needs a label".to_owned()),
                (ResultAction::Label, Some(label)) if label.trim().is_empty() => {
                    push("label is empty".to_owned());
                }
                (ResultAction::Redact | ResultAction::Withhold, Some(_)) => {
                    push("label goes with action label only".to_owned());
                }
                _ => {}
            }
            let tool = ToolName::new(&config.tool);
            let covered = registry.specs().any(|spec| tool.matches(&spec.name));
            if !covered {
                push(format!("{:?} covers no tool in the registry", config.tool));
            }
            let pattern = config.pattern.as_ref().and_then(|pattern| {
                let compiled = regex::RegexBuilder::new(pattern)
                    .size_limit(MAX_PATTERN_BYTES)
                    .build()
                    .map_err(|error| push(format!("pattern does not compile: {error}")))
                    .ok()?;
                // Empty matches are ignored (they mark nothing), so a pattern matching only the
                // empty string (`""`, `^`, `\b`) would never hold: a rule thought active that does
                // nothing (an independent attack loaded one without a word).
                let lengths = regex_syntax::Parser::new().parse(pattern).ok().map(|hir| {
                    let properties = hir.properties();
                    (properties.minimum_len(), properties.maximum_len())
                });
                match lengths {
                    // A class of nothing (`[^\s\S]`): no text holds a match.
                    Some((None, _)) => {
                        push("pattern can match nothing: it would never match".to_owned());
                        return None;
                    }
                    Some((_, Some(0))) => {
                        push("pattern matches only the empty string, and empty matches are ignored: it would never match".to_owned());
                        return None;
                    }
                    _ => {}
                }
                Some(compiled)
            });
            let Ok(reason) = reason else { continue };
            out.rules.push(Compiled {
                id: Arc::from(config.id.as_str()),
                tool,
                detect: config.detect.clone(),
                pattern,
                max_bytes: config.max_bytes,
                action: config.action,
                label: config.label.clone(),
                reason,
            });
        }
        out
    }

    /// Whether any rule judges `tool`'s results.
    pub(super) fn covers(&self, tool: &str) -> bool {
        self.rules.iter().any(|rule| rule.covers(tool))
    }

    /// Judges `result` of `tool` in place — withheld, or its matches redacted — and returns the
    /// labels the session gets. One walk over the result's texts: in each, the rules that only
    /// look (label, withhold) read it as the tool returned it, then the redacting rules replace
    /// what they find, in order.
    pub(super) fn judge(&self, tool: &str, result: &mut ToolResult) -> Vec<String> {
        let rules: Vec<&Compiled> = self.rules.iter().filter(|rule| rule.covers(tool)).collect();
        if rules.is_empty() {
            return Vec::new();
        }
        let size = rules
            .iter()
            .any(|rule| rule.max_bytes.is_some())
            .then(|| result_size(result));
        let mut hit: Vec<bool> = rules
            .iter()
            .map(|rule| {
                rule.max_bytes
                    .zip(size)
                    .is_some_and(|(most, size)| size > most)
            })
            .collect();
        if let Some(rule) = withholding(&rules, &hit) {
            return withhold(result, rule);
        }
        if let Some(rule) = split_across_blocks(&rules, result) {
            return withhold(result, rule);
        }
        let markers: Vec<String> = rules
            .iter()
            .map(|rule| format!("[redacted by result rule {:?}]", &*rule.id))
            .collect();
        let finds = |rule: &Compiled| !(rule.detect.is_empty() && rule.pattern.is_none());
        // A redacting rule that still finds something in another spelling of a text once its
        // matches are redacted (a card number in fullwidth digits or grouped by
        // no-break spaces): that spelling cannot be redacted in place, so the result is withheld.
        let mut unredacted = vec![false; rules.len()];
        // The second reading is for the detectors and patterns; without any, it would be work
        // for nothing. A pattern reads it too: `ORD-12\u{200b}3456` showed the model
        // `ORD-123456` past a rule withholding order ids.
        let finding = rules.iter().any(|rule| finds(rule));
        let looks = |rule: &&Compiled| rule.action != ResultAction::Redact && finds(rule);
        // The JSON of structured content, blocks and `_meta` read whole by the rules that look,
        // as the tool returned it (see `whole_texts`).
        let redacting = rules
            .iter()
            .any(|rule| rule.action == ResultAction::Redact && finds(rule));
        let mirrors = if redacting {
            Mirrors::of(result)
        } else {
            Mirrors::default()
        };
        let looked_wholes = if rules.iter().any(looks) {
            whole_texts(result)
        } else {
            Vec::new()
        };
        for_each_text(result, &mut |text| {
            let other_spelling = finding.then(|| respelled(text)).flatten();
            for (index, rule) in rules.iter().enumerate() {
                if rule.action != ResultAction::Redact && !hit[index] && finds(rule) {
                    let mut spans = Vec::new();
                    rule.spans(text, &mut spans);
                    if let Some(other) = &other_spelling {
                        rule.spans(other, &mut spans);
                    }
                    hit[index] = !spans.is_empty();
                }
            }
            for (index, rule) in rules.iter().enumerate() {
                // A key whose rest stands elsewhere cannot be redacted whole here.
                if rule.action == ResultAction::Redact
                    && rule
                        .detect
                        .iter()
                        .any(|detector| detector.leaves_a_key_open(text))
                {
                    unredacted[index] = true;
                }
                if rule.action == ResultAction::Redact && redact(text, rule, &markers[index]) {
                    hit[index] = true;
                }
                // The markers put in are no match of the rule's (a pattern may match one): read
                // as line breaks, which no detector reads across.
                if rule.action == ResultAction::Redact
                    && finds(rule)
                    && other_spelling.is_some()
                    && let Some(left) = respelled(&text.replace(&markers[index], "\n"))
                {
                    let mut spans = Vec::new();
                    rule.spans(&left, &mut spans);
                    unredacted[index] |= !spans.is_empty();
                }
            }
        });
        for whole in &looked_wholes {
            let other_spelling = respelled(whole);
            for (index, rule) in rules.iter().enumerate() {
                if looks(rule) && !hit[index] {
                    hit[index] = rule.holds_in(whole, other_spelling.as_deref());
                }
            }
        }
        // What redacting left, read whole: a match there runs beyond one string (a key and its
        // value), which no redaction in place replaces, so the result is withheld. The markers
        // put in are read as line breaks, as above.
        if redacting {
            for whole in whole_texts(result) {
                for (index, rule) in rules.iter().enumerate() {
                    if rule.action == ResultAction::Redact && finds(rule) && !unredacted[index] {
                        let marker = serde_json::to_string(&markers[index]).unwrap_or_default();
                        let left = whole
                            .replace(marker.trim_matches('"'), "\n")
                            .replace(&markers[index], "\n");
                        let other_spelling = respelled(&left);
                        unredacted[index] = rule.holds_in(&left, other_spelling.as_deref());
                    }
                }
            }
        }
        if let Some(rule) = withholding(&rules, &hit) {
            return withhold(result, rule);
        }
        if let Some((rule, _)) = rules.iter().zip(&unredacted).find(|(_, left)| **left) {
            return withhold(result, rule);
        }
        // Written again only where something was redacted: a text indented its own way stays.
        let redacted = rules
            .iter()
            .zip(&hit)
            .any(|(rule, hit)| *hit && rule.action == ResultAction::Redact);
        if redacted {
            mirrors.write_again(result);
        }
        let mut labels: Vec<String> = rules
            .iter()
            .zip(&hit)
            .filter(|(rule, hit)| **hit && rule.action == ResultAction::Label)
            .filter_map(|(rule, _)| rule.label.clone())
            .collect();
        labels.sort();
        labels.dedup();
        labels
    }
}

/// The first withholding rule that found something.
fn withholding<'r>(rules: &[&'r Compiled], hit: &[bool]) -> Option<&'r Compiled> {
    rules
        .iter()
        .zip(hit)
        .find(|(rule, hit)| **hit && rule.action == ResultAction::Withhold)
        .map(|(rule, _)| *rule)
}

/// The first redacting rule with a match in the result's text that runs from one content block
/// into the next (a key whose first lines end one block): redacting each block alone would leave
/// the rest of it in the next, so the result is withheld instead.
fn split_across_blocks<'r>(rules: &[&'r Compiled], result: &ToolResult) -> Option<&'r Compiled> {
    let blocks = result.blocks.as_ref()?;
    if blocks.content.len() < 2 {
        return None;
    }
    // Where each block's text stands in the result's text (the blocks' texts, one per line).
    let texts: Vec<String> = blocks
        .content
        .iter()
        .map(|block| crate::definition::text_of(std::slice::from_ref(block), None))
        .collect();
    if texts.join("\n") != result.content {
        return None;
    }
    let mut ends = Vec::with_capacity(texts.len());
    let mut at = 0;
    for text in &texts {
        at += text.len();
        ends.push(at);
        at += 1;
    }
    rules
        .iter()
        .filter(|rule| rule.action == ResultAction::Redact)
        .find(|rule| {
            let mut spans = Vec::new();
            rule.spans(&result.content, &mut spans);
            spans.iter().any(|&(start, end)| {
                // The block the match starts in (the first ending at or after its start, found
                // by halving: a result of many blocks has as many matches) ends before the
                // match does.
                let block = ends.partition_point(|&block_end| block_end < start);
                ends.get(block).is_some_and(|&block_end| end > block_end)
            })
        })
        .copied()
}

/// Replaces `result` by an error saying the tool ran and `rule` withheld its result; a withheld
/// result labels nothing (the model never sees it).
fn withhold(result: &mut ToolResult, rule: &Compiled) -> Vec<String> {
    *result = ToolResult::error(
        std::mem::take(&mut result.call_id),
        format!(
            "the tool ran, but its result was withheld by result rule {:?}: {}",
            &*rule.id,
            rule.reason.as_str()
        ),
    );
    Vec::new()
}

/// Replaces every span `rule` finds in `text` by `marker`; whether it found any.
fn redact(text: &mut String, rule: &Compiled, marker: &str) -> bool {
    let mut spans = Vec::new();
    rule.spans(text, &mut spans);
    if spans.is_empty() {
        return false;
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if end <= at {
            continue;
        }
        // Spans that overlap (windows of one run of digits, IBANs starting inside another) are
        // one redaction: a marker each made a text of `0 ` repeated 17 times as long.
        if start >= at {
            out.push_str(&text[at..start.max(at)]);
            out.push_str(marker);
        }
        at = end;
    }
    out.push_str(&text[at..]);
    *text = out;
    true
}

/// The bytes of a result: its text, and the JSON of its structured content, blocks and `_meta`.
fn result_size(result: &ToolResult) -> u64 {
    let json = |value: &Value| serde_json::to_string(value).map_or(0, |text| text.len());
    let blocks = result.blocks.as_ref().map_or(0, |blocks| {
        let meta = blocks.meta.as_ref().map_or(0, |meta| {
            serde_json::to_string(meta).map_or(0, |text| text.len())
        });
        blocks.content.iter().map(json).sum::<usize>() + meta
    });
    (result.content.len() + result.structured.as_ref().map_or(0, json) + blocks) as u64
}
