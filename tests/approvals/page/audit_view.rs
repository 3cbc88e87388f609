//! What the page shows beyond the call: an audit chain (in PostgreSQL or a JSON Lines file) with
//! its verification, which an edited entry breaks, and for a gateway the upstream a tool comes
//! from, the arguments in canonical form and Secure cookies.

use super::*;

#[cfg(feature = "postgres")]
use crate::postgres_support;

/// The page's audit view of a PostgreSQL chain: the last events, oldest first, and whether the
/// chain verifies — which an edited row breaks.
#[cfg(feature = "postgres")]
#[test]
fn a_postgres_chain_is_shown_with_its_verification() {
    use toolgate::approval_page::AuditView as _;
    use toolgate::audit::AuditKind;
    let Some(url) = postgres_support::server_url() else {
        return;
    };
    let db = postgres_support::Db::new(&url, "page_audit");
    let sink = db.sink("page");
    let registry = registry([counted(
        "deploy",
        json!({"type": "object"}),
        &Arc::default(),
    )]);
    let writer = Arc::new(db.sink("writer"));
    let controller = ToolController::new(registry, policy(&["deploy"], &[]))
        .with_audit_sink(Arc::clone(&writer));
    for index in 0..5 {
        let outcome = controller.handle(ToolCall::new(format!("c{index}"), "deploy", json!({})));
        assert!(matches!(outcome, Outcome::Completed(result) if !result.is_error));
    }
    // The last outcome is recorded deferred: committed within 50 ms, or now.
    toolgate::audit::AuditSink::sync(&*writer).unwrap();
    let snapshot = sink.snapshot(4).unwrap();
    assert!(snapshot.verified, "{}", snapshot.chain);
    assert_eq!(snapshot.events.len(), 4);
    assert_eq!(
        snapshot.events.last().unwrap().kind,
        AuditKind::ExecutionOutcome
    );
    assert_eq!(snapshot.events.last().unwrap().call_id, "c4");
    db.admin()
        .batch_execute("UPDATE toolgate_audit SET event = replace(event, 'c1', 'c9') WHERE seq = 4")
        .unwrap();
    let broken = sink.snapshot(4).unwrap();
    assert!(
        !broken.verified && !broken.chain.is_empty(),
        "{}",
        broken.chain
    );
}

/// What the page adds for a gateway: the upstream a tool comes from, the arguments in the
/// canonical form the digest covers, `Secure` cookies when asked for, and an audit chain that no
/// longer verifies shown as such.
#[test]
fn the_page_names_the_upstream_shows_canonical_arguments_and_a_broken_chain() {
    use toolgate::approval_page::{AuditView as _, JsonlAuditView};
    use toolgate::audit::JsonlAuditSink;
    block(async {
        let dir = std::env::temp_dir().join(format!("toolgate-page-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("audit.jsonl");
        let registry = registry([counted(
            "files__write",
            json!({"type": "object"}),
            &Arc::default(),
        )]);
        let policy = RulePolicy::from_json(
            r#"{"rules": [{"id": "w", "tool": "files__write", "action": "ask", "reason": "writes"}]}"#,
            &registry,
        )
        .unwrap();
        let controller = Arc::new(
            ToolController::new(registry, policy)
                .with_audit_sink(JsonlAuditSink::open(&log).unwrap()),
        );
        let router = ApprovalPage::new(Arc::clone(&controller), |credential: &str| {
            (credential == "sam-key").then(|| Principal::new("sam", ["ops"]))
        })
        .with_upstream_of(|tool: &str| tool.split_once("__").map(|(up, _)| up.to_owned()))
        .with_secure_cookies()
        .with_audit(JsonlAuditView::new(&log))
        .router();
        let call = ToolCall::new("c1", "files__write", json!({"z": 1.0, "a": [2.50, 1e2]}));
        let Outcome::PendingApproval(request) = controller.handle(call) else {
            panic!("held")
        };

        let login = send(
            &router,
            post(
                "/approvals/api/login",
                None,
                None,
                json!({"credential": "sam-key"}),
            ),
        )
        .await;
        let cookie = login.headers[header::SET_COOKIE].to_str().unwrap();
        // Over HTTPS the browser keeps it only as sent: Secure, for the whole host, no Domain.
        assert!(
            cookie.starts_with("__Host-toolgate_approvals=")
                && cookie.contains("; Secure")
                && cookie.contains("; Path=/;")
                && !cookie.contains("Domain"),
            "{cookie}"
        );
        let cookie = cookie.split(';').next().unwrap().to_owned();
        let csrf = login.body["csrf"].as_str().unwrap().to_owned();
        let listed = send(&router, get_as("/approvals/api/pending", &cookie, &csrf)).await;
        let shown = &listed.body["pending"][0];
        assert_eq!(shown["id"], request.approval_id.to_string());
        assert_eq!(shown["upstream"], "files");
        // Keys in order, each number in its one spelling: what the digest covers, laid out.
        assert_eq!(
            shown["arguments"],
            "{\n  \"a\": [\n    2.5,\n    100\n  ],\n  \"z\": 1\n}"
        );

        let view = JsonlAuditView::new(&log);
        let snapshot = view.snapshot(10).unwrap();
        assert!(snapshot.verified);
        assert!(!snapshot.events.is_empty());
        // Zeros reserved past the lines (`JsonlAuditSink::with_reserve`): the same entries shown.
        let lines = std::fs::read(&log).unwrap();
        let mut reserved = lines.clone();
        reserved.extend(vec![0; 1 << 20]);
        std::fs::write(&log, &reserved).unwrap();
        assert_eq!(view.snapshot(10).unwrap(), snapshot);
        std::fs::write(&log, &lines).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, text.replacen("\"c1\"", "\"c2\"", 1)).unwrap();
        let broken = view.snapshot(10).unwrap();
        assert!(!broken.verified, "an edited entry breaks the chain");
        assert!(!broken.chain.is_empty());
        let audit = send(&router, get_as("/approvals/api/audit", &cookie, &csrf)).await;
        assert_eq!(
            audit.body["snapshot"]["verified"], false,
            "{:?}",
            audit.body
        );
        drop((router, controller));
        let _ = std::fs::remove_dir_all(&dir);
    });
}
