//! Who may answer an ask: the approvers an ask rule names, and four eyes.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::contract::Principal;

/// Who may answer a call a rule asks about: a principal whose id is in `ids` or who is in one of
/// `groups` (both empty: any identified principal), and with `four_eyes`, never the principal the
/// call was made for. Set on an ask rule (`"approvers"`); every ask rule that applies to a call adds
/// its own, and an answer must satisfy them all.
///
/// # Examples
///
/// ```
/// use toolgate::Principal;
/// use toolgate::decision::Approvers;
///
/// let approvers = Approvers::groups(["security"]).with_four_eyes();
/// let alice = Principal::new("alice", ["security"]);
/// let bob = Principal::new("bob", ["security"]);
/// let eve = Principal::new("eve", ["dev"]);
/// assert!(approvers.admits(Some(&bob), Some(&alice)).is_ok());
/// assert!(approvers.admits(Some(&alice), Some(&alice)).is_err()); // her own call
/// assert!(approvers.admits(Some(&eve), Some(&alice)).is_err()); // not in the group
/// assert!(approvers.admits(None, Some(&alice)).is_err()); // nobody identified
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Approvers {
    /// Principal ids that may answer, matched exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Groups whose members may answer, matched exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The principal who made the call may not answer it, and a call made for no identified
    /// principal may be answered by nobody (nobody can be shown to be someone else).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub four_eyes: bool,
    /// The principal who made the call may answer it on the approval page. Unless every rule
    /// that asks (in every layer that asks) says so, the page never lets a principal answer its
    /// own call — a model's client key signed in to the page cannot approve what the model asked
    /// for, and a lower layer cannot waive a higher one's four eyes. (In band, the person at the
    /// MCP client that asked confirms the call as that client: that is not refused.)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_self: bool,
}

/// Why an answer was refused: the request still waits, and nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApproverRefusal {
    /// The answer named no principal, and the rule says who may answer.
    #[error("this call may be answered only by an identified approver")]
    Unidentified,
    /// The approver is not one the rule names.
    #[error("{approver:?} is not among the approvers this call needs ({needed})")]
    NotAnApprover {
        /// Who answered.
        approver: String,
        /// Who may, as the rule names them.
        needed: String,
    },
    /// The approver made the call (four eyes, or no rule allows answering one's own call).
    #[error(
        "four eyes: {approver:?} asked for this call and cannot answer it here (four eyes, or on the approval page no rule lets a call's asker answer it)"
    )]
    OwnCall {
        /// Who answered (and asked).
        approver: String,
    },
    /// Four eyes, for a call made for no principal: nobody can be shown to be someone else.
    #[error(
        "four eyes: this call was made for no identified principal, so no approver can be shown to be another person"
    )]
    UnknownAsker,
}

impl Approvers {
    /// Members of any of `groups` may answer.
    pub fn groups(groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            groups: groups.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// The principals with these `ids` may answer.
    pub fn ids(ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            ids: ids.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Any identified principal but the one who made the call may answer.
    pub fn four_eyes() -> Self {
        Self::default().with_four_eyes()
    }

    /// The same approvers, never the principal who made the call.
    #[must_use]
    pub fn with_four_eyes(mut self) -> Self {
        self.four_eyes = true;
        self
    }

    /// The same approvers, the principal who made the call among them.
    #[must_use]
    pub fn allowing_self(mut self) -> Self {
        self.allow_self = true;
        self
    }

    /// Whether `approver` may answer a call made for `asker`.
    ///
    /// # Errors
    ///
    /// The [`ApproverRefusal`] saying why not.
    pub fn admits(
        &self,
        approver: Option<&Principal>,
        asker: Option<&Principal>,
    ) -> Result<(), ApproverRefusal> {
        let approver = approver.ok_or(ApproverRefusal::Unidentified)?;
        let named = self.ids.is_empty() && self.groups.is_empty()
            || self.ids.contains(&approver.id)
            || approver
                .groups
                .iter()
                .any(|group| self.groups.contains(group));
        if !named {
            return Err(ApproverRefusal::NotAnApprover {
                approver: crate::contract::quote_bounded(&approver.id),
                needed: self.to_string(),
            });
        }
        if self.four_eyes {
            match asker {
                None => return Err(ApproverRefusal::UnknownAsker),
                Some(asker) if asker.id == approver.id => {
                    return Err(ApproverRefusal::OwnCall {
                        approver: crate::contract::quote_bounded(&approver.id),
                    });
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// `ids alice, bob; groups security; four eyes` — what a person is told is needed.
impl fmt::Display for Approvers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.ids.is_empty() {
            parts.push(format!("ids {}", self.ids.join(", ")));
        }
        if !self.groups.is_empty() {
            parts.push(format!("groups {}", self.groups.join(", ")));
        }
        if parts.is_empty() {
            parts.push("any identified principal".to_owned());
        }
        if self.allow_self {
            parts.push("its asker too".to_owned());
        }
        if self.four_eyes {
            parts.push("four eyes".to_owned());
        }
        f.write_str(&parts.join("; "))
    }
}

/// Whether `approver` satisfies every one of `all` for a call made for `asker`.
pub(crate) fn admitted_by_all<'a>(
    all: impl IntoIterator<Item = &'a Approvers>,
    approver: Option<&Principal>,
    asker: Option<&Principal>,
) -> Result<(), ApproverRefusal> {
    all.into_iter()
        .try_for_each(|approvers| approvers.admits(approver, asker))
}

/// [`admitted_by_all`], answered out of band (the approval page): there the asker is never the
/// approver unless every one of `all` allows it ([`Approvers::allow_self`]; none at all: not
/// allowed) — a layer that waives it cannot speak for another that asked. In band — the person at
/// the MCP client that asked, confirming through its client — the asker answering is the point.
pub(crate) fn admitted_out_of_band<'a>(
    all: impl IntoIterator<Item = &'a Approvers> + Clone,
    approver: Option<&Principal>,
    asker: Option<&Principal>,
) -> Result<(), ApproverRefusal> {
    admitted_by_all(all.clone(), approver, asker)?;
    let mut all = all.into_iter().peekable();
    let allow_self = all.peek().is_some() && all.all(|approvers| approvers.allow_self);
    match (approver, asker) {
        (Some(approver), Some(asker)) if approver.id == asker.id && !allow_self => {
            Err(ApproverRefusal::OwnCall {
                approver: crate::contract::quote_bounded(&approver.id),
            })
        }
        _ => Ok(()),
    }
}

/// Joins to `approvers` (the entries of the asking rules or layers that named some) the vote of
/// those that asked naming none (`unnamed`): they never let the asker answer on the approval
/// page, so one rule's or layer's `allow_self` cannot speak for them (an independent attack:
/// an ask rule naming nobody beside one with `allow_self` let the asker approve her own call).
/// Their entry is [`Approvers::default`] — any identified principal, never the asker out of
/// band — which admits in band whoever the other entries admit (each of them already needs an
/// identified approver); with no other entry nothing is joined (anyone answers in band, and the
/// page never lets the asker).
pub(crate) fn bar_self_for_unnamed(approvers: &mut Vec<std::sync::Arc<Approvers>>, unnamed: bool) {
    if unnamed && !approvers.is_empty() {
        approvers.push(std::sync::Arc::new(Approvers::default()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Named by id, or by one of its groups, or — with neither listed — anyone identified; not
    /// someone who only shares an id with a group's name or a group with an id.
    #[test]
    fn an_approver_is_named_by_id_or_group_or_by_a_rule_naming_nobody() {
        let alice = Principal::new("alice", ["ops"]);
        let ops = Principal::new("ops", ["alice"]);
        let by_id = Approvers::ids(["alice"]);
        assert!(by_id.admits(Some(&alice), None).is_ok());
        assert!(by_id.admits(Some(&ops), None).is_err());
        let by_group = Approvers::groups(["ops"]);
        assert!(by_group.admits(Some(&alice), None).is_ok());
        assert!(by_group.admits(Some(&ops), None).is_err());
        let carol_only = Approvers::ids(["carol"]);
        assert!(carol_only.admits(Some(&alice), None).is_err());
        // Naming nobody admits anyone identified.
        let anyone = Approvers::default();
        assert!(anyone.admits(Some(&ops), None).is_ok());
        assert!(matches!(
            anyone.admits(None, None),
            Err(ApproverRefusal::Unidentified)
        ));
    }

    /// Four eyes: whoever asked never answers; someone else named does; an asker nobody knows
    /// cannot be told apart from the approver, so nobody does.
    #[test]
    fn four_eyes_refuses_the_asker_and_an_unknown_asker() {
        let ops = Approvers::groups(["ops"]).with_four_eyes();
        let alice = Principal::new("alice", ["ops"]);
        let bob = Principal::new("bob", ["ops"]);
        assert!(matches!(
            ops.admits(Some(&alice), Some(&alice)),
            Err(ApproverRefusal::OwnCall { .. })
        ));
        assert!(ops.admits(Some(&bob), Some(&alice)).is_ok());
        assert!(matches!(
            ops.admits(Some(&bob), None),
            Err(ApproverRefusal::UnknownAsker)
        ));
        // Without four eyes the asker may answer.
        assert!(
            Approvers::groups(["ops"])
                .admits(Some(&alice), Some(&alice))
                .is_ok()
        );
    }

    /// Each constructor sets what its name says and nothing else; the text a person is told
    /// names each part.
    #[test]
    fn constructors_set_one_thing_each_and_the_text_names_it() {
        let ids = Approvers::ids(["alice", "bob"]);
        assert_eq!(
            (
                ids.ids.as_slice(),
                ids.groups.len(),
                ids.four_eyes,
                ids.allow_self
            ),
            (
                ["alice".to_owned(), "bob".to_owned()].as_slice(),
                0,
                false,
                false
            )
        );
        assert_eq!(ids.to_string(), "ids alice, bob");
        let groups = Approvers::groups(["security"]);
        assert_eq!(groups.groups, ["security"]);
        assert!(groups.ids.is_empty());
        assert_eq!(groups.to_string(), "groups security");
        let four = Approvers::four_eyes();
        assert!(four.four_eyes && !four.allow_self && four.ids.is_empty());
        assert_eq!(four.to_string(), "any identified principal; four eyes");
        let both = Approvers::groups(["security"]).with_four_eyes();
        assert!(both.four_eyes);
        assert_eq!(both.groups, ["security"]);
        assert_eq!(both.to_string(), "groups security; four eyes");
        let own = Approvers::ids(["alice"]).allowing_self();
        assert!(own.allow_self && !own.four_eyes);
        assert_eq!(own.ids, ["alice"]);
        assert_eq!(own.to_string(), "ids alice; its asker too");
        assert_eq!(Approvers::default().to_string(), "any identified principal");
    }

    /// Out of band the asker never answers its own call unless one of the rules allows it; in
    /// band it may.
    #[test]
    fn out_of_band_the_asker_answers_only_where_allowed() {
        // Out of band is no looser than in band: whoever no rule names is refused first.
        let eve = Principal::new("eve", ["dev"]);
        let asker = Principal::new("alice", ["ops"]);
        let ops = Approvers::groups(["ops"]).allowing_self();
        assert!(matches!(
            admitted_out_of_band([&ops], Some(&eve), Some(&asker)),
            Err(ApproverRefusal::NotAnApprover { .. })
        ));
        let alice = Principal::new("alice", ["ops"]);
        let bob = Principal::new("bob", ["ops"]);
        let none: [&Approvers; 0] = [];
        assert!(admitted_by_all(none, Some(&alice), Some(&alice)).is_ok());
        assert!(matches!(
            admitted_out_of_band(none, Some(&alice), Some(&alice)),
            Err(ApproverRefusal::OwnCall { .. })
        ));
        assert!(admitted_out_of_band(none, Some(&bob), Some(&alice)).is_ok());
        assert!(admitted_out_of_band(none, None, None).is_ok());
        let allowing = Approvers::groups(["ops"]).allowing_self();
        let plain = Approvers::groups(["ops"]);
        assert!(admitted_out_of_band([&allowing], Some(&alice), Some(&alice)).is_ok());
        assert!(admitted_out_of_band([&allowing, &allowing], Some(&alice), Some(&alice)).is_ok());
        // One layer waiving it does not speak for another that asked.
        assert!(admitted_out_of_band([&plain, &allowing], Some(&alice), Some(&alice)).is_err());
        assert!(admitted_out_of_band([&allowing, &plain], Some(&alice), Some(&alice)).is_err());
        assert!(admitted_out_of_band([&plain], Some(&alice), Some(&alice)).is_err());
    }
}
