//! Round-4 item 17 and 12: the safe way to serve is the default one. Each `serve_io` is its own
//! connection, and a request state issued on one opens on no other, with no caller configured;
//! served through the SDK's own `serve`, where connections cannot be told apart, no state is
//! issued at all; and every call gets an id unique to the server, not the client's JSON-RPC id.

use super::*;

#[tokio::test]
async fn a_request_state_opens_only_on_the_connection_it_was_issued_on() {
    let tools = tools();
    let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
    let first = connect(
        server.clone(),
        Revision::Stateless,
        Some(ElicitationAction::Accept),
    )
    .await;
    let second = connect(server, Revision::Stateless, Some(ElicitationAction::Accept)).await;
    let state = held_state(&first).await;
    let refused = retry(&second, json!({"text": "v1"}), &state).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).starts_with("refused"), "{}", text(&refused));
    assert_eq!(tools.runs.load(Ordering::SeqCst), 0);
    assert_eq!(tools.controller.pending().len(), 1, "still waiting");
    let ran = retry(&first, json!({"text": "v1"}), &state).await;
    assert_eq!((text(&ran), ran.is_error), ("patched".into(), Some(false)));
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn served_through_the_sdk_without_a_caller_no_state_is_issued_and_the_call_waits() {
    let tools = tools();
    let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let person = Person {
        answer: Some(ElicitationAction::Accept),
        asked: Arc::default(),
        changed: mpsc::unbounded_channel().0,
    };
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = serve_client_with_lifecycle(person, client_io, lifecycle)
        .await
        .unwrap();
    let response = client
        .call_tool_once(call("patch", json!({"text": "v1"})))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = response else {
        panic!("no input_required: a state here could be replayed on any connection")
    };
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("cannot tell its callers apart"),
        "{}",
        text(&result)
    );
    assert_eq!(tools.runs.load(Ordering::SeqCst), 0);
    assert_eq!(tools.controller.pending().len(), 1, "waits out of band");
}

#[tokio::test]
async fn every_call_gets_an_id_unique_to_the_server_not_the_clients() {
    let tools = tools();
    let server = McpServer::new(Arc::clone(&tools.controller)).unwrap();
    // Two sessions whose first call has the same JSON-RPC id; a second server over the same
    // controller (another instance sharing the audit log).
    for server in [
        server.clone(),
        server,
        McpServer::new(Arc::clone(&tools.controller)).unwrap(),
    ] {
        let session = connect(server, Revision::Stateless, None).await;
        let response = session
            .client
            .call_tool_once(call("patch", json!({"text": "v1"})))
            .await
            .unwrap();
        // No client here can be asked, so each call waits out of band.
        let CallToolResponse::Complete(result) = response else {
            panic!("{response:?}")
        };
        assert!(text(&result).contains("waits for a person"), "{result:?}");
    }
    let ids: std::collections::BTreeSet<String> = tools
        .controller
        .pending()
        .iter()
        .map(|request| request.call.call_id.clone())
        .collect();
    assert_eq!(tools.controller.pending().len(), 3);
    assert_eq!(ids.len(), 3, "{ids:?}");
    for id in &ids {
        let (prefix, n) = id.rsplit_once('-').expect("prefix-counter");
        assert_eq!(prefix.len(), 16, "{id}");
        assert!(n.parse::<u64>().is_ok(), "{id}");
    }
}
