//! The upstreams' resources, prompts, completions and logging, served beside their tools
//! ([`toolgate::mcp::Passthrough`]).
//!
//! - Prompts are served under the names their tools would have (prefixed, or the upstream's own).
//! - Resources keep their URIs (a URI names the resource, and links inside contents use it); a
//!   read goes to the upstream that listed the URI, else to the one with the template whose fixed
//!   start (before its first `{`) is the longest start of the URI, else — when exactly one
//!   upstream serves resources — to that one. A URI two upstreams claim is read from neither.
//! - Every list is read from the upstreams when a client asks, within `limits.list_timeout_ms`;
//!   an upstream that is down or too slow is left out of that answer, never fails it.
//! - Logging levels are accepted and not sent upstream (one upstream session serves every client);
//!   an upstream's log messages go to the client of the one call waiting on that upstream.

mod paged;
mod routing;

use routing::{fits_start, template_start};

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

#[expect(
    deprecated,
    reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
)]
use rmcp::model::LoggingLevel;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, Prompt, Reference, Resource,
    ResourceTemplate, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleServer};
use rmcp::{ErrorData, ServiceError};
use toolgate::mcp::Caller;
use toolgate::mcp::passthrough::{GET_PROMPT, Gated, Passing, READ_RESOURCE, Served};

use crate::config::{Config, Limits};
use crate::upstream::Link;

/// The gateway's upstreams as a [`toolgate::mcp::Passthrough`].
pub struct Upstreams {
    config: Arc<Config>,
    links: Vec<Arc<Link>>,
    /// Which upstream listed each URI and template, as last listed.
    listed: RwLock<Listed>,
    relisting: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Listed {
    uris: HashMap<String, Vec<String>>,
    templates: Vec<(String, String)>,
    /// When, and at which [`listings_generation`](toolgate::mcp::Passthrough::listings_generation).
    at: Option<std::time::Instant>,
    generation: u64,
}

/// How long a listing routes reads of URIs it does not name before a miss lists again.
const RELIST_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

impl Upstreams {
    pub fn new(config: Arc<Config>, links: Vec<Arc<Link>>) -> Self {
        Self {
            config,
            links,
            listed: RwLock::default(),
            relisting: tokio::sync::Mutex::new(()),
        }
    }

    /// The upstreams that are up and declared what `declared` picks (resources, prompts).
    fn declaring(&self, pick: impl Fn((bool, bool)) -> bool) -> Vec<&Arc<Link>> {
        self.links
            .iter()
            .filter(|link| pick(crate::gates::declared(link)))
            .collect()
    }

    /// Each entry with its upstream's gate `method`.
    fn gated<T>(&self, entries: Vec<(String, T)>, method: &str) -> Vec<Gated<T>> {
        entries
            .into_iter()
            .map(|(upstream, entry)| Gated {
                entry,
                gate: self.config.served_name(&upstream, method),
            })
            .collect()
    }

    fn link(&self, upstream: &str) -> Option<&Arc<Link>> {
        self.links.iter().find(|link| link.name() == upstream)
    }

    /// Lists with `list` from every upstream declaring `pick`, each within the listing bound; a
    /// failing upstream is left out (logged).
    async fn each_listed<'a, T, F, Fut>(
        &'a self,
        pick: fn((bool, bool)) -> bool,
        list: F,
    ) -> Vec<(String, T)>
    where
        F: Fn(Peer<rmcp::service::RoleClient>, &'a Limits) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>, paged::PagedError>>,
    {
        let mut all = Vec::new();
        for link in self.declaring(pick) {
            let Ok(peer) = link.peer() else { continue };
            let limits = &self.config.limits;
            match tokio::time::timeout(limits.list_timeout, list(peer, limits)).await {
                Ok(Ok(items)) => {
                    all.extend(items.into_iter().map(|item| (link.name().to_owned(), item)))
                }
                Ok(Err(error)) => {
                    tracing::warn!(upstream = %link.name(), "its list could not be read: {error}; left out of this answer")
                }
                Err(_) => {
                    tracing::warn!(upstream = %link.name(), "its list took longer than limits.list_timeout_ms; left out of this answer")
                }
            }
        }
        all
    }

    /// Every upstream's resources and templates, listed now and remembered for routing.
    async fn relist(&self) -> (Vec<(String, Resource)>, Vec<(String, ResourceTemplate)>) {
        let serving = |(resources, _): (bool, bool)| resources;
        let resources = self
            .each_listed(serving, |peer, limits| async move {
                paged::resources(&peer, limits).await
            })
            .await;
        let templates = self
            .each_listed(serving, |peer, limits| async move {
                paged::templates(&peer, limits).await
            })
            .await;
        self.remember(&resources, &templates);
        (resources, templates)
    }

    fn remember(&self, resources: &[(String, Resource)], templates: &[(String, ResourceTemplate)]) {
        use toolgate::mcp::Passthrough as _;
        let mut listed = Listed {
            at: Some(std::time::Instant::now()),
            generation: self.listings_generation(),
            ..Listed::default()
        };
        for (upstream, resource) in resources {
            let owners = listed.uris.entry(resource.uri.clone()).or_default();
            if !owners.contains(upstream) {
                owners.push(upstream.clone());
            }
        }
        listed.templates = templates
            .iter()
            .map(|(upstream, template)| (template.uri_template.clone(), upstream.clone()))
            .collect();
        *self
            .listed
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = listed;
    }

    /// The upstream serving `uri`, from what was last listed; `Err` when two claim it.
    fn owner_of_uri(&self, uri: &str) -> Result<Option<String>, ErrorData> {
        let listed = self
            .listed
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut owners: Vec<&String> = match listed.uris.get(uri) {
            Some(owners) => owners.iter().collect(),
            None => {
                // The templates whose fixed start is the longest start of the URI.
                let fitting = listed
                    .templates
                    .iter()
                    .filter_map(|(template, upstream)| {
                        let start = template_start(template);
                        fits_start(template, start, uri).then_some((start.len(), upstream))
                    })
                    .collect::<Vec<_>>();
                let longest = fitting.iter().map(|(length, _)| *length).max();
                fitting
                    .into_iter()
                    .filter(|(length, _)| Some(*length) == longest)
                    .map(|(_, upstream)| upstream)
                    .collect()
            }
        };
        owners.sort();
        owners.dedup();
        match owners.as_slice() {
            [] => Ok(None),
            [only] => Ok(Some((*only).clone())),
            _ => Err(ErrorData::invalid_params(
                "two upstreams serve a resource at this URI; the gateway reads it from neither",
                None,
            )),
        }
    }

    /// The session of the upstream serving `uri` (listing again on a miss).
    async fn resource_owner(&self, uri: &str) -> Result<Option<Arc<Link>>, ErrorData> {
        let mut owner = self.owner_of_uri(uri)?;
        if owner.is_none() {
            // One upstream serving resources may serve URIs it does not list.
            if let [only] = self.declaring(|(resources, _)| resources).as_slice() {
                owner = Some(only.name().to_owned());
            }
        }
        // Listed again on a miss only when what was listed may be out of date: a client cannot
        // make every read of an unknown URI list every upstream.
        if owner.is_none() {
            // One listing at a time: the misses that waited for it find it fresh.
            let _one = self.relisting.lock().await;
            if self.stale() {
                let _ = self.relist().await;
            }
            owner = self.owner_of_uri(uri)?;
        }
        Ok(owner.and_then(|upstream| self.link(&upstream).cloned()))
    }

    /// Whether the last listing is older than [`RELIST_AFTER`] or a list changed since.
    fn stale(&self) -> bool {
        use toolgate::mcp::Passthrough as _;
        let listed = self
            .listed
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        listed.at.is_none_or(|at| at.elapsed() > RELIST_AFTER)
            || listed.generation != self.listings_generation()
    }
}

impl toolgate::mcp::Passthrough for Upstreams {
    fn served(&self) -> Served {
        let (mut resources, mut prompts, mut subscriptions, mut completions, mut logging) =
            (false, false, false, false, false);
        for link in &self.links {
            let Some(info) = link.peer().ok().and_then(|peer| peer.peer_info()) else {
                continue;
            };
            let declared = &info.capabilities;
            resources |= declared.resources.is_some();
            subscriptions |= declared
                .resources
                .as_ref()
                .is_some_and(|resources| resources.subscribe == Some(true));
            prompts |= declared.prompts.is_some();
            completions |= declared.completions.is_some();
            logging |= declared.logging.is_some();
        }
        let mut served = Served::nothing();
        if resources {
            served = served.with_resources(subscriptions);
        }
        if prompts {
            served = served.with_prompts();
        }
        if completions {
            served = served.with_completions();
        }
        if logging {
            served = served.with_logging();
        }
        served
    }

    fn list_resources(&self) -> Passing<'_, Vec<Gated<Resource>>> {
        Box::pin(async move {
            let (resources, _) = self.relist().await;
            Ok(self.gated(resources, READ_RESOURCE))
        })
    }

    fn list_resource_templates(&self) -> Passing<'_, Vec<Gated<ResourceTemplate>>> {
        Box::pin(async move {
            let (_, templates) = self.relist().await;
            Ok(self.gated(templates, READ_RESOURCE))
        })
    }

    fn resource_gate<'a>(&'a self, uri: &'a str) -> Passing<'a, Option<String>> {
        Box::pin(async move {
            Ok(self
                .resource_owner(uri)
                .await?
                .map(|link| self.config.served_name(link.name(), READ_RESOURCE)))
        })
    }

    fn list_prompts(&self) -> Passing<'_, Vec<Gated<Prompt>>> {
        Box::pin(async move {
            let prompts = self
                .each_listed(
                    |(_, prompts)| prompts,
                    |peer, limits| async move { paged::prompts(&peer, limits).await },
                )
                .await;
            // Names screened as tool names are: a prompt whose name could pass for another's
            // (an invisible or bidi character, a look-alike of one listed before) is left out.
            let mut names = toolgate::registry::LookAlikes::default();
            Ok(prompts
                .into_iter()
                .filter_map(|(upstream, mut entry)| {
                    // A prompt whose served name reads as another upstream's is not served.
                    entry.name = self.config.claimed_name(&upstream, &entry.name)?;
                    if toolgate::registry::first_invisible(&entry.name).is_some()
                        || names.check(&entry.name).is_err()
                    {
                        return None;
                    }
                    Some(Gated {
                        entry,
                        gate: self.config.served_name(&upstream, GET_PROMPT),
                    })
                })
                .collect())
        })
    }

    fn prompt_gate(&self, name: &str) -> Option<String> {
        // As the list screens them: a name that shows nothing where it stands is not served.
        if toolgate::registry::first_invisible(name).is_some() {
            return None;
        }
        let (upstream, _) = self.config.owner_of(name)?;
        let link = self.link(upstream)?;
        crate::gates::declared(link)
            .1
            .then(|| self.config.served_name(upstream, GET_PROMPT))
    }

    fn complete(&self, mut request: CompleteRequestParams) -> Passing<'_, CompleteResult> {
        Box::pin(async move {
            let link = match &mut request.r#ref {
                Reference::Prompt(prompt) => {
                    let (upstream, own) = self
                        .config
                        .owner_of(&prompt.name)
                        .map(|(upstream, own)| (upstream.to_owned(), own.to_owned()))
                        .ok_or_else(|| {
                            ErrorData::invalid_params(
                                "no upstream serves a prompt of this name",
                                None,
                            )
                        })?;
                    prompt.name = own;
                    self.link(&upstream).cloned()
                }
                Reference::Resource(template) => {
                    let known = {
                        let listed = self
                            .listed
                            .read()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        listed
                            .templates
                            .iter()
                            .find(|(listed, _)| *listed == template.uri)
                            .map(|(_, upstream)| upstream.clone())
                    };
                    match known {
                        Some(upstream) => self.link(&upstream).cloned(),
                        None => self.resource_owner(&template.uri).await?,
                    }
                }
                _ => None,
            };
            let link = link.ok_or_else(|| {
                ErrorData::invalid_params("no upstream serves what this completion names", None)
            })?;
            let peer = link.peer().map_err(|why| unavailable(&link, &why))?;
            let mut completed =
                tokio::time::timeout(self.config.limits.call_timeout, peer.complete(request))
                    .await
                    .map_err(|_| {
                        ErrorData::internal_error(
                            format!("upstream `{}` did not answer in time", link.name()),
                            None,
                        )
                    })?
                    .map_err(|error| upstream_error(&link, error))?;
            // An upstream on an earlier revision sends none; the SDK leaves it out for such
            // clients.
            completed
                .result_type
                .get_or_insert(rmcp::model::ResultType::COMPLETE);
            Ok(completed)
        })
    }

    #[expect(
        deprecated,
        reason = "resources/subscribe is the legacy revisions' way, which the gateway's clients use"
    )]
    fn subscribe(
        &self,
        uri: String,
        caller: Caller,
        peer: Peer<RoleServer>,
        watching: toolgate::mcp::Watching,
    ) -> Passing<'_, ()> {
        Box::pin(async move {
            let link = self.resource_owner(&uri).await?.ok_or_else(|| {
                ErrorData::new(
                    ErrorCode(-32002),
                    "no upstream serves a resource at this URI",
                    None,
                )
            })?;
            let session = link.session().map_err(|why| unavailable(&link, &why))?;
            let (first, emptied) = session
                .subscribers
                .add(&uri, caller.session.unwrap_or_default(), peer, watching)
                .map_err(|why| ErrorData::invalid_request(why, None))?;
            if !emptied.is_empty() {
                // Not in this client's time: the upstream forgets them in the background.
                let peer = session.peer.clone();
                tokio::spawn(async move {
                    for gone in emptied {
                        let _ = peer.unsubscribe(UnsubscribeRequestParams::new(gone)).await;
                    }
                });
            }
            if first {
                session
                    .peer
                    .subscribe(SubscribeRequestParams::new(uri))
                    .await
                    .map_err(|error| upstream_error(&link, error))?;
            }
            Ok(())
        })
    }

    #[expect(
        deprecated,
        reason = "resources/unsubscribe is the legacy revisions' way, which the gateway's clients use"
    )]
    fn unsubscribe(&self, uri: String, caller: Caller) -> Passing<'_, ()> {
        Box::pin(async move {
            let Some(link) = self.resource_owner(&uri).await? else {
                return Ok(());
            };
            let session = link.session().map_err(|why| unavailable(&link, &why))?;
            if session
                .subscribers
                .remove(&uri, &caller.session.unwrap_or_default())
            {
                session
                    .peer
                    .unsubscribe(UnsubscribeRequestParams::new(uri))
                    .await
                    .map_err(|error| upstream_error(&link, error))?;
            }
            Ok(())
        })
    }

    #[expect(
        deprecated,
        reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
    )]
    fn set_level(&self, _level: LoggingLevel, _subscriber: Peer<RoleServer>) -> Passing<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    fn listings_generation(&self) -> u64 {
        self.links.iter().map(|link| link.listing_changes()).sum()
    }
}

fn unavailable(link: &Link, why: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("upstream `{}` is unavailable ({why})", link.name()),
        None,
    )
}

fn upstream_error(link: &Link, error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => {
            ErrorData::internal_error(format!("upstream `{}` failed: {other}", link.name()), None)
        }
    }
}
