//! Requests an upstream sends the gateway (issue 38, item 2): what the gateway does not pass on to
//! its clients is refused with a message saying so — never declined in a person's name.

use crate::support;

use serde_json::{Value, json};
use support::*;

#[tokio::test]
async fn an_upstreams_sampling_elicitation_and_roots_requests_are_refused_saying_why() {
    let work = Work::new("upstream-requests");
    let config = work.hostile_config("serve", "");
    work.write("record.jsonl.asks", "");
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "ask", "tool": "h__ask", "action": "allow", "reason": "test"},
                      {"id": "video", "tool": "h__video", "action": "allow", "reason": "test"}]}"#,
    );
    let client = serve(&config).await;
    let (text, is_error) = call(&client, "h__ask", json!({})).await;
    assert!(!is_error, "{text}");
    let answers: Value = serde_json::from_str(&text).expect("the upstream's JSON");
    for method in ["sampling/createMessage", "elicitation/create", "roots/list"] {
        let error = &answers[method]["error"];
        assert_eq!(error["code"], -32601, "{method}: {answers}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("{method} is not forwarded"))
                && message.contains("nobody was asked"),
            "{method}: {message}"
        );
        assert!(answers[method].get("result").is_none(), "{answers}");
    }
}

/// A result the gateway's SDK cannot read (a content block type no revision defines) is not
/// mistaken for an upstream that stopped: the client is told the upstream answered, that the call
/// may have taken effect, and that nothing of the answer was passed on — quoting none of it.
#[tokio::test]
async fn an_answer_the_gateway_cannot_read_says_the_upstream_answered() {
    let work = Work::new("upstream-unreadable");
    let config = work.hostile_config("serve", "");
    work.write("record.jsonl.asks", "");
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "video", "tool": "h__video", "action": "allow", "reason": "test"}]}"#,
    );
    let client = serve(&config).await;
    let (text, is_error) = call(&client, "h__video", json!({})).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("upstream `h` answered the call with a result the gateway cannot read")
            && text.contains("may have taken effect")
            && !text.contains("SECRET"),
        "{text}"
    );
    let (text, is_error) = call(&client, "h__video", json!({})).await;
    assert!(
        is_error && text.contains("cannot read"),
        "the session serves on: {text}"
    );
}

/// An upstream whose resource, template and prompt lists never end is listed within the page
/// bound its tools are (`limits.max_list_pages`), and reads of URIs it never listed do not list
/// it again: with one upstream serving resources, a read goes to it.
#[tokio::test]
async fn endless_resource_lists_stop_at_the_page_bound_and_reads_do_not_relist() {
    let work = Work::new("upstream-endless-resources");
    let config = work.hostile_config("serve", "[limits]\nmax_list_pages = 5\n");
    work.write("record.jsonl.resources", "");
    work.write(
        "policy.json",
        r#"{"rules": [{"id": "read", "tool": "h__resources/read", "action": "allow", "reason": "test"},
                      {"id": "get", "tool": "h__prompts/get", "action": "allow", "reason": "test"}]}"#,
    );
    let client = serve(&config).await;
    let pages = || {
        std::fs::read_to_string(work.path("record.jsonl.pages"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // Left out of the answer, not listed without end.
    let listed = client.list_resources(None).await.expect("an answer");
    assert!(listed.resources.is_empty(), "{listed:?}");
    let prompts = client.list_prompts(None).await.expect("an answer");
    assert!(prompts.prompts.is_empty(), "{prompts:?}");
    let seen = pages();
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let count = seen.iter().filter(|line| *line == method).count();
        assert!((1..=5).contains(&count), "{method}: {count} pages");
    }
    for number in 0..20 {
        let read = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(format!(
                "never://listed/{number}"
            )))
            .await
            .expect("read");
        assert_eq!(read.contents.len(), 1);
    }
    assert_eq!(pages().len(), seen.len(), "reads listed the upstream again");
}
