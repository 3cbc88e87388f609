//! The SDK spawns one task per request whose future holds the handler's future for whichever
//! request it is — so its size is that of the largest handler. The task is moved into its cell
//! and its stage overwritten when it ends, each a copy of that size: with the whole gate inline
//! (10,912 bytes against the SDK's own 3,368), that copying cost more per call than the rest of
//! the gateway's own work. Each handler boxes its work, so the spawned future is the SDK's own.

use rmcp::Service as _;
use rmcp::model::ClientRequest;
use rmcp::service::{RequestContext, RoleServer};

use super::McpServer;

/// The size of what `make` returns, without calling it.
fn size_of_output<A, R>(_make: impl FnOnce(A) -> R) -> usize {
    std::mem::size_of::<R>()
}

/// A handler of nothing: every request gets the SDK's default answer.
struct Empty;

impl rmcp::ServerHandler for Empty {}

#[test]
fn the_future_the_sdk_spawns_per_request_is_no_larger_than_for_a_handler_of_nothing() {
    let ours = size_of_output(
        |(server, request, context): (
            &'static McpServer,
            ClientRequest,
            RequestContext<RoleServer>,
        )| server.handle_request(request, context),
    );
    let sdk = size_of_output(
        |(server, request, context): (
            &'static Empty,
            ClientRequest,
            RequestContext<RoleServer>,
        )| { server.handle_request(request, context) },
    );
    assert!(
        ours <= sdk,
        "the per-request future is {ours} bytes, the SDK's own {sdk}"
    );
}
