//! A call's rate slots as the counters take them, and which of its `ask` slots would refuse it:
//! every flow rule or limit that asks adds who may answer, as every ask rule does.

use std::sync::Arc;

use super::ToolController;
use super::limit::Stage;
use crate::decision::{Approvers, PolicyAction, RateSlot, Refuses};
use crate::limits::{Take, Taken};
use crate::provenance::Scope;
use crate::runtime::PreparedToolCall;

/// What the counters need of a call's slots beside the slots: each one's group, and the names of
/// provenance looks (named here, where the key is).
pub(super) struct Named {
    group_of: Vec<Option<u32>>,
    pub(super) scope: Option<Scope>,
    looked_up: Vec<Option<String>>,
}

/// The `ask` slots that would refuse a call: the approvers they name, and whether one of them
/// names none.
pub(super) struct Asking {
    named: Vec<Arc<Approvers>>,
    unnamed: bool,
}

impl Asking {
    /// Who answers, as a decision lists it: every named set, and — beside them — the vote of
    /// those naming none against the asker answering on the page.
    pub(super) fn approvers(mut self) -> Vec<Arc<Approvers>> {
        crate::decision::bar_self_for_unnamed(&mut self.named, self.unnamed);
        self.named
    }

    /// Joins `approvers` and `unnamed` of another asker (the rules').
    pub(super) fn with(mut self, approvers: Vec<Arc<Approvers>>, unnamed: bool) -> Self {
        self.named.extend(approvers);
        self.unnamed |= unnamed;
        self
    }
}

/// A group of a rule's slots: the bucket its slots share (the rule's id behind each layer's
/// name), its rule's id and its number within the rule.
type GroupKey<'a> = (&'a Arc<str>, &'a Arc<str>, u32);

impl ToolController {
    /// The groups and provenance names of `slots`, for `call`.
    pub(super) fn named(&self, slots: &[RateSlot], call: &PreparedToolCall) -> Named {
        // A rule's groups are its own: numbered apart from every other rule's and layer's.
        let mut groups: Vec<GroupKey<'_>> = Vec::new();
        let mut group_of = Vec::with_capacity(slots.len());
        for slot in slots {
            group_of.push(slot.group.and_then(|group| {
                // The bucket a provenance rule's slots share carries every layer's name, length
                // first (see `Layers`): unambiguous however stacks nest.
                let key = (&slot.bucket, &slot.limit_id, group);
                let at = groups
                    .iter()
                    .position(|known| *known == key)
                    .unwrap_or_else(|| {
                        groups.push(key);
                        groups.len() - 1
                    });
                u32::try_from(at).ok()
            }));
        }
        let scope = slots
            .iter()
            .any(|slot| slot.look.is_some())
            .then(|| Scope::of(call.call().principal.as_deref(), &self.recorder.key));
        let looked_up = slots
            .iter()
            .map(|slot| {
                let (look, scope) = (slot.look.as_ref()?, scope.as_ref()?);
                Some(look.bucket(&self.recorder.key, scope))
            })
            .collect();
        Named {
            group_of,
            scope,
            looked_up,
        }
    }

    /// The takes of `slots` at `stage`.
    pub(super) fn takes<'a>(
        &self,
        slots: &'a [RateSlot],
        named: &'a Named,
        stage: Stage,
    ) -> Vec<Take<'a>> {
        slots
            .iter()
            .zip(&named.group_of)
            .zip(&named.looked_up)
            .map(|((slot, &group), looked_up)| Take {
                group,
                bucket: looked_up.as_deref().unwrap_or(&slot.bucket),
                window_ms: slot.window_ms,
                weight: slot.weight,
                // A person's request lost to a failing store: the session counts as overflowed.
                refuses: match (&slot.look, &named.scope) {
                    (Some(look), Some(scope))
                        if look.is_overflow() && self.recorder.lost.holds(scope) =>
                    {
                        Refuses::Always
                    }
                    _ => slot.refuses,
                },
                replaces: slot.replaces,
                across_sessions: slot.across_sessions,
                // A decision's records never give way: provenance's values do, as recorded.
                yields_room: false,
                enforce: stage == Stage::Proposed || slot.over == PolicyAction::Deny,
            })
            .collect()
    }

    /// Which of the `ask` slots among `slots` (taken as `takes`) would refuse the call now —
    /// looked at, nothing recorded — one slot (or group) at a time; `None` if none would. Where
    /// the store cannot say, every one not yet found counts as asking.
    pub(super) fn refusing_asks(&self, slots: &[RateSlot], takes: &[Take<'_>]) -> Option<Asking> {
        let mut looks: Vec<(usize, Take<'_>)> = takes
            .iter()
            .enumerate()
            .filter(|(index, _)| slots[*index].over == PolicyAction::Ask)
            .map(|(index, take)| (index, looking(*take)))
            .collect();
        let mut asking = Asking {
            named: Vec::new(),
            unnamed: false,
        };
        let mut any = false;
        let now = self.clock.now_ms();
        let mut join = |slot: &RateSlot| match &slot.approvers {
            Some(approvers) => asking.named.push(Arc::clone(approvers)),
            None => asking.unnamed = true,
        };
        while !looks.is_empty() {
            let only: Vec<Take<'_>> = looks.iter().map(|(_, take)| *take).collect();
            let at = match self.counters.take(&only, now) {
                Ok(Taken::Full(at)) => at,
                Ok(Taken::All) => break,
                Err(_) => {
                    // The store cannot say which would ask: each one left counts as asking, so
                    // every one's approvers must admit the answer (never fewer).
                    for (index, _) in &looks {
                        join(&slots[*index]);
                    }
                    any = true;
                    break;
                }
            };
            let (refusing, take) = looks[at];
            any = true;
            join(&slots[refusing]);
            // Only this slot (and the group it answers for) is known to ask: every other slot
            // is looked at again, whatever rule or layer it names — names can meet (one id in
            // two layers; a layer `a/b` beside `b` nested in `a`; a policy's own slots), and
            // joining the same approvers twice changes nothing (attacks found each dropped).
            looks.retain(|(index, other)| {
                *index != refusing && (take.group.is_none() || other.group != take.group)
            });
        }
        any.then_some(asking)
    }
}

/// `take` as a look: enforced, recording nothing, refused exactly where the take would be.
fn looking(take: Take<'_>) -> Take<'_> {
    let refuses = match take.refuses {
        Refuses::Above(max) if take.weight > max => Refuses::Always,
        Refuses::Above(max) => Refuses::Above(max - take.weight),
        other => other,
    };
    Take {
        weight: 0,
        refuses,
        replaces: false,
        yields_room: false,
        enforce: true,
        ..take
    }
}

#[cfg(test)]
mod tests {
    use super::looking;
    use crate::decision::Refuses;
    use crate::limits::Take;

    /// A look records nothing and is refused exactly where the take would be: weight zero, a cap
    /// lowered by the weight (refused at once when the weight alone passes it), nothing replaced
    /// or yielded, enforced whatever the stage.
    #[test]
    fn a_look_records_nothing_and_refuses_where_the_take_would() {
        let take = Take {
            weight: 3,
            refuses: Refuses::Above(10),
            replaces: true,
            yields_room: true,
            enforce: false,
            ..Take::limit("cap", Some(60_000), 0)
        };
        let look = looking(take);
        assert_eq!(look.weight, 0);
        assert!(!look.replaces && !look.yields_room && look.enforce);
        assert_eq!((look.bucket, look.window_ms), ("cap", Some(60_000)));
        for total in 0..14 {
            assert_eq!(
                look.refused_by(total),
                Take {
                    enforce: true,
                    ..take
                }
                .refused_by(total),
                "{total}"
            );
        }
        assert_eq!(look.refuses, Refuses::Above(7));
        // A weight past the cap: refused whatever the count.
        let heavy = looking(Take { weight: 11, ..take });
        assert_eq!(heavy.refuses, Refuses::Always);
        let exact = looking(Take { weight: 10, ..take });
        assert_eq!(exact.refuses, Refuses::Above(0));
        // Other refusals do not hang on the weight.
        let any = looking(Take {
            refuses: Refuses::AnyCounted,
            ..take
        });
        assert_eq!(any.refuses, Refuses::AnyCounted);
    }
}
