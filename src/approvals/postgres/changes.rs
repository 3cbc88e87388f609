//! Following the changes every node publishes, without polling.

use std::fmt;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator as _;
use postgres::{Client, Config, NoTls};
use serde::Deserialize;

use super::pool::store_error;
use super::schema::CHANNEL;
use super::{STATE, parse_state};
use crate::approvals::{ApprovalError, ApprovalId, ApprovalState, StoreError};

/// One committed change to an approval request: a new request (`Pending`), an answer, an expiry,
/// a revocation, or a recorded outcome (`Approved` with `Some` outcome).
///
/// `state` is borne out by the request's row, read when the notification arrives: any
/// connection to the database may `NOTIFY` on the channel, so a notification is only a wake-up.
/// The state it names is reported if the row is in it, or has moved on from it to an outcome (a
/// request given its outcome was once approved without one); otherwise the row's own state is. One whose request has no row is not reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApprovalChange {
    /// The request that changed.
    pub approval_id: ApprovalId,
    /// Where it stands now.
    pub state: ApprovalState,
}

/// What the trigger publishes; ids and states only, never the call. Anyone may send it: the
/// state it claims is believed only as far as the row bears it out.
#[derive(Deserialize)]
struct Published {
    schema: String,
    id: String,
    state: String,
    outcome: Option<String>,
}

/// Changes to approval requests as every node commits them, from
/// [`PostgresApprovalStore::subscribe`](super::PostgresApprovalStore::subscribe): a UI on any
/// node refreshes its list on a new request and drops an answered one.
///
/// Changes committed before the subscription started are not replayed: read the current list
/// ([`ToolController::pending`](crate::ToolController::pending)) after subscribing. A lost
/// connection ends the subscription with an error (PostgreSQL does not keep notifications for a
/// listener that is gone): subscribe again and re-read the list.
///
/// As an [`Iterator`] it blocks until the next change.
pub struct ApprovalChanges {
    // Invariant: this connection has run `LISTEN toolgate_approvals` and is used for nothing else.
    client: Client,
    schema: String,
}

impl fmt::Debug for ApprovalChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalChanges")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl ApprovalChanges {
    pub(super) fn listen(config: &Config, schema: String) -> Result<Self, ApprovalError> {
        let mut client = config
            .connect(NoTls)
            .map_err(|error| store_error("cannot connect to the approval database", error))?;
        // The rows are read unqualified on this connection, so it must see the store's schema.
        let current: String = client
            .query_one("SELECT current_schema()", &[])
            .map_err(|error| store_error("cannot listen for approval changes", error))?
            .get(0);
        if current != schema {
            return Err(ApprovalError::Store(StoreError::new(format!(
                "the change feed connected to schema {current:?}, the store's is {schema:?}"
            ))));
        }
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .map_err(|error| store_error("cannot listen for approval changes", error))?;
        Ok(Self { client, schema })
    }

    /// The next change, waiting at most `timeout`; `None` if none came.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::Store`] if the connection was lost.
    pub fn next_within(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<ApprovalChange>, ApprovalError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let next = self
                .client
                .notifications()
                .timeout_iter(left)
                .next()
                .map_err(|error| store_error("lost the approval change feed", error))?;
            match next {
                Some(notification) => {
                    let payload = notification.payload().to_owned();
                    if let Some(change) = self.ours(&payload)? {
                        return Ok(Some(change));
                    }
                }
                // `None` also means the server hung up; only a live connection has timed out.
                None if self.client.is_closed() => {
                    return Err(ApprovalError::Store(StoreError::new(
                        "lost the approval change feed: the connection closed",
                    )));
                }
                None => return Ok(None),
            }
            if left.is_zero() {
                return Ok(None);
            }
        }
    }

    /// A published change of this store's schema, its state borne out by the request's row;
    /// others (another schema, an unreadable payload, an id with no row) are skipped. Whoever
    /// can connect can `NOTIFY`; only the store writes the rows.
    fn ours(&mut self, payload: &str) -> Result<Option<ApprovalChange>, ApprovalError> {
        let Ok(published) = serde_json::from_str::<Published>(payload) else {
            return Ok(None);
        };
        if published.schema != self.schema {
            return Ok(None);
        }
        let Ok(approval_id) = published.id.parse::<ApprovalId>() else {
            return Ok(None);
        };
        let row = self
            .client
            .query_opt(STATE, &[&published.id])
            .map_err(|error| store_error("cannot read a changed approval", error))?;
        Ok(row.and_then(|row| {
            let (state, outcome): (&str, Option<&str>) = (row.get(0), row.get(1));
            let stored = parse_state(state, outcome)?;
            let claimed = parse_state(&published.state, published.outcome.as_deref());
            let state = match claimed {
                Some(claimed) if passed_through(stored, claimed) => claimed,
                _ => stored,
            };
            Some(ApprovalChange { approval_id, state })
        }))
    }
}

/// Whether a request now `stored` was `claimed` on its way there: the same state, or approved
/// without the outcome it now has. (`pending` is claimed only while the row says so: a forged
/// `pending` for an answered request is reported as what the row says.)
fn passed_through(stored: ApprovalState, claimed: ApprovalState) -> bool {
    stored == claimed
        || (claimed == ApprovalState::Approved { outcome: None }
            && matches!(stored, ApprovalState::Approved { .. }))
}

impl Iterator for ApprovalChanges {
    type Item = Result<ApprovalChange, ApprovalError>;

    /// Blocks until the next change; after a lost connection yields that error, then ends.
    fn next(&mut self) -> Option<Self::Item> {
        if self.client.is_closed() {
            return None;
        }
        loop {
            match self.next_within(Duration::from_secs(3600)) {
                Ok(Some(change)) => return Some(Ok(change)),
                Ok(None) => {}
                Err(error) => return Some(Err(error)),
            }
        }
    }
}
