//! What every adapter refuses alike: calls without a usable name or id, oversized names, calls of
//! another type, arguments nested 100,000 levels deep, and duplicate keys in object-form arguments.

use super::*;

#[test]
fn calls_without_a_usable_name_are_error_results_in_every_adapter() {
    let arguments = json!({"a": 1});
    for name in [
        None,
        Some(Value::Null),
        Some(json!("")),
        Some(json!(42)),
        Some(json!(["t"])),
        Some(json!({"name": "t"})),
    ] {
        assert_eq!(
            read_everywhere(Some(&json!("c1")), name.as_ref(), Some(&arguments)),
            Read::ErrorFor {
                id: "c1".into(),
                content: "tool call has no name".into()
            },
            "{name:?}"
        );
    }
}

#[test]
fn calls_without_a_usable_id_are_wire_errors_in_every_adapter() {
    let arguments = json!({"a": 1});
    for id in [
        None,
        Some(Value::Null),
        Some(json!("")),
        Some(json!(true)),
        Some(json!(1.5)),
        Some(json!(["c1"])),
        Some(json!({"id": "c1"})),
    ] {
        assert_eq!(
            read_everywhere(id.as_ref(), Some(&json!("t")), Some(&arguments)),
            Read::Wire,
            "{id:?}"
        );
    }
    // JSON-RPC, and so MCP, also allows integer ids; the other formats have string ids only.
    let registry = one_tool_registry();
    for adapter in ADAPTERS {
        let payload = one_call(
            adapter,
            Some(&json!(7)),
            Some(&json!("t")),
            Some(&arguments),
        );
        let expected = match adapter {
            Adapter::Mcp => Read::Call(arguments.clone()),
            _ => Read::Wire,
        };
        assert_eq!(read(adapter, &payload, &registry), expected, "{adapter:?}");
    }
}

#[test]
fn oversized_names_are_quoted_bounded_in_every_adapter() {
    let name = json!(format!("sk-SECRET{}", "n".repeat(1 << 20)));
    let registry = one_tool_registry();
    for adapter in ADAPTERS {
        let payload = one_call(
            adapter,
            Some(&json!("c1")),
            Some(&name),
            Some(&json!("[1]")),
        );
        let text = match adapter {
            // MCP refuses a tool its registry lacks before reading arguments.
            Adapter::Mcp => {
                mcp::call_from_request(&payload, &registry).unwrap_err()["error"]["message"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
            _ => match read(adapter, &payload, &registry) {
                Read::ErrorFor { content, .. } => content,
                other => panic!("{adapter:?}: {other:?}"),
            },
        };
        assert!(text.len() < 300, "{adapter:?}: {} bytes", text.len());
    }
}

#[test]
fn openai_calls_without_a_function_or_of_another_type_are_error_results() {
    let message = json!({"tool_calls": [
        {"id": "no_function", "type": "function"},
        {"id": "function_not_object", "type": "function", "function": "t"},
        {"id": "type_number", "type": 5, "function": {"name": "t", "arguments": "{}"}},
        {"id": "no_type", "function": {"name": "t", "arguments": "{}"}}
    ]});
    let parsed = openai::tool_calls(&message).unwrap();
    let contents: Vec<&str> = parsed
        .iter()
        .map(|p| p.as_ref().map_or_else(|r| r.content.as_str(), |_| "call"))
        .collect();
    assert_eq!(
        contents,
        [
            "tool call has no name",
            "tool call has no name",
            "unsupported tool call type a number: only function tools can be called",
            "call"
        ]
    );
}

/// Frees a value without recursion (dropping it the ordinary way would overflow the stack).
fn free_iteratively(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, item)| item)),
            _ => {}
        }
    }
}

#[test]
fn arguments_built_100000_levels_deep_are_refused_without_recursion_in_every_adapter() {
    let registry = one_tool_registry();
    let mut readings = Vec::new();
    for adapter in ADAPTERS {
        let mut payload = one_call(
            adapter,
            Some(&json!("c1")),
            Some(&json!("t")),
            Some(&json!({})),
        );
        let slot = match adapter {
            Adapter::Chat => "/tool_calls/0/function/arguments",
            Adapter::Responses => "/output/0/arguments",
            Adapter::Anthropic => "/content/0/input",
            Adapter::Mcp => "/params/arguments",
        };
        // Moved into place, never cloned: a clone of this value would recurse 100,000 times.
        *payload.pointer_mut(slot).unwrap() = nested_object(100_000);
        readings.push(read(adapter, &payload, &registry));
        free_iteratively(payload);
    }
    for reading in &readings {
        assert_eq!(
            reading,
            &Read::ErrorFor {
                id: "c1".into(),
                content: "invalid arguments for t: arguments nest deeper than 127 levels".into()
            }
        );
    }
}

#[test]
fn parse_body_refuses_duplicate_keys_in_object_form_arguments() {
    let duplicated = [
        // Anthropic `input` and MCP `arguments` are objects inside the body.
        r#"{"content": [{"type": "tool_use", "id": "t1", "name": "t", "input": {"sk-SECRET": 1, "sk-SECRET": 2}}]}"#,
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {"p": {"q": "/work", "q": "/etc"}}}}"#,
        // And anywhere else in the body.
        r#"{"id": "a", "id": "b"}"#,
    ];
    for body in duplicated {
        let Err(WireError::Malformed { place, problem }) = providers::parse_body(body) else {
            panic!("{body}: accepted");
        };
        assert_eq!(place, "body");
        assert!(
            problem.starts_with("not usable JSON: duplicate key in one object at line 1 column "),
            "{problem}"
        );
        assert!(!problem.contains("SECRET") && !problem.contains("/etc"));
    }
    for broken in [
        "",
        "{",
        "{\"a\": NaN}",
        "{} {}",
        &format!("{}1{}", "[".repeat(128), "]".repeat(128)),
    ] {
        let Err(WireError::Malformed { problem, .. }) = providers::parse_body(broken) else {
            panic!("{broken}: accepted");
        };
        assert!(
            problem.starts_with("not valid JSON: syntax error at line 1 column "),
            "{problem}"
        );
    }
    let body = fixture_text("anthropic_parallel.json");
    assert_eq!(
        providers::parse_body(&body).unwrap(),
        serde_json::from_str::<Value>(&body).unwrap()
    );
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture exists")
}
