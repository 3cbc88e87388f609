//! Subscriptions of the gateway's clients to one upstream session's resources: the upstream is
//! subscribed once per URI while any client is, and each `notifications/resources/updated` it
//! sends goes to the clients subscribed to that URI. One table per session: a restarted
//! upstream starts with none (its clients' subscriptions end with the session they were made in).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer};
use toolgate::mcp::Watching;

/// A client subscribed: its session's key (what an unsubscribe names), the session to notify,
/// and whether it may still be told (the policy in force may have hidden the resource since).
type Subscriber = (String, Peer<RoleServer>, Watching);

/// Per URI, the clients subscribed to it.
#[derive(Clone, Debug, Default)]
pub struct Subscribers(Arc<Mutex<HashMap<String, Vec<Subscriber>>>>);

/// The most URIs one session may be subscribed to on one upstream.
pub const MAX_PER_SESSION: usize = 1024;

/// The longest URI subscribed to.
pub const MAX_URI_BYTES: usize = 8192;

impl Subscribers {
    /// Subscribes `session` to `uri`: whether it is the first (the upstream must be told), and
    /// the URIs whose every subscriber's session has closed since (the upstream may be told to
    /// stop; they are forgotten). A session subscribed twice is subscribed once.
    ///
    /// # Errors
    ///
    /// The URI is longer than [`MAX_URI_BYTES`], or the session is subscribed to
    /// [`MAX_PER_SESSION`] URIs already.
    pub fn add(
        &self,
        uri: &str,
        session: String,
        peer: Peer<RoleServer>,
        watching: Watching,
    ) -> Result<(bool, Vec<String>), String> {
        if uri.len() > MAX_URI_BYTES {
            return Err(format!(
                "a URI longer than {MAX_URI_BYTES} bytes is not subscribed to"
            ));
        }
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Closed sessions' subscriptions go first: they count against nobody, and the upstream
        // need not keep a subscription nobody reads.
        let mut emptied = Vec::new();
        table.retain(|known, subscribed| {
            subscribed.retain(|(_, peer, _)| !peer.is_transport_closed());
            let keep = !subscribed.is_empty();
            if !keep && known != uri {
                emptied.push(known.clone());
            }
            keep
        });
        let held = table
            .values()
            .filter(|subscribed| subscribed.iter().any(|(known, _, _)| *known == session))
            .count();
        let already = table
            .get(uri)
            .is_some_and(|subscribed| subscribed.iter().any(|(known, _, _)| *known == session));
        if held >= MAX_PER_SESSION && !already {
            return Err(format!(
                "this session is subscribed to {MAX_PER_SESSION} resources of this upstream already, the most it may be"
            ));
        }
        let subscribed = table.entry(uri.to_owned()).or_default();
        let first = subscribed.is_empty();
        if !already {
            subscribed.push((session, peer, watching));
        }
        Ok((first, emptied))
    }

    /// Ends `session`'s subscription to `uri` (and those of sessions that have closed); whether
    /// none is left (the upstream may be told).
    pub fn remove(&self, uri: &str, session: &str) -> bool {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(subscribed) = table.get_mut(uri) else {
            return false;
        };
        subscribed.retain(|(known, peer, _)| known != session && !peer.is_transport_closed());
        let none = subscribed.is_empty();
        if none {
            table.remove(uri);
        }
        none
    }

    /// Sends the update to every client subscribed to its URI that may still be told (asked
    /// now, outside the table's lock).
    pub async fn updated(&self, params: ResourceUpdatedNotificationParam) {
        let subscribed: Vec<(Peer<RoleServer>, Watching)> = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.uri)
            .map(|subscribed| {
                subscribed
                    .iter()
                    .map(|(_, peer, watching)| (peer.clone(), watching.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let peers = subscribed
            .into_iter()
            .filter(|(_, watching)| watching.still())
            .map(|(peer, _)| peer);
        for peer in peers {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(params.uri.clone()))
                .await;
        }
    }
}
