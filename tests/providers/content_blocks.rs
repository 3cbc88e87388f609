//! Content-block output (`ToolDefinition::blocks_async`): what a tool sends — every block type,
//! annotations, `_meta`, structured content, `isError` — is passed on unchanged, or not at all;
//! the checks and bounds that refuse it quote nothing of it.

use crate::common::*;
use serde_json::{Map, Value, json};
use toolgate::definition::ToolOutput;
use toolgate::providers::{mcp, openai};
use toolgate::*;

fn image() -> Value {
    json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png",
           "annotations": {"audience": ["user"], "priority": 0.5}, "_meta": {"example.com/k": 1}})
}

fn every_block() -> Vec<Value> {
    vec![
        json!({"type": "text", "text": "a file"}),
        image(),
        json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
        json!({"type": "resource_link", "name": "n", "uri": "file:///n.txt"}),
        json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}}),
        json!({"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAE="}}),
        json!({"type": "a_later_revisions_block", "x": 1}),
    ]
}

fn tool(spec: ToolSpec, output: ToolOutput) -> ToolDefinition {
    ToolDefinition::blocks_async(spec, move |_: Value| {
        let output = output.clone();
        async move { Ok::<_, ToolError>(output) }
    })
    .unwrap()
}

fn spec() -> ToolSpec {
    ToolSpec::new("t", "T.", json!({"type": "object"}))
}

fn run(definition: ToolDefinition) -> ToolResult {
    let controller = ToolController::new(registry([definition]), policy(&["t"], &[]));
    let Outcome::Completed(result) =
        block_on(controller.handle_async(ToolCall::new("c1", "t", json!({}))))
    else {
        panic!("allowed")
    };
    result
}

#[test]
fn every_block_structured_content_error_flag_and_meta_pass_on_unchanged() {
    let mut meta = Map::new();
    meta.insert("example.com/trace".into(), json!("abc"));
    meta.insert("dev.toolgate/approvalId".into(), json!("forged"));
    let output = ToolOutput::new(every_block())
        .with_structured(json!({"content": "a file"}))
        .with_meta(meta.clone());
    let result = run(tool(spec(), output));
    assert!(!result.is_error);
    let blocks = result.blocks.as_ref().expect("blocks kept");
    assert_eq!(blocks.content, every_block());
    assert_eq!(blocks.meta, Some(meta));
    assert_eq!(result.structured, Some(json!({"content": "a file"})));
    // Text-only providers read the text blocks and embedded text, the rest named.
    assert_eq!(
        result.content,
        "a file\n[image/png image]\n[audio/wav audio]\n[resource link file:///n.txt]\ninside\n\
         [embedded resource file:///a.bin]\n[a_later_revisions_block]"
    );
    assert_eq!(openai::tool_message(&result)["content"], result.content);
    // MCP gets the blocks as sent and the structured content beside them, never in their place;
    // toolgate's own `_meta` keys are not a tool's to set.
    let body = mcp::call_tool_result(&result);
    assert_eq!(body["content"], Value::from(every_block()));
    assert_eq!(body["structuredContent"], json!({"content": "a file"}));
    assert_eq!(body["_meta"], json!({"example.com/trace": "abc"}));
    assert_eq!(body["isError"], false);
}

#[test]
fn an_error_result_keeps_its_blocks_and_is_an_error() {
    let output = ToolOutput::new(vec![json!({"type": "text", "text": "it broke"}), image()])
        .with_error(true);
    let result = run(tool(spec(), output));
    assert!(result.is_error);
    assert_eq!(result.blocks.as_ref().unwrap().content[1], image());
    let body = mcp::call_tool_result(&result);
    assert_eq!(body["isError"], true);
    assert_eq!(body["content"][1], image());
    assert!(body.get("_meta").is_none());
}

#[test]
fn malformed_blocks_are_refused_and_never_quoted() {
    for (blocks, why) in [
        (
            vec![json!("SECRET-a-string")],
            "content block 0 is not a JSON object",
        ),
        (
            vec![
                json!({"type": "text", "text": "ok"}),
                json!({"text": "SECRET"}),
            ],
            "content block 1 is not a JSON object",
        ),
        (
            vec![json!({"type": 7, "text": "SECRET"})],
            "content block 0 is not a JSON object",
        ),
    ] {
        let result = run(tool(spec(), ToolOutput::new(blocks)));
        assert!(result.is_error && result.blocks.is_none(), "{result:?}");
        assert!(result.content.contains(why), "{}", result.content);
        assert!(
            result.content.contains("the tool ran"),
            "{}",
            result.content
        );
        assert!(!result.content.contains("SECRET"), "{}", result.content);
    }
}

#[test]
fn structured_content_is_checked_against_a_declared_output_schema() {
    let declared = spec().with_output_schema(json!({
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
    }));
    let text = || vec![json!({"type": "text", "text": "n is one"})];
    let good = run(tool(
        declared.clone(),
        ToolOutput::new(text()).with_structured(json!({"n": 1})),
    ));
    assert!(!good.is_error);
    assert_eq!(good.structured, Some(json!({"n": 1})));
    assert_eq!(
        good.content, "n is one",
        "the tool's own text, not the JSON"
    );

    let bad = run(tool(
        declared.clone(),
        ToolOutput::new(text()).with_structured(json!({"n": "SECRET-7"})),
    ));
    assert!(bad.is_error && bad.blocks.is_none() && bad.structured.is_none());
    assert!(
        bad.content
            .contains("does not satisfy the tool's output schema (1 violation(s))")
    );
    assert!(!bad.content.contains("SECRET"));

    let missing = run(tool(declared.clone(), ToolOutput::new(text())));
    assert!(missing.is_error, "{missing:?}");
    assert!(missing.content.contains("sent no structured content"));

    // An error result need not carry structured content; one that does is checked too.
    let failed = run(tool(
        declared.clone(),
        ToolOutput::new(text()).with_error(true),
    ));
    assert!(failed.is_error && failed.blocks.is_some(), "{failed:?}");
    let failed_badly = run(tool(
        declared,
        ToolOutput::new(text())
            .with_error(true)
            .with_structured(json!({})),
    ));
    assert!(failed_badly.is_error && failed_badly.blocks.is_none());

    // Without a declared schema structured content passes beside the blocks.
    let free = run(tool(
        spec(),
        ToolOutput::new(vec![]).with_structured(json!({"any": [1]})),
    ));
    assert_eq!(free.structured, Some(json!({"any": [1]})));
    assert_eq!(
        free.content, r#"{"any":[1]}"#,
        "no blocks: the JSON is the text"
    );
    // An output schema that is not an object is refused when the definition is built.
    let not_object = spec().with_output_schema(json!(true));
    assert!(
        ToolDefinition::blocks_async(not_object, |_: Value| async {
            Ok::<_, ToolError>(ToolOutput::default())
        })
        .is_err()
    );
}

#[test]
fn output_over_the_byte_bound_is_refused_counting_every_part() {
    let limit = 1000;
    let bounded = |output: ToolOutput| run(tool(spec(), output).with_max_output_bytes(limit));
    // An image's data counts though it is no text.
    let big_image = json!({"type": "image", "data": "A".repeat(limit), "mimeType": "image/png"});
    let result = bounded(ToolOutput::new(vec![big_image]));
    assert!(result.is_error && result.blocks.is_none());
    assert!(
        result.content.contains("the limit is 1000"),
        "{}",
        result.content
    );
    // So do structured content and `_meta`.
    let result = bounded(ToolOutput::new(vec![]).with_structured(json!({"s": "x".repeat(limit)})));
    assert!(result.is_error && result.structured.is_none(), "{result:?}");
    let mut meta = Map::new();
    meta.insert("k".into(), json!("x".repeat(limit)));
    let result = bounded(ToolOutput::new(vec![]).with_meta(meta));
    assert!(result.is_error && result.blocks.is_none(), "{result:?}");
    // Just under the bound passes: `[{"type":"text","text":"…"}]` is 27 bytes besides the text.
    let text = "x".repeat(limit - 27);
    let result = bounded(ToolOutput::new(vec![json!({"type": "text", "text": text})]));
    assert!(!result.is_error, "{}", result.content);
    let text = "x".repeat(limit - 26);
    let result = bounded(ToolOutput::new(vec![json!({"type": "text", "text": text})]));
    assert!(result.is_error, "one byte over");
}

#[test]
fn output_nested_too_deep_is_refused_wherever_it_nests() {
    let mut deep = json!(1);
    for _ in 0..70 {
        deep = json!([deep]);
    }
    let block = json!({"type": "text", "text": "t", "_meta": {"x": deep.clone()}});
    for output in [
        ToolOutput::new(vec![block]),
        ToolOutput::new(vec![]).with_structured(json!({"x": deep.clone()})),
        ToolOutput::new(vec![]).with_meta(Map::from_iter([("x".to_owned(), deep)])),
    ] {
        let result = run(tool(spec(), output));
        assert!(result.is_error && result.blocks.is_none(), "{result:?}");
        assert!(
            result.content.contains("nests deeper than 64"),
            "{}",
            result.content
        );
    }
}

#[test]
fn a_failure_the_handler_reports_is_an_error_result_like_any_tools() {
    let failing = ToolDefinition::blocks_async(spec(), |_: Value| async {
        Err::<ToolOutput, _>(ToolError::new("the upstream did not answer"))
    })
    .unwrap();
    let result = run(failing);
    assert_eq!(
        result,
        ToolResult::error("c1", "the upstream did not answer")
    );
    // The blocking path drives the handler the same way.
    let controller = ToolController::new(
        registry([tool(spec(), ToolOutput::new(vec![image()]))]),
        policy(&["t"], &[]),
    );
    let Outcome::Completed(result) = controller.handle(ToolCall::new("c2", "t", json!({}))) else {
        panic!("allowed")
    };
    assert_eq!(result.blocks.unwrap().content, vec![image()]);
}
