//! [`McpServer`] as the SDK's `ServerHandler`: tools through the controller, and — when a
//! [`Passthrough`](super::Passthrough) serves them — resources, prompts, completions and logging,
//! reads and gets gated (see [`gated`](super::gated)).

#[expect(
    deprecated,
    reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, PromptsCapability, ReadResourceRequestParams,
    ReadResourceResponse, Reference, ResourcesCapability, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};

use super::gated::not_served;
use super::passthrough::{Gated, Passthrough, Served};
use super::{McpServer, wire};
use crate::contract::ToolSpec;

impl McpServer {
    /// The passthrough, if it serves what `wanted` picks.
    fn serving(
        &self,
        what: &str,
        wanted: impl Fn(Served) -> bool,
    ) -> Result<&dyn Passthrough, ErrorData> {
        self.passthrough
            .as_deref()
            .filter(|passthrough| wanted(passthrough.served()))
            .ok_or_else(|| not_served(what))
    }

    /// The specs the request's caller may see (see
    /// [`ToolController::listed_specs_for`](crate::ToolController::listed_specs_for)).
    fn listed_for(&self, context: &RequestContext<RoleServer>) -> std::sync::Arc<[ToolSpec]> {
        let caller = self.caller(context);
        self.controller
            .listed_specs_for(caller.principal.as_deref())
    }

    /// Whether the registry holds `gate` and some call of it by the request's caller could pass.
    fn lists(&self, gate: &str, context: &RequestContext<RoleServer>) -> bool {
        self.listed_for(context)
            .iter()
            .any(|spec| spec.name == gate)
    }

    /// The entries whose gate some call of the request's caller could pass: a gate the policy
    /// denies to every call of theirs hides what it guards, as a denied tool is hidden.
    fn listable<T>(&self, gated: Vec<Gated<T>>, context: &RequestContext<RoleServer>) -> Vec<T> {
        let listed = self.listed_for(context);
        gated
            .into_iter()
            .filter(|entry| listed.iter().any(|spec| spec.name == entry.gate))
            .map(|entry| entry.entry)
            .collect()
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let served = self
            .passthrough
            .as_ref()
            .map_or_else(Served::nothing, |passthrough| passthrough.served());
        if served.resources {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = served.subscriptions.then_some(true);
            resources.list_changed = Some(true);
            capabilities.resources = Some(resources);
        }
        if served.prompts {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if served.completions {
            capabilities.completions = Some(serde_json::Map::new());
        }
        if served.logging {
            capabilities.logging = Some(serde_json::Map::new());
        }
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new(&self.implementation.0, &self.implementation.1);
        info
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + Send + '_ {
        Box::pin(async move {
            let specs: Vec<ToolSpec> = self
                .listed_for(&context)
                .iter()
                .filter(|spec| !super::passthrough::is_gate(&spec.name))
                .cloned()
                .collect();
            Ok(wire::list_result(&specs))
        })
    }

    fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, ErrorData>> + Send + '_ {
        Box::pin(async move {
            let listed = self
                .serving("resources", |served| served.resources)?
                .list_resources()
                .await?;
            Ok(ListResourcesResult::with_all_items(
                self.listable(listed, &context),
            ))
        })
    }

    fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, ErrorData>> + Send + '_ {
        Box::pin(async move {
            let listed = self
                .serving("resources", |served| served.resources)?
                .list_resource_templates()
                .await?;
            Ok(ListResourceTemplatesResult::with_all_items(
                self.listable(listed, &context),
            ))
        })
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, ErrorData>> + Send + '_ {
        Box::pin(async move {
            // A forwarding gate reads the client's cancellation and session from here.
            let caller = self.caller(&context);
            super::downstream::within(
                self,
                &context,
                caller.clone(),
                None,
                self.read_resource_gated(request, &context, caller),
            )
            .await
            .map(Into::into)
        })
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        Box::pin(async move {
            let passthrough =
                self.serving("resource subscriptions", |served| served.subscriptions)?;
            // A resource whose reads the policy denies to every caller is not watched either.
            let gate = passthrough.resource_gate(&request.uri).await?;
            let Some(gate) = gate.filter(|gate| self.lists(gate, &context)) else {
                return Err(ErrorData::invalid_params(
                    "no resource this server serves to you is at this URI; nothing was subscribed",
                    None,
                ));
            };
            // Asked again at each update: a policy that hides the resource from this caller later
            // stops its updates too.
            let caller = self.caller(&context);
            let (controller, principal) = (self.controller.clone(), caller.principal.clone());
            let watching = super::Watching::new(move || {
                controller
                    .listed_specs_for(principal.as_deref())
                    .iter()
                    .any(|spec| spec.name == gate)
            });
            passthrough
                .subscribe(request.uri, caller, context.peer, watching)
                .await
        })
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        Box::pin(async move {
            self.serving("resource subscriptions", |served| served.subscriptions)?
                .unsubscribe(request.uri, self.caller(&context))
                .await
        })
    }

    fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, ErrorData>> + Send + '_ {
        Box::pin(async move {
            let listed = self
                .serving("prompts", |served| served.prompts)?
                .list_prompts()
                .await?;
            Ok(ListPromptsResult::with_all_items(
                self.listable(listed, &context),
            ))
        })
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, ErrorData>> + Send + '_ {
        Box::pin(async move {
            let caller = self.caller(&context);
            super::downstream::within(
                self,
                &context,
                caller.clone(),
                None,
                self.get_prompt_gated(request, &context, caller),
            )
            .await
            .map(Into::into)
        })
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, ErrorData>> + Send + '_ {
        Box::pin(async move {
            let passthrough = self.serving("completions", |served| served.completions)?;
            // What the policy hides from every caller is not completed either: a completion runs the
            // upstream's code on the client's input, and can list what the lists leave out.
            let gate = match &request.r#ref {
                Reference::Prompt(prompt) => passthrough.prompt_gate(&prompt.name),
                Reference::Resource(template) => passthrough.resource_gate(&template.uri).await?,
                _ => None,
            };
            if !gate.is_some_and(|gate| self.lists(&gate, &context)) {
                return Err(ErrorData::invalid_params(
                    "nothing this server serves to you has that name; nothing was completed",
                    None,
                ));
            }
            let completed = passthrough.complete(request).await?;
            let completed = serde_json::to_value(completed)
            .map(super::gated::without_reserved_meta)
            .and_then(serde_json::from_value)
            .map_err(|_| {
                ErrorData::internal_error(
                    "the upstream's completion is not a valid MCP result; nothing of it was passed on",
                    None,
                )
            })?;
            Ok(completed)
        })
    }

    #[expect(
        deprecated,
        reason = "logging passes on the revisions that have it (SEP-2577 drops it from 2026-07-28)"
    )]
    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        Box::pin(async move {
            let passthrough = self.serving("logging", |served| served.logging)?;
            let session = self.caller(&context).session.unwrap_or_default();
            {
                let mut levels = self
                    .log_levels
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // A preference, bounded: past the bound a new session's level is not kept (it is
                // sent every message, as before it asked).
                if levels.len() < super::downstream::MAX_LOG_LEVELS || levels.contains_key(&session)
                {
                    levels.insert(session, request.level as u8);
                }
            }
            passthrough.set_level(request.level, context.peer).await
        })
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        Box::pin(async move {
            // A forwarding handler reads the client's progress token and cancellation from here.
            // The caller read once: the request's and the handler's.
            let caller = self.caller(&context);
            // The whole request — a call, a held call asked about and run, a retry answering one —
            // runs in its span, when one is made.
            #[cfg(feature = "tracing")]
            let span = self.call_span_for(&caller, [request.meta.as_ref(), Some(&context.meta)]);
            let tool = request.name.clone();
            let call = self.call(request, &context, caller.clone());
            #[cfg(feature = "tracing")]
            let call = tracing::Instrument::instrument(call, span);
            super::downstream::within(self, &context, caller, Some(&tool), call).await
        })
    }

    /// The SDK's handshake, plus a watcher that sends `notifications/tools/list_changed` to this
    /// session when the controller's generation moves. The generation is read here, before the
    /// client has the result, so a replacement right after the handshake is not missed.
    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, ErrorData>> + Send + '_ {
        Box::pin(async move {
            context.peer.set_peer_info(request.clone());
            let server = self.clone();
            let peer = context.peer;
            let listings = |server: &Self| {
                server
                    .passthrough
                    .as_ref()
                    .map(|passthrough| (passthrough.served(), passthrough.listings_generation()))
            };
            let mut seen = server.controller.generation();
            let mut seen_listings = listings(&server).map(|(_, generation)| generation);
            tokio::spawn(async move {
                // Checks the transport on every tick, so the task ends with the session.
                while !peer.is_transport_closed() {
                    tokio::time::sleep(server.change_poll).await;
                    let now = server.controller.generation();
                    // A new policy may show or hide resources and prompts as it does tools.
                    let policy_moved = now != seen;
                    if policy_moved {
                        seen = now;
                        if peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                    let Some((served, generation)) = listings(&server) else {
                        continue;
                    };
                    if policy_moved || seen_listings != Some(generation) {
                        seen_listings = Some(generation);
                        let resources = async {
                            if served.resources {
                                peer.notify_resource_list_changed().await
                            } else {
                                Ok(())
                            }
                        };
                        let prompts = async {
                            if served.prompts {
                                peer.notify_prompt_list_changed().await
                            } else {
                                Ok(())
                            }
                        };
                        if resources.await.is_err() || prompts.await.is_err() {
                            return;
                        }
                    }
                }
            });
            self.negotiate_initialize(&request)
        })
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send + '_ {
        Box::pin(async move {
            if context.accepted().tools_list_changed != Some(true) {
                context.cancelled().await;
                return Ok(());
            }
            let mut seen = self.controller.generation();
            loop {
                tokio::select! {
                    () = context.cancelled() => return Ok(()),
                    () = self.next_change(&mut seen) => {
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                }
            }
        })
    }
}
