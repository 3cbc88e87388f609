//! One reading of a call for every adapter: hostile arguments read the same through each
//! provider's adapter and MCP's.

use super::*;

/// The four adapters that read calls.
#[derive(Debug, Clone, Copy)]
enum Adapter {
    Chat,
    Responses,
    Anthropic,
    Mcp,
}

const ADAPTERS: [Adapter; 4] = [
    Adapter::Chat,
    Adapter::Responses,
    Adapter::Anthropic,
    Adapter::Mcp,
];

/// What an adapter made of one call, in terms every adapter shares.
#[derive(Debug, Clone, PartialEq)]
enum Read {
    /// A usable call with these arguments.
    Call(Value),
    /// An error answer addressed to this call id (MCP: a `-32602` response with the request's id).
    ErrorFor { id: String, content: String },
    /// Nothing can be addressed (MCP: a `-32600` response with id `null`).
    Wire,
}

/// One call in `adapter`'s format, each part placed where that format puts it, or left out.
fn one_call(
    adapter: Adapter,
    id: Option<&Value>,
    name: Option<&Value>,
    arguments: Option<&Value>,
) -> Value {
    let mut call = serde_json::Map::new();
    let mut put = |key: &str, value: Option<&Value>| {
        if let Some(value) = value {
            call.insert(key.to_owned(), value.clone());
        }
    };
    match adapter {
        Adapter::Chat => {
            put("id", id);
            let mut function = serde_json::Map::new();
            for (key, value) in [("name", name), ("arguments", arguments)] {
                if let Some(value) = value {
                    function.insert(key.to_owned(), value.clone());
                }
            }
            put("type", Some(&json!("function")));
            put("function", Some(&Value::Object(function)));
            json!({"role": "assistant", "tool_calls": [call]})
        }
        Adapter::Responses => {
            put("type", Some(&json!("function_call")));
            put("id", Some(&json!("fc_1")));
            put("call_id", id);
            put("name", name);
            put("arguments", arguments);
            json!({"output": [call]})
        }
        Adapter::Anthropic => {
            put("type", Some(&json!("tool_use")));
            put("id", id);
            put("name", name);
            put("input", arguments);
            json!({"role": "assistant", "content": [call]})
        }
        Adapter::Mcp => {
            put("name", name);
            put("arguments", arguments);
            let mut request = json!({"jsonrpc": "2.0", "method": "tools/call", "params": call});
            if let Some(id) = id {
                request["id"] = id.clone();
            }
            request
        }
    }
}

fn one_tool_registry() -> ToolRegistry {
    let echo = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    let spec = ToolSpec::new("t", "A tool.", json!({"type": "object"}));
    ToolRegistry::new([ToolDefinition::new(spec, echo).unwrap()]).unwrap()
}

/// Reads `payload` with `adapter`, checking what every outcome must carry: one call, never
/// dropped, answered under the id it was sent with.
fn read(adapter: Adapter, payload: &Value, registry: &ToolRegistry) -> Read {
    let single = |parsed: Result<Vec<ParsedCall>, WireError>| match parsed {
        Err(_) => Read::Wire,
        Ok(mut calls) => {
            assert_eq!(
                calls.len(),
                1,
                "{adapter:?}: a call was dropped or invented"
            );
            match calls.remove(0) {
                Ok(call) => {
                    assert_eq!(call.tool_name, "t", "{adapter:?}");
                    Read::Call(call.arguments)
                }
                Err(result) => {
                    assert!(result.is_error, "{adapter:?}");
                    Read::ErrorFor {
                        id: result.call_id,
                        content: result.content,
                    }
                }
            }
        }
    };
    match adapter {
        Adapter::Chat => single(openai::tool_calls(payload)),
        Adapter::Responses => single(responses::function_calls(payload)),
        Adapter::Anthropic => single(anthropic::tool_uses(payload)),
        Adapter::Mcp => match mcp::call_from_request(payload, registry) {
            Ok(call) => {
                assert_eq!(call.tool_name, "t");
                Read::Call(call.arguments)
            }
            Err(response) if response["error"]["code"] == mcp::INVALID_REQUEST => {
                assert_eq!(response["id"], Value::Null);
                Read::Wire
            }
            Err(response) => {
                assert_eq!(response["error"]["code"], mcp::INVALID_PARAMS);
                assert_eq!(response["id"], payload["id"], "answered under its id");
                Read::ErrorFor {
                    id: payload["id"].as_str().unwrap().to_owned(),
                    content: response["error"]["message"].as_str().unwrap().to_owned(),
                }
            }
        },
    }
}

/// Reads the same call through all four adapters and returns the one reading they agree on.
fn read_everywhere(id: Option<&Value>, name: Option<&Value>, arguments: Option<&Value>) -> Read {
    let registry = one_tool_registry();
    let readings: Vec<Read> = ADAPTERS
        .iter()
        .map(|&adapter| read(adapter, &one_call(adapter, id, name, arguments), &registry))
        .collect();
    for (adapter, reading) in ADAPTERS.iter().zip(&readings).skip(1) {
        assert_eq!(
            reading, &readings[0],
            "{adapter:?} reads the call differently from Chat"
        );
    }
    readings.into_iter().next().unwrap()
}

/// An object nesting `levels` containers deep: `{"a":[[…[1]…]]}`.
fn nested_text(levels: usize) -> String {
    let arrays = levels - 1;
    format!("{{\"a\":{}1{}}}", "[".repeat(arrays), "]".repeat(arrays))
}

fn nested_object(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 1..levels {
        value = Value::Array(vec![value]);
    }
    let mut object = serde_json::Map::new();
    object.insert("a".to_owned(), value);
    Value::Object(object)
}

#[test]
fn hostile_arguments_read_the_same_through_every_adapter() {
    let big = "x".repeat(1 << 20);
    let usable: Vec<(&str, Option<Value>, Value)> = vec![
        ("absent", None, json!({})),
        ("null", Some(Value::Null), json!({})),
        ("empty object", Some(json!({})), json!({})),
        (
            "object",
            Some(json!({"a": 1, "b": [true, null]})),
            json!({"a": 1, "b": [true, null]}),
        ),
        ("empty string", Some(json!("")), json!({})),
        ("JSON whitespace only", Some(json!(" \t\r\n")), json!({})),
        ("object text", Some(json!("{\"a\":1}")), json!({"a": 1})),
        (
            "object text in whitespace",
            Some(json!("\n {\"a\":1} \t")),
            json!({"a": 1}),
        ),
        (
            "1 MiB string inside",
            Some(json!(format!("{{\"a\":\"{big}\"}}"))),
            json!({"a": big}),
        ),
        (
            "127 levels in text",
            Some(json!(nested_text(127))),
            nested_object(127),
        ),
        (
            "127 levels as an object",
            Some(nested_object(127)),
            nested_object(127),
        ),
    ];
    for (case, arguments, expected) in &usable {
        let reading = read_everywhere(Some(&json!("c1")), Some(&json!("t")), arguments.as_ref());
        assert_eq!(reading, Read::Call(expected.clone()), "{case}");
    }

    let refused: Vec<(&str, Value, &str)> = vec![
        ("no-break space only", json!("\u{a0}"), "not valid JSON"),
        ("byte order mark", json!("\u{feff}{}"), "not valid JSON"),
        ("cut off", json!("{\"key\": \"sk-SECRET"), "not valid JSON"),
        (
            "trailing value",
            json!("{} {\"key\": \"sk-SECRET\"}"),
            "not valid JSON",
        ),
        ("single quotes", json!("{'a': 1}"), "not valid JSON"),
        (
            "comment",
            json!("{\"a\": 1 /* sk-SECRET */}"),
            "not valid JSON",
        ),
        (
            "duplicate key",
            json!("{\"sk-SECRET\": 1, \"sk-SECRET\": 2}"),
            "duplicate key",
        ),
        (
            "nested duplicate key",
            json!("{\"x\": {\"p\": \"/work\", \"p\": \"/etc\"}}"),
            "duplicate key",
        ),
        (
            "duplicate key inside an array",
            json!("[{\"k\": 1, \"k\": 1}]"),
            "duplicate key",
        ),
        ("NaN", json!("{\"x\": NaN}"), "not valid JSON"),
        ("Infinity", json!("{\"x\": Infinity}"), "not valid JSON"),
        ("-Infinity", json!("{\"x\": -Infinity}"), "not valid JSON"),
        (
            "number out of range",
            json!("{\"x\": 1e400}"),
            "not valid JSON",
        ),
        (
            "lone surrogate",
            json!("{\"x\": \"\\ud800\"}"),
            "not valid JSON",
        ),
        (
            "128 levels in text",
            json!(nested_text(128)),
            "not valid JSON",
        ),
        (
            "128 levels as an object",
            nested_object(128),
            "arguments nest deeper than 127 levels",
        ),
        (
            "null text",
            json!("null"),
            "must be a JSON object, got null",
        ),
        (
            "array text",
            json!("[1]"),
            "must be a JSON object, got an array",
        ),
        (
            "string text",
            json!("\"{}\""),
            "must be a JSON object, got a string",
        ),
        (
            "number text",
            json!("3"),
            "must be a JSON object, got a number",
        ),
        (
            "boolean text",
            json!("true"),
            "must be a JSON object, got a boolean",
        ),
        (
            "array",
            json!(["sk-SECRET"]),
            "or a string holding one, got an array",
        ),
        (
            "empty array",
            json!([]),
            "or a string holding one, got an array",
        ),
        ("number", json!(3), "or a string holding one, got a number"),
        (
            "boolean",
            json!(false),
            "or a string holding one, got a boolean",
        ),
    ];
    for (case, arguments, problem) in &refused {
        let reading = read_everywhere(Some(&json!("c1")), Some(&json!("t")), Some(arguments));
        let Read::ErrorFor { id, content } = reading else {
            panic!("{case}: {reading:?}");
        };
        assert_eq!(id, "c1", "{case}");
        assert!(
            content.starts_with("invalid arguments for t: "),
            "{case}: {content}"
        );
        assert!(content.contains(problem), "{case}: {content}");
        assert!(
            !content.contains("SECRET") && !content.contains("/etc"),
            "{case}: {content}"
        );
        assert!(content.len() < 200, "{case}: {} bytes", content.len());
    }
}

mod refusals;
