//! Where this controller last saw each recorded value: the tool and call whose result carried
//! it, so a decision can name the earlier call — never the value.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// The most values remembered; the oldest is forgotten first (a decision then says no result
/// returned here carried it, which is all it can know).
const CAPACITY: usize = 65_536;

/// The tool and call id that last returned each value (by scope and digest).
#[derive(Debug, Default)]
pub(crate) struct SeenAt {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    calls: HashMap<String, (Arc<str>, Arc<str>)>,
    order: VecDeque<String>,
}

impl SeenAt {
    /// Notes that the call `call_id` of `tool` returned the values `keys`.
    pub(crate) fn note(&self, keys: Vec<String>, tool: &str, call_id: &str) {
        if keys.is_empty() {
            return;
        }
        let (tool, call_id): (Arc<str>, Arc<str>) = (Arc::from(tool), Arc::from(call_id));
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for key in keys {
            let fresh = inner
                .calls
                .insert(key.clone(), (Arc::clone(&tool), Arc::clone(&call_id)))
                .is_none();
            if fresh {
                inner.order.push_back(key);
            }
        }
        while inner.order.len() > CAPACITY {
            if let Some(oldest) = inner.order.pop_front() {
                inner.calls.remove(&oldest);
            }
        }
    }

    /// The tool and call id that last returned the value `key`.
    pub(crate) fn get(&self, key: &str) -> Option<(Arc<str>, Arc<str>)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.calls.get(key).cloned()
    }
}
