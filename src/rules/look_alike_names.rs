//! Names a reviewer could not tell apart: with the `unicode` feature, two ids, labels, principal
//! ids or groups that differ but are drawn alike (UTS #39 skeletons after NFKC and case
//! folding: `oca` and `оса` in Cyrillic, `café` in NFC and in NFD, `rule-1` and `rule-l`), or
//! one mixing scripts past UTS #39's highly restrictive level (Latin with Han, Kana or Hangul is
//! within it), fail the load, as tool names do ([`crate::registry::LookAlikes`]). An id reaches
//! reasons, the audit log and the approval page; a label given by one rule and read by another,
//! and a principal's id or group matched against the identity provider's, are compared as
//! written, so a look-alike is a rule that silently never holds (`іnterns` with a Cyrillic і on
//! a deny rule; approvers in `оps`, whom nobody can be); and so does a non-ASCII one drawn
//! like an ASCII name (`орѕ` all in Cyrillic, `ᴏps`, `admın`), which may be a look-alike of a
//! name outside the policy. Without the feature, names are compared as written (non-ASCII ones
//! are not judged).

use super::PolicyConfig;
use crate::policy::LoadProblem;

/// Names, each with its place in the policy.
type Placed<'a> = Vec<(String, &'a str)>;

/// The names of each kind `config` holds, each with its place: every rule's, limit's, flow's and
/// result rule's id; the labels it defines (the keys of `labels`, the labels result rules give);
/// the principal ids and the groups its rules and approvers name.
fn names(config: &PolicyConfig) -> [(&'static str, Placed<'_>); 4] {
    let mut ids = Vec::new();
    push_ids(
        &mut ids,
        "rules",
        config.rules.iter().map(|r| r.id.as_str()),
    );
    push_ids(
        &mut ids,
        "limits",
        config.limits.iter().map(|l| l.id.as_str()),
    );
    push_ids(
        &mut ids,
        "flows",
        config.flows.iter().map(|f| f.id.as_str()),
    );
    push_ids(
        &mut ids,
        "results",
        config.results.iter().map(|r| r.id.as_str()),
    );
    let mut labels: Placed<'_> = config
        .labels
        .keys()
        .map(|label| (format!("labels.{label:?}"), label.as_str()))
        .collect();
    for (index, rule) in config.results.iter().enumerate() {
        if let Some(label) = &rule.label {
            labels.push((format!("results[{index}] (id {:?}).label", rule.id), label));
        }
    }
    let mut who = Who::default();
    for (index, rule) in config.rules.iter().enumerate() {
        let place = format!("rules[{index}] (id {:?})", rule.id);
        if let Some(named) = &rule.principals {
            who.push(&format!("{place}.principals"), &named.ids, &named.groups);
        }
        if let Some(named) = &rule.approvers {
            who.push(&format!("{place}.approvers"), &named.ids, &named.groups);
        }
    }
    for (index, flow) in config.flows.iter().enumerate() {
        if let Some(named) = &flow.approvers {
            let place = format!("flows[{index}] (id {:?}).approvers", flow.id);
            who.push(&place, &named.ids, &named.groups);
        }
    }
    [
        ("id", ids),
        ("label", labels),
        ("principal id", who.ids),
        ("group", who.groups),
    ]
}

/// Each id of `list`, placed as the `kind`'s entry it is.
fn push_ids<'a>(out: &mut Placed<'a>, kind: &str, list: impl Iterator<Item = &'a str>) {
    for (index, id) in list.enumerate() {
        out.push((format!("{kind}[{index}] (id {id:?})"), id));
    }
}

/// The principal ids and groups a policy names.
#[derive(Default)]
struct Who<'a> {
    ids: Placed<'a>,
    groups: Placed<'a>,
}

impl<'a> Who<'a> {
    fn push(&mut self, place: &str, ids: &'a [String], groups: &'a [String]) {
        self.ids
            .extend(ids.iter().map(|id| (format!("{place}.ids"), id.as_str())));
        self.groups.extend(
            groups
                .iter()
                .map(|group| (format!("{place}.groups"), group.as_str())),
        );
    }
}

/// Pushes a problem for each name that mixes scripts or looks like another of its kind that
/// differs.
#[cfg(feature = "unicode")]
pub(super) fn check(config: &PolicyConfig, problems: &mut Vec<LoadProblem>) {
    use unicode_security::{
        GeneralSecurityProfile as _, RestrictionLevel, RestrictionLevelDetection as _,
    };
    for (what, names) in names(config) {
        // The first name of each form, and its place.
        let mut forms: std::collections::HashMap<String, (&str, String)> =
            std::collections::HashMap::new();
        for (place, name) in names {
            // Scripts are judged on the letters and digits UTS #39 allows in identifiers
            // (spaces, `-`, `.` are no script's; an obsolete `ſ` is judged by its skeleton below).
            let letters: String = name
                .chars()
                .filter(|c| c.is_alphanumeric() && c.identifier_allowed())
                .collect();
            if letters.as_str().detect_restriction_level() > RestrictionLevel::HighlyRestrictive {
                problems.push(LoadProblem {
                    place,
                    message: format!(
                        "{what} mixes scripts: it could pass for another {what} (write it in one script)"
                    ),
                });
                continue;
            }
            let form: String = unicode_security::skeleton(&crate::text::normalized(name)).collect();
            // Drawn like an ASCII name: a look-alike of one this policy does not hold (the
            // identity provider's `ops`, spelled `орѕ` in Cyrillic or `ᴏps`: a third attack).
            // (Judged without case folding, which makes `ß` the ASCII `ss` it is not drawn as.)
            let drawn: String = {
                use unicode_normalization::UnicodeNormalization as _;
                let lowered = name.nfkc().collect::<String>().to_lowercase();
                unicode_security::skeleton(&lowered).collect()
            };
            if !name.is_ascii() && drawn.is_ascii() {
                problems.push(LoadProblem {
                    place,
                    message: format!(
                        "{what} is drawn like an ASCII {what} (skeleton {drawn:?}) but is not one: write it in ASCII, or in letters not drawn like Latin ones"
                    ),
                });
                continue;
            }
            match forms.get(&form) {
                Some((first, first_place)) if *first != name => problems.push(LoadProblem {
                    place,
                    message: format!(
                        "{what} differs from the {what} of {first_place} but looks like it (characters drawn alike, case or a normal form): name one of them otherwise"
                    ),
                }),
                Some(_) => {}
                None => {
                    forms.insert(form, (name, place));
                }
            }
        }
    }
}

/// Without the `unicode` feature nothing is judged: names are compared as written.
#[cfg(not(feature = "unicode"))]
pub(super) fn check(config: &PolicyConfig, problems: &mut Vec<LoadProblem>) {
    let _ = (names(config), problems);
}
