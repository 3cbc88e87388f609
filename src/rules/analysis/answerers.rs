//! Whether two decisions differ: another action, or an ask other people may answer — in band or
//! out of band, where the asker answers its own call only if every set allows it (`allow_self`).
//! A deny by a rule and the default deny are alike, as a controller runs a policy alone (see
//! [`super::diff`] for where they are not). Who may answer is compared by
//! what the approvers mean — every set a decision names must admit the
//! person — not by how they are written: `["alice", "bob"]` is `["bob", "alice"]`, and a set that
//! only repeats a narrower one changes nothing.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::contract::Principal;
use crate::decision::{Approvers, PolicyDecision, admitted_by_all, admitted_out_of_band};

/// The most (answerer, asker) pairs tried before comparing the sets as written instead.
const MOST_PAIRS: usize = 100_000;

/// Whether `a` and `b` decide a call differently.
pub(super) fn differ(a: &PolicyDecision, b: &PolicyDecision) -> bool {
    a.action != b.action || !same_answerers(&a.approvers, &b.approvers)
}

/// Whether the same people may answer under `a` as under `b`, for every asker: tried on every
/// id either names (and one neither names) in every combination of the groups they name.
fn same_answerers(a: &[Arc<Approvers>], b: &[Arc<Approvers>]) -> bool {
    let written =
        |all: &[Arc<Approvers>]| all.iter().map(ToString::to_string).collect::<BTreeSet<_>>();
    if written(a) == written(b) {
        return true;
    }
    let (mut ids, mut groups) = (BTreeSet::new(), BTreeSet::new());
    for approvers in a.iter().chain(b) {
        ids.extend(approvers.ids.iter().cloned());
        groups.extend(approvers.groups.iter().cloned());
    }
    // An id no set names: whoever else may answer.
    let mut other = String::from("zz-toolgate-other");
    while ids.contains(&other) {
        other.push('-');
    }
    ids.insert(other);
    let groups: Vec<&String> = groups.iter().collect();
    let sets = 1_usize.checked_shl(u32::try_from(groups.len()).unwrap_or(u32::MAX));
    let pairs = sets.and_then(|sets| {
        (ids.len() + 1)
            .checked_mul(sets)?
            .checked_mul(ids.len() + 1)
    });
    if pairs.is_none_or(|pairs| pairs > MOST_PAIRS) {
        return false;
    }
    let sets = sets.unwrap_or(0);
    let mut answerers: Vec<Option<Principal>> = vec![None];
    for id in &ids {
        for mask in 0..sets {
            let chosen = (0..groups.len())
                .filter(|bit| mask & (1 << bit) != 0)
                .map(|bit| groups[bit].clone());
            answerers.push(Some(Principal::new(id.clone(), chosen)));
        }
    }
    let askers: Vec<Option<Principal>> = std::iter::once(None)
        .chain(
            ids.iter()
                .map(|id| Some(Principal::new(id.clone(), Vec::<String>::new()))),
        )
        .collect();
    answerers.iter().all(|answerer| {
        askers.iter().all(|asker| {
            let admitted = |all: &[Arc<Approvers>]| {
                let sets = all.iter().map(AsRef::as_ref);
                (
                    admitted_by_all(sets.clone(), answerer.as_ref(), asker.as_ref()).is_ok(),
                    admitted_out_of_band(sets, answerer.as_ref(), asker.as_ref()).is_ok(),
                )
            };
            admitted(a) == admitted(b)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::same_answerers;
    use crate::decision::Approvers;
    use std::sync::Arc;

    fn ids(names: &[&str]) -> Arc<Approvers> {
        Arc::new(Approvers::ids(names.iter().copied()))
    }

    #[test]
    fn approvers_are_compared_by_who_may_answer() {
        assert!(same_answerers(
            &[ids(&["alice", "bob"])],
            &[ids(&["bob", "alice"])]
        ));
        assert!(same_answerers(
            &[ids(&["alice", "bob"])],
            &[ids(&["alice", "bob"]), ids(&["alice", "bob", "carol"])]
        ));
        assert!(!same_answerers(
            &[ids(&["alice", "bob"])],
            &[ids(&["alice"])]
        ));
        assert!(!same_answerers(&[ids(&["alice"])], &[]));
        assert!(same_answerers(&[], &[]));
        let four_eyes = Arc::new(Approvers::ids(["alice", "bob"]).with_four_eyes());
        assert!(!same_answerers(&[ids(&["alice", "bob"])], &[four_eyes]));
        // The asker answering its own call out of band: only where every set allows it.
        let own = Arc::new(Approvers::ids(["alice"]).allowing_self());
        assert!(!same_answerers(&[ids(&["alice"])], &[Arc::clone(&own)]));
        // A set that waives it cannot speak for another that did not: no one's answer changes.
        assert!(same_answerers(
            &[ids(&["alice"]), ids(&["alice", "bob"])],
            &[Arc::clone(&own), ids(&["alice", "bob"])]
        ));
    }
}
