//! Rules for some callers: the `principals` of a rule, and their checks at load.

use serde::{Deserialize, Serialize};

/// The callers a rule applies to: a principal whose id is in `ids`, or who is in one of `groups`.
/// Checked at load: at least one entry, none empty, repeated or holding invisible characters.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolgate::rules::RuleConfig;
///
/// let rule: RuleConfig = serde_json::from_value(json!({
///     "id": "ops-deploy", "tool": "deploy", "action": "allow", "reason": "ops deploy",
///     "principals": {"groups": ["ops"]}
/// }))?;
/// assert_eq!(rule.principals.unwrap().groups, ["ops"]);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct PrincipalsConfig {
    /// Principal ids, matched exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Group names, matched exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

impl PrincipalsConfig {
    /// The principals in any of `groups`.
    pub fn groups(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            ids: Vec::new(),
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether `principal` is one of these callers.
    pub fn admits(&self, principal: Option<&crate::Principal>) -> bool {
        principal.is_some_and(|principal| {
            self.ids.contains(&principal.id)
                || principal
                    .groups
                    .iter()
                    .any(|group| self.groups.contains(group))
        })
    }
}

/// A rule's `principals`: at least one id or group; none empty, longer than 256 bytes, holding
/// an invisible or whitespace character, or named twice.
pub(super) fn check(
    principals: &PrincipalsConfig,
    place: &str,
    problem: &mut dyn FnMut(String, String),
) {
    if principals.ids.is_empty() && principals.groups.is_empty() {
        problem(
            format!("{place}.principals"),
            "names no id and no group: the rule would apply to nobody".to_owned(),
        );
    }
    check_names(
        [("ids", &principals.ids), ("groups", &principals.groups)],
        &format!("{place}.principals"),
        problem,
    );
}

/// A rule's `approvers`: only on an ask rule (nothing else waits for an answer), and naming
/// someone or asking for four eyes; names as for `principals`.
pub(super) fn check_approvers(
    approvers: &crate::decision::Approvers,
    action: crate::PolicyAction,
    place: &str,
    problem: &mut dyn FnMut(String, String),
) {
    let here = format!("{place}.approvers");
    if action != crate::PolicyAction::Ask {
        problem(
            here.clone(),
            format!("only an ask rule waits for an approver; this rule's action is {action}"),
        );
    }
    if approvers.ids.is_empty()
        && approvers.groups.is_empty()
        && !approvers.four_eyes
        && !approvers.allow_self
    {
        problem(
            here.clone(),
            "names no id, no group, no four_eyes and no allow_self: it would change nothing"
                .to_owned(),
        );
    }
    if approvers.four_eyes && approvers.allow_self {
        problem(
            here.clone(),
            "four_eyes and allow_self contradict each other: the asker may answer, or may not"
                .to_owned(),
        );
    }
    check_names(
        [("ids", &approvers.ids), ("groups", &approvers.groups)],
        &here,
        problem,
    );
}

/// Each name 1 to 256 bytes, visible, without whitespace, and named once in its list.
fn check_names(
    lists: [(&str, &Vec<String>); 2],
    place: &str,
    problem: &mut dyn FnMut(String, String),
) {
    for (key, names) in lists {
        for (index, name) in names.iter().enumerate() {
            let here = format!("{place}.{key}[{index}]");
            if name.is_empty() || name.len() > 256 {
                problem(here, "must be 1 to 256 bytes".to_owned());
            } else if name
                .chars()
                .any(|c| crate::text::is_invisible(c) || c.is_whitespace() || c.is_control())
            {
                problem(
                    here,
                    "holds an invisible, whitespace or control character".to_owned(),
                );
            } else if names[..index].contains(name) {
                problem(here, format!("{name:?} is named twice"));
            }
        }
    }
}
