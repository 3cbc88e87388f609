//! Tools out: Gemini's schema dialect, OpenAI strict mode, and names every provider accepts —
//! each converted or refused with an `ExportError` naming the place, and each round trip ending
//! in the gate under the original tool name and schema.

use serde_json::{Value, json};
use toolgate::providers::names::{NameMap, Provider};
use toolgate::providers::strict_schema::StrictTools;
use toolgate::providers::{ExportError, anthropic, gemini, openai, responses};
use toolgate::*;

fn spec(name: &str, schema: Value) -> ToolSpec {
    ToolSpec::new(name, "A tool.", schema)
}

fn unsupported_place(error: ExportError) -> String {
    match error {
        ExportError::UnsupportedSchema { place, .. } => place,
        other => panic!("expected UnsupportedSchema, got {other:?}"),
    }
}

fn controller(specs: &[ToolSpec]) -> ToolController {
    let definitions = specs.iter().map(|spec| {
        let echo = |args: &Value| -> Result<String, ToolError> { Ok(args.to_string()) };
        ToolDefinition::new(spec.clone(), echo).unwrap()
    });
    let names: Vec<String> = specs.iter().map(|spec| spec.name.clone()).collect();
    ToolController::new(
        ToolRegistry::new(definitions).unwrap(),
        ToolPolicy::new(names, Vec::<String>::new()).unwrap(),
    )
}

fn run(controller: &ToolController, call: ToolCall) -> ToolResult {
    match controller.handle(call) {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(_) => panic!("every tool is allowed"),
    }
}

// ---- Gemini ------------------------------------------------------------------------------------

#[test]
fn gemini_declarations_convert_the_schema_dialect() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", null]},
            "mode": {"const": "fast"},
            "days": {"type": "integer", "exclusiveMinimum": 0, "maximum": 14, "format": "uint8"},
            "when": {"type": "string", "format": "date-time"},
            "place": {"$ref": "#/$defs/Place", "description": "Where"},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "maybe": {"anyOf": [{"$ref": "#/$defs/Place"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
        },
        "required": ["city"],
        "additionalProperties": false,
        "$defs": {"Place": {"type": "object", "properties": {"lat": {"type": "number"}}}}
    });
    let tools = gemini::tools([&spec("weather", schema)]).unwrap();
    let parameters = &tools[0]["functionDeclarations"][0]["parameters"];
    assert_eq!(
        parameters,
        &json!({
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING", "description": "City name"},
                "unit": {"type": "STRING", "enum": ["celsius", "fahrenheit"], "format": "enum", "nullable": true},
                "mode": {"type": "STRING", "enum": ["fast"], "format": "enum"},
                "days": {"type": "INTEGER", "minimum": 1, "maximum": 14},
                "when": {"type": "STRING", "format": "date-time"},
                "place": {"type": "OBJECT", "properties": {"lat": {"type": "NUMBER"}}, "description": "Where"},
                "either": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
                "maybe": {"type": "OBJECT", "properties": {"lat": {"type": "NUMBER"}}, "nullable": true},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": 3}
            },
            "required": ["city"]
        })
    );
    // A tool without parameters declares none.
    let bare = gemini::tools([&spec("ping", json!({"type": "object"}))]).unwrap();
    assert!(
        bare[0]["functionDeclarations"][0]
            .get("parameters")
            .is_none()
    );
}

#[test]
fn gemini_schemas_it_cannot_express_are_export_errors_naming_the_place() {
    let object = |properties: Value| json!({"type": "object", "properties": properties});
    for (schema, place) in [
        (
            object(json!({"a": {"not": {"type": "string"}}})),
            "/properties/a/not",
        ),
        (
            object(json!({"a": {"allOf": [{"type": "string"}]}})),
            "/properties/a/allOf",
        ),
        (
            object(json!({"a": {"type": "object", "additionalProperties": {"type": "string"}}})),
            "/properties/a/additionalProperties",
        ),
        (
            object(json!({"a": {"type": "array", "items": [{"type": "string"}]}})),
            "/properties/a/items",
        ),
        (
            object(json!({"a": {"type": "integer", "enum": [1, 2]}})),
            "/properties/a/enum",
        ),
        (
            object(json!({"a": {"type": ["string", "integer"]}})),
            "/properties/a/type",
        ),
        (
            object(json!({"a": {"type": "array", "uniqueItems": true}})),
            "/properties/a/uniqueItems",
        ),
        (
            object(json!({"a": {"type": "number", "exclusiveMinimum": 0.5}})),
            "/properties/a/exclusiveMinimum",
        ),
        (object(json!({"a": {}})), "/properties/a"),
        (object(json!({"a/b": true})), "/properties/a~1b"),
        (
            json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/Node"}},
                "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}),
            "/properties/n/$ref/properties/next/$ref",
        ),
        (
            object(json!({"a": {"$ref": "https://example.com/schema"}})),
            "/properties/a/$ref",
        ),
        (json!({"type": "array"}), "/type"),
    ] {
        let error = gemini::tools([&spec("t", schema.clone())]).unwrap_err();
        assert_eq!(unsupported_place(error), place, "{schema}");
    }
    assert!(matches!(
        gemini::tools([&spec("9lives", json!({"type": "object"}))]),
        Err(ExportError::InvalidName { .. })
    ));
}

#[test]
fn gemini_calls_keep_their_ids_or_get_stable_derived_ones() {
    let response: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/fixtures/gemini_parallel.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let calls: Vec<ToolCall> = gemini::function_calls(&response)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let names: Vec<&str> = calls.iter().map(|c| c.tool_name.as_str()).collect();
    assert_eq!(names, ["power_disco_ball", "start_music", "dim_lights"]);
    assert_eq!(calls[2].arguments, json!({"brightness": 0.5}));
    // Derived ids: distinct, stable across reads, different for different content.
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert!(
        ids.iter()
            .all(|id| id.starts_with(gemini::DERIVED_ID_PREFIX))
    );
    assert_eq!(
        ids.iter().collect::<std::collections::BTreeSet<_>>().len(),
        3
    );
    let again = gemini::function_calls(&response).unwrap();
    assert_eq!(again[0].as_ref().unwrap().call_id, ids[0]);
    let mut other = response.clone();
    other["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]["power"] = json!(false);
    assert_ne!(
        gemini::function_calls(&other).unwrap()[0]
            .as_ref()
            .unwrap()
            .call_id,
        ids[0]
    );
    // A derived id does not go back to Gemini; a provided one does.
    let part = gemini::function_response("dim_lights", &ToolResult::ok(ids[2], "dimmed"), None);
    assert!(part["functionResponse"].get("id").is_none());
    let content = json!({"role": "model", "parts": [
        {"functionCall": {"id": "fc_1", "name": "t", "args": {"a": 1}}},
        {"functionCall": {"id": "fc_2", "name": "t", "args": "{\"a\": 1, \"a\": 2}"}},
        {"functionCall": {"id": "fc_3", "name": "t", "args": [1]}}
    ]});
    let parsed = gemini::function_calls(&content).unwrap();
    assert_eq!(parsed[0].as_ref().unwrap().call_id, "fc_1");
    assert!(
        parsed[1]
            .as_ref()
            .unwrap_err()
            .content
            .contains("duplicate key")
    );
    assert_eq!(parsed[2].as_ref().unwrap_err().call_id, "fc_3");
    // Two calls sharing an id, or an id that is not a string, cannot be answered apart.
    for parts in [
        json!([{"functionCall": {"id": "x", "name": "t"}}, {"functionCall": {"id": "x", "name": "t"}}]),
        json!([{"functionCall": {"id": 7, "name": "t"}}]),
        // toolgate's own prefix: its response would go back without the id.
        json!([{"functionCall": {"id": "gemini-derived:abc:0", "name": "t"}}]),
    ] {
        assert!(gemini::function_calls(&json!({"parts": parts})).is_err());
    }
}

#[test]
fn gemini_round_trip_through_the_controller() {
    let specs = [spec(
        "dim_lights",
        json!({"type": "object", "properties": {"brightness": {"type": "number"}}, "required": ["brightness"]}),
    )];
    let controller = controller(&specs);
    let response = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc_9", "name": "dim_lights", "args": {"brightness": 0.5}}}]}}]});
    let mut parts = Vec::new();
    for call in gemini::function_calls(&response).unwrap() {
        let call = call.unwrap();
        let name = call.tool_name.clone();
        parts.push(gemini::function_response(
            &name,
            &run(&controller, call),
            None,
        ));
    }
    assert_eq!(
        gemini::function_responses_content(parts),
        json!({"role": "user", "parts": [{"functionResponse": {"id": "fc_9", "name": "dim_lights",
            "response": {"output": "{\"brightness\":0.5}"}}}]})
    );
}

// ---- OpenAI strict mode ------------------------------------------------------------------------

fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "default": 10},
            "sort": {"enum": ["asc", "desc"]},
            "filter": {"$ref": "#/$defs/Filter"},
            "note": {"type": ["string", "null"]}
        },
        "required": ["query"],
        "$defs": {"Filter": {"type": "object", "properties": {
            "field": {"type": "string"}, "after": {"type": "string", "format": "date"}}}}
    })
}

#[test]
fn strict_transformation_requires_everything_and_makes_optional_nullable() {
    let strict = StrictTools::new([&spec("search", search_schema())]).unwrap();
    assert_eq!(
        strict.schema("search").unwrap(),
        &json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": ["integer", "null"], "minimum": 1},
                "sort": {"enum": ["asc", "desc", null]},
                "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["filter", "limit", "note", "query", "sort"],
            "additionalProperties": false,
            "$defs": {"Filter": {"type": "object", "properties": {
                "field": {"type": ["string", "null"]}, "after": {"type": ["string", "null"], "format": "date"}},
                "required": ["after", "field"], "additionalProperties": false}}
        })
    );
    let places: Vec<&str> = strict
        .changes("search")
        .iter()
        .map(|c| c.place.as_str())
        .collect();
    assert!(places.contains(&"/properties/limit/default"), "{places:?}");
    assert!(places.contains(&"/properties/sort"), "{places:?}");
    // The transformed schema meets the rules, so exporting it as strict is accepted.
    let transformed = spec("search", strict.schema("search").unwrap().clone());
    assert!(openai::tools([&transformed], true).is_ok());
    assert_eq!(strict.chat_tools()[0]["function"]["strict"], true);
    assert_eq!(strict.responses_tools()[0]["strict"], true);
    assert!(responses::tools([&transformed], true).is_ok());
}

#[test]
fn strict_nulls_are_restored_so_the_original_schema_judges_the_call() {
    let specs = [spec("search", search_schema())];
    let strict = StrictTools::new(&specs).unwrap();
    let controller = controller(&specs);
    // What a strict-mode model sends: every property, `null` for the absent ones.
    let sent = json!({"query": "q", "limit": null, "sort": null, "note": null,
                      "filter": {"field": null, "after": "2024-01-01"}});
    let unrestored = run(&controller, ToolCall::new("c0", "search", sent.clone()));
    assert!(unrestored.is_error, "the original schema refuses the nulls");
    let call = strict
        .restore(Ok(ToolCall::new("c1", "search", sent)))
        .unwrap();
    assert_eq!(
        call.arguments,
        json!({"query": "q", "note": null, "filter": {"after": "2024-01-01"}}),
        "only the nulls the transformation made room for are removed"
    );
    assert!(!run(&controller, call).is_error);
    // A null where the original forbids it and the transformation did not add it stays.
    let call = strict
        .restore(Ok(ToolCall::new("c2", "search", json!({"query": null}))))
        .unwrap();
    assert_eq!(call.arguments, json!({"query": null}));
}

#[test]
fn strict_schemas_it_cannot_express_are_export_errors_naming_the_place() {
    let object = |properties: Value| json!({"type": "object", "properties": properties});
    for (schema, place) in [
        (
            object(json!({"a": {"type": "string", "minLength": 1}})),
            "/properties/a/minLength",
        ),
        (
            object(json!({"a": {"allOf": [{"type": "string"}]}})),
            "/properties/a/allOf",
        ),
        (
            object(json!({"a": {"type": "object", "additionalProperties": {"type": "string"}}})),
            "/properties/a/additionalProperties",
        ),
        (
            object(json!({"a": {"type": "array", "uniqueItems": true}})),
            "/properties/a/uniqueItems",
        ),
        (object(json!({"a": true})), "/properties/a"),
        (json!({"anyOf": [{"type": "object"}]}), "/type"),
        (
            json!({"type": "object", "additionalProperties": true}),
            "/additionalProperties",
        ),
    ] {
        let error = StrictTools::new([&spec("t", schema.clone())]).unwrap_err();
        assert_eq!(unsupported_place(error), place, "{schema}");
    }
    // Claiming strict for a schema that is not: an error naming the first place to change.
    let error = openai::tools([&spec("t", search_schema())], true).unwrap_err();
    assert_eq!(unsupported_place(error), "/$defs/Filter");
    assert!(openai::tools([&spec("t", search_schema())], false).is_ok());
}

#[cfg(feature = "schemars")]
mod typed {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, Serialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Transfer {
        /// Account to debit.
        from: String,
        amount: u32,
        memo: Option<String>,
        #[serde(default)]
        urgent: bool,
        kind: Kind,
    }

    #[derive(Deserialize, Serialize, schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Internal,
        External { iban: String },
    }

    #[test]
    fn typed_tools_export_cleanly_in_both_modes_and_run_after_restore() {
        let definition = ToolDefinition::typed("transfer", "Move money.", |args: Transfer| {
            Ok(format!(
                "{} from {} urgent={} {}",
                args.amount,
                args.from,
                args.urgent,
                matches!(args.kind, Kind::External { .. })
            ))
        })
        .unwrap();
        let registry = ToolRegistry::new([definition]).unwrap();
        let specs: Vec<ToolSpec> = registry.specs().cloned().collect();
        assert!(openai::tools(&specs, false).is_ok());
        assert!(anthropic::tools(&specs).is_ok());
        let strict = StrictTools::new(&specs).unwrap();
        let transformed = spec("transfer", strict.schema("transfer").unwrap().clone());
        assert!(
            openai::tools([&transformed], true).is_ok(),
            "{}",
            transformed.input_schema
        );
        assert!(gemini::tools(&specs).is_ok());
        let controller = ToolController::new(
            registry,
            ToolPolicy::new(["transfer"], Vec::<&str>::new()).unwrap(),
        );
        let sent = json!({"from": "acct-1", "amount": 5, "memo": null, "urgent": null,
                          "kind": {"external": {"iban": "DE00"}}});
        let call = strict
            .restore(Ok(ToolCall::new("c1", "transfer", sent)))
            .unwrap();
        let result = run(&controller, call);
        assert_eq!(
            result.content, "5 from acct-1 urgent=false true",
            "{result:?}"
        );
    }
}

// ---- names -------------------------------------------------------------------------------------

#[test]
fn refused_names_map_reversibly_and_without_collisions() {
    let long = "a".repeat(100);
    let near = format!("{}b", "a".repeat(99));
    let specs = [
        spec("github.create_issue", json!({"type": "object"})),
        spec("github_create_issue", json!({"type": "object"})),
        spec("slack.post message", json!({"type": "object"})),
        spec(&long, json!({"type": "object"})),
        spec(&near, json!({"type": "object"})),
        spec("get_weather", json!({"type": "object"})),
        spec("7zip.extract", json!({"type": "object"})),
    ];
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
        let names = NameMap::new(provider, &specs).unwrap();
        let wire_specs = names.specs(&specs);
        let mut seen = std::collections::BTreeSet::new();
        for (original, wire) in specs.iter().zip(&wire_specs) {
            assert!(
                seen.insert(wire.name.clone()),
                "{provider:?}: {} clashes",
                wire.name
            );
            assert_eq!(
                names.original_name(&wire.name),
                Some(original.name.as_str())
            );
            assert!(wire.name.len() <= 64);
        }
        assert_eq!(names.wire_name("get_weather"), Some("get_weather"));
        assert_eq!(
            names.wire_name("github_create_issue"),
            Some("github_create_issue")
        );
        // Every wire name is accepted by the provider's own export.
        match provider {
            Provider::OpenAi => assert!(openai::tools(&wire_specs, false).is_ok()),
            Provider::Anthropic => assert!(anthropic::tools(&wire_specs).is_ok()),
            _ => assert!(gemini::tools(&wire_specs).is_ok()),
        }
        // The same names map the same way again.
        assert_eq!(NameMap::new(provider, &specs).unwrap(), names);
    }
    // A name taken by a tool is never handed to a mapped one.
    let first = NameMap::new(Provider::OpenAi, [&specs[0]]).unwrap();
    let taken = first.wire_name("github.create_issue").unwrap().to_owned();
    let clash = [specs[0].clone(), spec(&taken, json!({"type": "object"}))];
    let names = NameMap::new(Provider::OpenAi, &clash).unwrap();
    assert_eq!(names.wire_name(&taken), Some(taken.as_str()));
    assert_ne!(names.wire_name("github.create_issue"), Some(taken.as_str()));
    // Two tools of one name cannot be mapped apart.
    assert!(NameMap::new(Provider::OpenAi, [&specs[5], &specs[5]]).is_err());
}

#[test]
fn calls_under_wire_names_reach_the_original_tool() {
    let specs = [
        spec("github.create_issue", json!({"type": "object"})),
        spec("get_weather", json!({"type": "object"})),
    ];
    let names = NameMap::new(Provider::OpenAi, &specs).unwrap();
    let controller = controller(&specs);
    let wire = names.wire_name("github.create_issue").unwrap();
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": wire, "arguments": "{\"title\":\"x\"}"}},
        {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
        {"id": "c3", "type": "function", "function": {"name": "not_a_tool", "arguments": "{}"}}
    ]});
    let calls: Vec<ToolCall> = openai::tool_calls(&message)
        .unwrap()
        .into_iter()
        .map(|call| names.restore(call).unwrap())
        .collect();
    let tools: Vec<&str> = calls.iter().map(|c| c.tool_name.as_str()).collect();
    assert_eq!(tools, ["github.create_issue", "get_weather", "not_a_tool"]);
    let results: Vec<bool> = calls
        .into_iter()
        .map(|c| run(&controller, c).is_error)
        .collect();
    assert_eq!(results, [false, false, true]);
}
