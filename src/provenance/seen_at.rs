//! Where this controller last saw each recorded value: the tool and call whose result carried
//! it, so a decision can name the earlier call — never the value.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use crate::prehashed::PrehashedState;

use super::keyed::Digest;
use super::values::Scope;

/// The most values remembered; the oldest is forgotten first (a decision then says no result
/// returned here carried it, which is all it can know).
const CAPACITY: usize = 65_536;

/// The tool and call id that last returned each value (by scope and digest).
#[derive(Debug, Default)]
pub(crate) struct SeenAt {
    inner: Mutex<Inner>,
}

type Call = (Arc<str>, Arc<str>);

#[derive(Debug, Default)]
struct Inner {
    // One shared call for every value of a result: a clone per value, not two.
    scopes: HashMap<Arc<str>, HashMap<Digest, Arc<Call>, PrehashedState>>,
    order: VecDeque<(Arc<str>, Digest)>,
}

impl SeenAt {
    /// Notes that the call `call_id` of `tool` returned the values `digests` in `scope`.
    pub(crate) fn note(&self, scope: &Scope, digests: &[Digest], tool: &str, call_id: &str) {
        if digests.is_empty() {
            return;
        }
        let call: Arc<Call> = Arc::new((Arc::from(tool), Arc::from(call_id)));
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Inner { scopes, order } = &mut *inner;
        let scope = match scopes.get_key_value(scope.as_str()) {
            Some((scope, _)) => Arc::clone(scope),
            None => Arc::from(scope.as_str()),
        };
        let calls = scopes.entry(Arc::clone(&scope)).or_default();
        for digest in digests {
            let fresh = calls.insert(*digest, Arc::clone(&call)).is_none();
            if fresh {
                order.push_back((Arc::clone(&scope), *digest));
            }
        }
        while order.len() > CAPACITY {
            let Some((scope, digest)) = order.pop_front() else {
                break;
            };
            if let Some(calls) = scopes.get_mut(&scope) {
                calls.remove(&digest);
                if calls.is_empty() {
                    scopes.remove(&scope);
                }
            }
        }
    }

    /// The tool and call id that last returned the value `digest` in `scope`.
    pub(crate) fn get(&self, scope: &Scope, digest: &Digest) -> Option<Call> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner
            .scopes
            .get(scope.as_str())?
            .get(digest)
            .map(|call| Call::clone(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Principal;
    use crate::provenance::ProvenanceKey;

    #[test]
    fn the_latest_call_is_named_per_scope_and_the_oldest_value_goes_first() {
        let key = ProvenanceKey::new([3; 32]);
        let alice = Scope::of(Some(&Principal::new("alice", Vec::<String>::new())), &key);
        let nobody = Scope::of(None, &key);
        let seen = SeenAt::default();
        let digest = |n: u32| {
            let mut digest = [0; 16];
            digest[..4].copy_from_slice(&n.to_le_bytes());
            digest
        };
        seen.note(&alice, &[digest(0), digest(1)], "read", "c1");
        seen.note(&alice, &[digest(1)], "fetch", "c2");
        let named = |scope, n| seen.get(scope, &digest(n)).map(|(t, c)| format!("{t}/{c}"));
        assert_eq!(named(&alice, 0).as_deref(), Some("read/c1"));
        assert_eq!(named(&alice, 1).as_deref(), Some("fetch/c2"));
        assert_eq!(named(&nobody, 1), None, "another scope's record");
        let many: Vec<Digest> = (2..=u32::try_from(CAPACITY).unwrap() + 1)
            .map(digest)
            .collect();
        seen.note(&nobody, &many, "bulk", "c3");
        assert_eq!(named(&alice, 0), None, "the oldest is forgotten first");
        assert_eq!(named(&alice, 1), None);
        assert_eq!(named(&nobody, 2).as_deref(), Some("bulk/c3"));
        assert_eq!(
            seen.inner.lock().unwrap().scopes.len(),
            1,
            "an emptied scope is dropped"
        );
    }
}
