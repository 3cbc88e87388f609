use super::*;
use serde_json::json;

fn noop(_: &Value) -> Result<String, ToolError> {
    Ok(String::new())
}

fn definition(schema: Value) -> Result<ToolDefinition, DefinitionError> {
    ToolDefinition::new(ToolSpec::new("t", "test tool", schema), noop)
}

/// `depth` arrays nested around a number.
fn nested(depth: usize) -> Value {
    let mut value = json!(0);
    for _ in 0..depth {
        value = json!([value]);
    }
    value
}

#[test]
fn empty_name_is_refused() {
    let error = ToolDefinition::new(ToolSpec::new("", "", json!({})), noop).unwrap_err();
    assert_eq!(error, DefinitionError::EmptyName);
}

#[test]
fn non_object_schema_is_refused() {
    assert!(matches!(
        definition(json!(true)),
        Err(DefinitionError::SchemaNotObject { .. })
    ));
}

#[test]
fn invalid_schema_is_refused_with_the_tool_named() {
    let error = definition(json!({"type": "objectx"})).unwrap_err();
    assert!(matches!(error, DefinitionError::InvalidSchema { .. }));
    assert!(error.to_string().contains("tool \"t\""), "{error}");
}

#[test]
fn remote_file_and_relative_refs_are_refused_at_build_time() {
    for reference in [
        "https://example.com/schema.json",
        "file:///etc/passwd",
        "other.json",
    ] {
        let error = definition(json!({"$ref": reference})).unwrap_err();
        assert!(
            matches!(error, DefinitionError::ExternalReference { .. }),
            "{reference}: {error}"
        );
    }
}

#[test]
fn unknown_meta_schema_is_refused() {
    let error =
        definition(json!({"$schema": "https://example.com/meta", "type": "object"})).unwrap_err();
    assert!(
        matches!(error, DefinitionError::ExternalReference { .. }),
        "{error}"
    );
}

#[test]
fn local_refs_compile() {
    let schema = json!({
        "$defs": {"n": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}}
    });
    let tool = definition(schema).unwrap();
    assert!(tool.validate(&json!({"a": 1})).is_ok());
    assert!(tool.validate(&json!({"a": "x"})).is_err());
}

#[test]
fn backtracking_only_patterns_are_refused() {
    // Look-around needs a backtracking engine, which could run in exponential time.
    let error = definition(json!({"type": "object", "properties": {"s": {"pattern": "(?=a)b"}}}))
        .unwrap_err();
    assert!(
        matches!(error, DefinitionError::InvalidSchema { .. }),
        "{error}"
    );
}

#[test]
fn catastrophic_pattern_runs_in_linear_time() {
    // `(a+)+$` takes exponential time in a backtracking engine on "aaa…!". The linear-time
    // engine answers at once; were it ever swapped back, this test would not finish.
    let tool =
        definition(json!({"type": "object", "properties": {"s": {"pattern": "^(a+)+$"}}})).unwrap();
    let hostile = format!("{}!", "a".repeat(100_000));
    let errors = tool.validate(&json!({"s": hostile})).unwrap_err();
    assert_eq!(errors.violations()[0].keyword, "pattern");
}

#[test]
fn schema_depth_and_size_limits() {
    let deep = json!({"type": "object", "properties": {"x": {"const": nested(MAX_SCHEMA_DEPTH)}}});
    assert!(matches!(
        definition(deep),
        Err(DefinitionError::SchemaTooDeep { .. })
    ));
    let wide = json!({"type": "object", "enum": vec![0; MAX_SCHEMA_NODES]});
    assert!(matches!(
        definition(wide),
        Err(DefinitionError::SchemaTooLarge { .. })
    ));
    let fits = json!({"type": "object", "enum": vec![0; MAX_SCHEMA_NODES - 10]});
    assert!(definition(fits).is_ok());
}

#[test]
fn violations_name_pointer_and_keyword_and_mask_values() {
    let tool = definition(json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "p": {"pattern": "^x", "maxLength": 3},
            "e": {"enum": [1, 2]},
            "n": {"propertyNames": {"pattern": "^z"}}
        },
        "required": ["a", "b"]
    }))
    .unwrap();
    let errors = tool
        .validate(&json!({"a": "SECRET1", "p": "SECRET2", "e": "SECRET3", "n": {"SECRET4": 1}}))
        .unwrap_err();
    let listing = errors.to_string();
    assert!(!listing.contains("SECRET"), "{listing}");
    let found: Vec<(&str, &str)> = errors
        .violations()
        .iter()
        .map(|v| (v.pointer.as_str(), v.keyword.as_str()))
        .collect();
    for expected in [
        ("", "required"),
        ("/a", "type"),
        ("/p", "pattern"),
        ("/p", "maxLength"),
        ("/e", "enum"),
        ("/n", "propertyNames"),
    ] {
        assert!(
            found.contains(&expected),
            "{expected:?} missing from {found:?}"
        );
    }
    assert!(listing.starts_with("6 violations: "), "{listing}");
}

#[test]
fn argument_check_runs_after_the_schema() {
    let tool = definition(json!({"type": "object", "required": ["b"]}))
        .unwrap()
        .with_argument_check(|args| {
            if args["b"] == json!(0) {
                Err("b must not be zero".to_owned())
            } else {
                Ok(())
            }
        });
    let errors = tool.validate(&json!({"b": 0})).unwrap_err();
    assert_eq!(errors.violations()[0].keyword, "argumentCheck");
    assert_eq!(errors.violations()[0].message, "b must not be zero");
    // The schema failure is reported alone: the extra check never sees unvalidated input.
    let errors = tool.validate(&json!({})).unwrap_err();
    assert_eq!(errors.violations()[0].keyword, "required");
    assert!(tool.validate(&json!({"b": 1})).is_ok());
}

#[test]
fn over_deep_arguments_are_rejected_before_validation() {
    let recursive = definition(json!({
        "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}}
    }))
    .unwrap();
    let deep = json!({"tree": nested(MAX_ARGUMENT_DEPTH)});
    let errors = recursive.validate(&deep).unwrap_err();
    assert_eq!(errors.violations()[0].keyword, "maxDepth");
    let shallow = json!({"tree": [[[]]]});
    assert!(recursive.validate(&shallow).is_ok());
}

#[test]
fn exceeds_depth_counts_levels() {
    assert!(!exceeds_depth(&nested(3), 3));
    assert!(exceeds_depth(&nested(4), 3));
    assert!(!exceeds_depth(&json!({"a": 1, "b": [1, 2]}), 2));
}

#[test]
fn drop_deep_frees_values_too_deep_for_recursion() {
    let mut value = json!(null);
    for _ in 0..200_000 {
        value = Value::Array(vec![value]);
    }
    drop_deep(value);
}

#[test]
fn declared_names_come_from_properties_required_and_dependent_required_anywhere() {
    let declared = DeclaredNames::collect(&json!({
        "properties": {"a": {"properties": {"b": {}}}},
        "$defs": {"d": {"required": ["c"], "dependentRequired": {"e": ["f"]}}},
        "anyOf": [{"properties": {"g": {}}}]
    }));
    let instance = json!({"a": {"b": 1}, "c": 1, "e": 1, "f": 1, "g": 1, "x": 1});
    for name in ["a", "c", "e", "f", "g"] {
        assert_eq!(
            declared.mask_pointer(&format!("/{name}"), &instance),
            format!("/{name}")
        );
    }
    assert_eq!(declared.mask_pointer("/a/b", &instance), "/a/b");
    assert_eq!(declared.mask_pointer("/x", &instance), "/*");
    assert_eq!(declared.mask_pointer("", &instance), "");
}

#[test]
fn messages_are_cut_at_a_character_boundary() {
    let errors = ArgumentErrors::one(String::new(), "argumentCheck", &"é".repeat(1000));
    let message = &errors.violations()[0].message;
    assert!(message.len() <= ArgumentErrors::MAX_MESSAGE_BYTES);
    assert!(
        message.ends_with('…') && message.starts_with("éé"),
        "{message}"
    );
    let short = ArgumentErrors::one(String::new(), "argumentCheck", "b must not be zero");
    assert_eq!(short.violations()[0].message, "b must not be zero");
}
