//! Ids and labels a reviewer could not tell apart: with the `unicode` feature, two that differ
//! but are drawn alike (UTS #39 skeletons after NFKC and case folding: `cards` and `сards` with
//! a Cyrillic `с`, `café` in NFC and in NFD) or one mixing scripts fail the load, as tool names
//! do ([`crate::registry::LookAlikes`]). An id reaches reasons, the audit log and the approval
//! page; a label given by one rule and read by another is matched as written, so a look-alike
//! label defined beside the real one is a flow rule that silently never holds. Without the
//! feature, ids and labels are compared as written (non-ASCII ones are not judged).

use super::PolicyConfig;
use crate::policy::LoadProblem;

/// Names, each with its place in the policy.
type Placed<'a> = Vec<(String, &'a str)>;

/// The ids and the labels `config` defines, each with its place: every rule's, limit's, flow's
/// and result rule's id, the keys of `labels` and the labels result rules give.
fn names(config: &PolicyConfig) -> (Placed<'_>, Placed<'_>) {
    let mut ids = Vec::new();
    let kinds = [
        (
            "rules",
            config
                .rules
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
        ),
        (
            "limits",
            config.limits.iter().map(|l| l.id.as_str()).collect(),
        ),
        (
            "flows",
            config.flows.iter().map(|f| f.id.as_str()).collect(),
        ),
        (
            "results",
            config.results.iter().map(|r| r.id.as_str()).collect(),
        ),
    ];
    for (kind, list) in kinds {
        for (index, id) in list.into_iter().enumerate() {
            ids.push((format!("{kind}[{index}] (id {id:?})"), id));
        }
    }
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
    (ids, labels)
}

/// Pushes a problem for each id or label that mixes scripts or looks like another that differs.
#[cfg(feature = "unicode")]
pub(super) fn check(config: &PolicyConfig, problems: &mut Vec<LoadProblem>) {
    use unicode_security::MixedScript as _;
    let (ids, labels) = names(config);
    for (what, names) in [("id", ids), ("label", labels)] {
        // The first name of each form, and its place.
        let mut forms: std::collections::HashMap<String, (&str, String)> =
            std::collections::HashMap::new();
        for (place, name) in names {
            if !name.is_single_script() {
                problems.push(LoadProblem {
                    place,
                    message: format!(
                        "{what} mixes scripts: it could pass for another {what} (write it in one script)"
                    ),
                });
                continue;
            }
            let form: String = unicode_security::skeleton(&crate::text::normalized(name)).collect();
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

/// Without the `unicode` feature nothing is judged: ids and labels are compared as written.
#[cfg(not(feature = "unicode"))]
pub(super) fn check(config: &PolicyConfig, problems: &mut Vec<LoadProblem>) {
    let _ = (names(config), problems);
}
