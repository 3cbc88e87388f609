//! Result rules read structured content, a content block's fields and `_meta` whole as well as
//! string by string: a pattern over a key and its value (`"password": "…"`) holds there as it
//! does in a result's text. Read string by string only, such a rule never held on structured
//! content — a documented limit until 7 December 2026. A rule that looks withholds or labels; a
//! redacting rule whose match runs beyond one string cannot redact it in place and withholds the
//! result; one whose matches lie inside strings still redacts them where they are.
#![cfg(all(feature = "sqlite", feature = "postgres", unix))]

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use toolgate::definition::ToolOutput;
use toolgate::*;

type Output = Arc<Mutex<ToolOutput>>;

/// A pattern over a credential's key and its value, as JSON writes them.
const CREDENTIAL: &str = r#""(?:password|secret)"\s*:\s*"[^"]+""#;

/// `fetch` returns what `output` holds; `send` carries data out.
fn controller(results: &str, output: &Output) -> ToolController {
    let output = Arc::clone(output);
    let registry = ToolRegistry::new([
        ToolDefinition::blocks_async(
            ToolSpec::new("fetch", "Fetches.", json!({"type": "object"})),
            move |_: Value| {
                let output = output.lock().unwrap().clone();
                async move { Ok::<_, ToolError>(output) }
            },
        )
        .unwrap(),
        ToolDefinition::new(
            ToolSpec::new("send", "Sends.", json!({"type": "object"})),
            |_: &Value| -> Result<String, ToolError> { Ok("sent".to_owned()) },
        )
        .unwrap(),
    ])
    .unwrap();
    // The flow rule reading the label, where a rule gives it.
    let flows = if results.contains(r#""label""#) {
        r#", "flows": [{"id": "nothing-leaves-after-credentials", "tool": "send",
                        "action": "deny", "reason": "a credential was read",
                        "after": {"label": "credential", "within": "session"}}]"#
    } else {
        ""
    };
    let policy = format!(
        r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "r"}}],
            "results": [{results}] {flows}}}"#
    );
    let policy = RulePolicy::from_json(&policy, &registry).unwrap_or_else(|e| panic!("{e}"));
    ToolController::try_new(registry, policy).unwrap()
}

fn rule(action: &str, pattern: &str) -> String {
    let label = if action == "label" {
        r#", "label": "credential""#
    } else {
        ""
    };
    format!(
        r#"{{"id": "credentials", "tool": "fetch", "pattern": {}, "action": "{action}",
            "reason": "credentials stay inside"{label}}}"#,
        json!(pattern)
    )
}

fn run(controller: &ToolController, tool: &str) -> ToolResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match runtime.block_on(controller.handle_async(ToolCall::new("c1", tool, json!({})))) {
        Outcome::Completed(result) => result,
        other => panic!("not completed: {other:?}"),
    }
}

/// Everything a client gets of `result`, as one JSON text.
fn everything(result: &ToolResult) -> String {
    json!({
        "content": result.content,
        "structured": result.structured,
        "blocks": result.blocks.as_ref().map(|blocks| blocks.content.clone()),
        "meta": result.blocks.as_ref().and_then(|blocks| blocks.meta.clone()),
    })
    .to_string()
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// Outputs holding `{"password": "hunter2"}` in each part read whole: structured content (its
/// text says nothing of it), a block's `_meta`, an embedded resource's fields, the result's
/// `_meta`.
fn credential_outputs() -> Vec<(&'static str, ToolOutput)> {
    let credential = json!({"user": "ana", "password": "hunter2"});
    let summary = json!({"type": "text", "text": "1 account"});
    vec![
        (
            "structured content",
            ToolOutput::new(vec![summary.clone()])
                .with_structured(json!({"accounts": [credential]})),
        ),
        (
            "a block's _meta",
            ToolOutput::new(vec![
                json!({"type": "resource_link", "uri": "file:///a", "name": "a",
                                        "_meta": credential}),
            ]),
        ),
        (
            "an embedded resource",
            ToolOutput::new(vec![json!({"type": "resource", "resource":
                {"uri": "file:///a", "mimeType": "application/json", "text": "{}",
                 "_meta": credential}})]),
        ),
        (
            "the result's _meta",
            ToolOutput::new(vec![summary]).with_meta(object(credential)),
        ),
    ]
}

#[test]
fn a_pattern_over_a_key_and_its_value_withholds_wherever_json_carries_them() {
    for (place, output) in credential_outputs() {
        let held: Output = Arc::new(Mutex::new(output));
        let result = run(&controller(&rule("withhold", CREDENTIAL), &held), "fetch");
        assert!(result.is_error, "{place}: {result:?}");
        assert!(!everything(&result).contains("hunter2"), "{place}");
        assert!(
            result.content.contains("credentials stay inside"),
            "{place}"
        );
    }
}

#[test]
fn a_pattern_over_a_key_and_its_value_labels_wherever_json_carries_them() {
    for (place, output) in credential_outputs() {
        let held: Output = Arc::new(Mutex::new(output));
        let controller = controller(&rule("label", CREDENTIAL), &held);
        assert!(!run(&controller, "fetch").is_error, "{place}");
        let sent = run(&controller, "send");
        assert!(sent.is_error, "{place}: the label was not given: {sent:?}");
    }
}

#[test]
fn a_redacting_rule_whose_match_runs_beyond_one_string_withholds_the_result() {
    for (place, output) in credential_outputs() {
        let held: Output = Arc::new(Mutex::new(output));
        let result = run(&controller(&rule("redact", CREDENTIAL), &held), "fetch");
        assert!(result.is_error, "{place}: {result:?}");
        assert!(!everything(&result).contains("hunter2"), "{place}");
    }
}

#[test]
fn a_redacting_rule_whose_matches_lie_inside_strings_still_redacts_in_place() {
    for (place, output) in credential_outputs() {
        let held: Output = Arc::new(Mutex::new(output));
        let result = run(&controller(&rule("redact", "hunter[0-9]"), &held), "fetch");
        assert!(!result.is_error, "{place}: {result:?}");
        let everything = everything(&result);
        assert!(!everything.contains("hunter2"), "{place}: {everything}");
        assert!(
            everything.contains(r#"[redacted by result rule \"credentials\"]"#),
            "{place}: {everything}"
        );
        // The rest passes as it came.
        assert!(everything.contains("ana"), "{place}: {everything}");
    }
    // A pattern that matches its own marker read whole (`redacted`) withholds nothing more than
    // it would string by string: the markers are read as line breaks.
    let held: Output = Arc::new(Mutex::new(
        ToolOutput::new(vec![json!({"type": "text", "text": "ok"})])
            .with_structured(json!({"note": "hunter2", "other": "fine"})),
    ));
    let result = run(
        &controller(&rule("redact", "hunter[0-9]|redacted"), &held),
        "fetch",
    );
    assert!(!result.is_error, "{result:?}");
}

#[test]
fn json_without_a_match_passes_whole_and_unlabelled() {
    let held: Output = Arc::new(Mutex::new(
        ToolOutput::new(vec![json!({"type": "text", "text": "1 account"})])
            .with_structured(json!({"user": "ana", "password_hint": "a pet", "secret": 42}))
            .with_meta(object(json!({"trace": "t-1"}))),
    ));
    for action in ["withhold", "label", "redact"] {
        let controller = controller(&rule(action, CREDENTIAL), &held);
        let result = run(&controller, "fetch");
        assert!(!result.is_error, "{action}: {result:?}");
        assert!(everything(&result).contains("a pet"), "{action}");
        assert!(!run(&controller, "send").is_error, "{action}");
    }
}

#[test]
fn a_blocks_fields_are_read_whole_but_its_payload_and_only_an_embedded_resources() {
    let withheld = |pattern: &str, block: Value| {
        let held: Output = Arc::new(Mutex::new(ToolOutput::new(vec![block])));
        run(&controller(&rule("withhold", pattern), &held), "fetch").is_error
    };
    // Several text fields of one block, none an object: read whole.
    let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a",
                      "password": "hunter2"});
    assert!(withheld(CREDENTIAL, link));
    // A `mimeType` key of an object that is no embedded resource is text, read whole.
    let annotated = json!({"type": "resource_link", "uri": "file:///a", "name": "a",
                           "annotations": {"mimeType": "top secret"}});
    assert!(withheld(r#""mimeType":\s*"[^"]*secret"#, annotated));
    // An image's payload is left out of the whole reading as it is of the strings'.
    let image = json!({"type": "image", "data": "c2VjcmV0", "mimeType": "image/png",
                       "annotations": {"audience": ["user"]}});
    assert!(!withheld(r#""mimeType":\s*"image"#, image));
}

#[test]
fn a_match_found_string_by_string_still_withholds_where_the_whole_json_holds_none() {
    // `^` holds at a string's start, not inside the JSON: the whole reading adds, never takes.
    let held: Output = Arc::new(Mutex::new(
        ToolOutput::new(vec![json!({"type": "text", "text": "1 account"})])
            .with_structured(json!({"note": "secret plans"})),
    ));
    let result = run(&controller(&rule("withhold", "^secret"), &held), "fetch");
    assert!(result.is_error, "{result:?}");
}

#[test]
fn a_text_block_mirroring_structured_content_is_written_again_only_where_redacted() {
    const CARD: &str = "4111 1111 1111 1111";
    // As an MCP SDK sends a typed result: its JSON indented in a text block, beside it.
    let structured = json!({"card": CARD, "n": 1});
    let mirror = "{\n    \"card\": \"4111 1111 1111 1111\",\n    \"n\": 1\n}";
    let held: Output = Arc::new(Mutex::new(
        ToolOutput::new(vec![json!({"type": "text", "text": mirror})]).with_structured(structured),
    ));
    let result = run(&controller(&rule("redact", CARD), &held), "fetch");
    assert!(!result.is_error, "{result:?}");
    let redacted = result.structured.clone().unwrap();
    let block = &result.blocks.as_ref().unwrap().content[0]["text"];
    let block: Value = serde_json::from_str(block.as_str().unwrap()).unwrap();
    assert_eq!(
        block, redacted,
        "the block reads as the redacted structured content"
    );
    assert!(!everything(&result).contains("4111"));
    // A mirror with nothing redacted in it stays as the tool wrote it (its indent), while a card
    // in another block is redacted.
    let held: Output = Arc::new(Mutex::new(
        ToolOutput::new(vec![
            json!({"type": "text", "text": "{\n    \"n\": 1\n}"}),
            json!({"type": "text", "text": format!("card {CARD}")}),
        ])
        .with_structured(json!({"n": 1})),
    ));
    let result = run(&controller(&rule("redact", CARD), &held), "fetch");
    let blocks = &result.blocks.as_ref().unwrap().content;
    assert_eq!(blocks[0]["text"], "{\n    \"n\": 1\n}");
    assert!(!blocks[1]["text"].as_str().unwrap().contains("4111"));
}

#[test]
fn a_block_of_one_field_is_read_whole_unless_it_is_a_texts_text() {
    let block = json!({"type": "note", "password": "hunter2"});
    for action in ["withhold", "redact"] {
        let held: Output = Arc::new(Mutex::new(ToolOutput::new(vec![block.clone()])));
        let result = run(&controller(&rule(action, CREDENTIAL), &held), "fetch");
        assert!(result.is_error, "{action}: {result:?}");
        assert!(!everything(&result).contains("hunter2"), "{action}");
    }
    // A text block's text alone is the result's text, read whole already: `"text": …` is no
    // match over a key the tool wrote.
    let held: Output = Arc::new(Mutex::new(ToolOutput::new(vec![
        json!({"type": "text", "text": "fine"}),
    ])));
    let result = run(
        &controller(&rule("withhold", r#""text": "fine""#), &held),
        "fetch",
    );
    assert!(!result.is_error, "{result:?}");
}

#[test]
fn the_text_of_several_blocks_follows_a_mirror_written_again() {
    const CARD: &str = "4111 1111 1111 1111";
    let held: Output = Arc::new(Mutex::new(
        ToolOutput::new(vec![
            json!({"type": "text", "text": "Your card:"}),
            json!({"type": "text", "text": format!("{{\"card\": \"{CARD}\"}}")}),
        ])
        .with_structured(json!({"card": CARD})),
    ));
    let result = run(&controller(&rule("redact", CARD), &held), "fetch");
    assert!(!result.is_error, "{result:?}");
    let blocks = &result.blocks.as_ref().unwrap().content;
    let texts: Vec<&str> = blocks.iter().map(|b| b["text"].as_str().unwrap()).collect();
    assert_eq!(result.content, texts.join("\n"));
    let mirrored: Value = serde_json::from_str(texts[1]).unwrap();
    assert_eq!(Some(mirrored), result.structured);
}
