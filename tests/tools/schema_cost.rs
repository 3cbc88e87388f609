//! Validation cost is bounded: a schema that could make one argument value cost exponentially many
//! subschema evaluations is refused when the definition is built, and every accepted recursive
//! schema answers its worst arguments (as deep as `MAX_ARGUMENT_DEPTH` allows, or about 1 MB wide).
//! Nothing here asserts on time; `benches/hostile_schemas.rs` measures it.

use serde_json::{Value, json};
use toolgate::definition::DefinitionError;
use toolgate::definition::MAX_ARGUMENT_DEPTH;
use toolgate::{ToolDefinition, ToolError, ToolSpec};

fn noop(_: &Value) -> Result<String, ToolError> {
    Ok(String::new())
}

fn definition(schema: Value) -> Result<ToolDefinition, DefinitionError> {
    ToolDefinition::new(ToolSpec::new("t", "test tool", schema), noop)
}

/// `{"a": {"a": … leaf}}`, `levels` objects deep.
fn chain(key: &str, levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, _| json!({ key: inner }))
}

/// `{"kind": "b", "b": {"kind": "b", "b": … leaf}}`, `levels` objects deep.
fn tagged_chain(levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, _| json!({"kind": "b", "b": inner}))
}

/// `[[… leaf]]`, `levels` arrays deep.
fn nested_arrays(levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, _| json!([inner]))
}

/// An object with about 1 MB of small members, each `member`.
fn wide(member: &Value) -> Value {
    let members = 1_000_000 / (member.to_string().len() + 12);
    Value::Object(
        (0..members)
            .map(|i| (format!("k{i:07}"), member.clone()))
            .collect(),
    )
}

/// An array with about 1 MB of `item`s.
fn wide_array(item: &Value) -> Value {
    let items = 1_000_000 / (item.to_string().len() + 1);
    Value::Array(vec![item.clone(); items])
}

/// The recursive node of the issue: both `anyOf` branches recurse into the same property.
fn doubling_any_of() -> Value {
    let branch = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}});
    json!({
        "$defs": {"n": {"anyOf": [branch, branch]}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}}
    })
}

fn json_value_like() -> Value {
    json!({"anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"$ref": "#"}},
        {"type": "object", "additionalProperties": {"$ref": "#"}}
    ]})
}

/// `n` `$defs`, each an `anyOf` whose two branches refer to the next: 2^n paths to the last.
fn ref_chain_doubling(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("d{n}"), json!({"type": "integer"}));
    json!({"$defs": defs, "type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}})
}

#[test]
fn hostile_schemas_are_refused_with_the_place_named() {
    let recurse = json!({"$ref": "#/$defs/n"});
    let catalogue: Vec<(&str, Value, &str)> = vec![
        (
            "anyOf doubling (the issue)",
            doubling_any_of(),
            "/$defs/n/anyOf",
        ),
        (
            "oneOf doubling",
            json!({"$defs": {"n": {"oneOf": [
                {"properties": {"a": recurse}},
                {"properties": {"a": recurse}, "required": ["a"]}
            ]}}, "type": "object", "properties": {"a": recurse}}),
            "/$defs/n",
        ),
        (
            "allOf doubling",
            json!({"$defs": {"n": {"allOf": [
                {"properties": {"a": recurse}},
                {"properties": {"a": recurse}}
            ]}}, "type": "object", "properties": {"a": recurse}}),
            "/$defs/n",
        ),
        (
            "properties and patternProperties overlapping on the recursion",
            json!({"type": "object",
                   "properties": {"a": {"$ref": "#"}},
                   "patternProperties": {"^a$": {"$ref": "#"}}}),
            "\"\"",
        ),
        (
            "items and contains both recursing",
            json!({"type": "array", "items": {"$ref": "#"}, "contains": {"$ref": "#"}}),
            "\"\"",
        ),
        (
            "prefixItems and items both recursing into the first item",
            json!({"type": "array", "prefixItems": [{"$ref": "#"}],
                   "contains": {"$ref": "#"}, "items": {"$ref": "#"}}),
            "\"\"",
        ),
        (
            "if/then/else all recursing",
            json!({"type": "object",
                   "if": {"properties": {"a": {"$ref": "#"}}},
                   "then": {"properties": {"a": {"$ref": "#"}}},
                   "else": {"properties": {"a": {"$ref": "#"}}}}),
            "/else",
        ),
        (
            "dependentSchemas recursing next to properties",
            json!({"type": "object",
                   "properties": {"a": {"$ref": "#"}},
                   "dependentSchemas": {"a": {"properties": {"a": {"$ref": "#"}}}}}),
            "/dependentSchemas/a",
        ),
        (
            "$ref chain reaching one target 2^24 ways (no recursion)",
            ref_chain_doubling(24),
            "/$defs/d24",
        ),
        (
            "same-value $ref cycle",
            json!({"type": "object", "$ref": "#"}),
            "\"\"",
        ),
        (
            "same-value cycle through anyOf and $defs",
            json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                   "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}}),
            "/$defs/",
        ),
        (
            "unevaluatedProperties re-checking an anyOf branch that recurses",
            json!({"type": "object",
                   "anyOf": [{"properties": {"a": {"$ref": "#"}}}],
                   "unevaluatedProperties": false}),
            "/anyOf/0",
        ),
        (
            "anchor references doubling",
            json!({"$defs": {"n": {"$anchor": "node", "anyOf": [
                {"properties": {"a": {"$ref": "#node"}}},
                {"properties": {"a": {"$ref": "#node"}}}
            ]}}, "type": "object", "properties": {"a": {"$ref": "#node"}}}),
            "/$defs/n",
        ),
        (
            "union of 3000 branches on one value",
            json!({"type": "object", "properties": {"x": {
                "anyOf": (0..3000).map(|i| json!({"const": i})).collect::<Vec<_>>()
            }}}),
            "/properties/x",
        ),
    ];
    assert!(catalogue.len() >= 10);
    for (name, schema, place) in catalogue {
        match definition(schema) {
            Err(DefinitionError::ValidationTooCostly { tool, detail }) => {
                assert_eq!(tool, "t");
                assert!(detail.contains(place), "{name}: {detail}");
            }
            other => panic!("{name}: expected ValidationTooCostly, got {other:?}"),
        }
    }
}

#[test]
fn refusal_says_how_to_fix_it() {
    let error = definition(doubling_any_of()).unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("tool \"t\": input_schema is too costly to validate"));
    assert!(message.contains("limit 4096"), "{message}");
    assert!(message.contains("exclusive"), "{message}");
    let cycle = definition(json!({"type": "object", "$ref": "#"})).unwrap_err();
    assert!(cycle.to_string().contains("cycle"), "{cycle}");
}

#[test]
fn non_recursive_reference_fan_out_is_accepted_while_small() {
    // 2^5 paths to one leaf: 32 evaluations per value, far under the limit.
    let tool = definition(ref_chain_doubling(5)).unwrap();
    assert!(tool.validate(&json!({"x": 1})).is_ok());
    assert!(tool.validate(&json!({"x": "no"})).is_err());
}

/// An argument, and whether it is valid.
type Worst = (Value, bool);

/// Accepted recursive schemas, each with arguments that recurse as deep as allowed, valid and
/// invalid, and one about 1 MB wide.
#[test]
fn typical_recursive_schemas_are_accepted_and_answer_their_worst_arguments() {
    let deepest = MAX_ARGUMENT_DEPTH - 1;
    let cases: Vec<(&str, Value, Vec<Worst>)> = vec![
        (
            "linked list",
            json!({"$defs": {"node": {"type": "object", "properties": {
                "value": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}
            }, "required": ["value"]}}, "$ref": "#/$defs/node"}),
            vec![
                (chain("next", deepest, json!({"value": 1})), false),
                (wide(&json!(1)), false),
                (json!({"value": 1, "next": {"value": 2}}), true),
            ],
        ),
        (
            "binary tree (two properties recursing)",
            json!({"type": "object", "properties": {
                "left": {"$ref": "#"}, "right": {"$ref": "#"}, "v": {"type": "number"}
            }}),
            vec![
                (chain("left", deepest, json!({"v": 1})), true),
                (chain("right", deepest, json!({"v": "x"})), false),
                (wide(&json!({"left": {}, "right": {"v": 1}})), true),
            ],
        ),
        (
            "n-ary tree (children: Vec<Node>)",
            json!({"$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }, "required": ["name", "children"]}}, "$ref": "#/$defs/Node"}),
            vec![
                (nested_tree(deepest / 2, "x"), true),
                (nested_tree(deepest / 2, 7), false),
                (
                    json!({"name": "r", "children": wide_array(&json!({"name": "c", "children": []}))}),
                    true,
                ),
            ],
        ),
        (
            "JSON-value-like anyOf",
            json_value_like(),
            vec![
                (json!({"a": chain("a", deepest - 1, json!("leaf"))}), true),
                (json!({"a": chain("a", deepest - 1, json!(1))}), false),
                (nested_arrays(deepest, json!(true)), false),
                (wide(&json!(["s", {"k": "v"}])), true),
                (wide(&json!([1, {"k": 2}])), false),
            ],
        ),
        (
            "anyOf with two branches made exclusive by their property names",
            json!({"$defs": {"n": {"anyOf": [
                {"type": "object", "properties": {"kind": {"const": "a"}, "a": {"$ref": "#/$defs/n"}},
                 "required": ["kind"]},
                {"type": "object", "properties": {"kind": {"const": "b"}, "b": {"$ref": "#/$defs/n"}},
                 "required": ["kind"]}
            ]}}, "$ref": "#/$defs/n"}),
            vec![
                (tagged_chain(deepest, json!({"kind": "a"})), true),
                (tagged_chain(deepest, json!({"kind": "c"})), false),
                (chain("b", deepest, json!(1)), false),
                (wide(&json!({"a": 1, "b": 2})), false),
            ],
        ),
        (
            "externally tagged enum of expressions (schemars style)",
            json!({"$defs": {"Expr": {"oneOf": [
                {"type": "number"},
                {"type": "object", "properties": {"Neg": {"$ref": "#/$defs/Expr"}},
                 "required": ["Neg"], "additionalProperties": false},
                {"type": "object", "properties": {"Add": {"type": "array",
                    "prefixItems": [{"$ref": "#/$defs/Expr"}, {"$ref": "#/$defs/Expr"}],
                    "minItems": 2, "maxItems": 2}},
                 "required": ["Add"], "additionalProperties": false}
            ]}}, "type": "object", "properties": {"e": {"$ref": "#/$defs/Expr"}}}),
            vec![
                (json!({"e": chain("Neg", deepest - 1, json!(1))}), true),
                (json!({"e": chain("Neg", deepest - 1, json!("x"))}), false),
                (
                    json!({"e": {"Add": [chain("Neg", deepest - 3, json!(1)), "x"]}}),
                    false,
                ),
            ],
        ),
    ];
    for (name, schema, arguments) in cases {
        let tool = definition(schema).unwrap_or_else(|error| panic!("{name}: {error}"));
        for (argument, valid) in arguments {
            assert_eq!(tool.validate(&argument).is_ok(), valid, "{name}");
        }
    }
}

/// `{"name": …, "children": [ … ]}`, `levels` nodes deep (two nesting levels each), the deepest
/// name being `leaf_name`.
fn nested_tree(levels: usize, leaf_name: impl Into<Value>) -> Value {
    let leaf = json!({"name": leaf_name.into(), "children": []});
    (1..levels).fold(leaf, |inner, _| json!({"name": "n", "children": [inner]}))
}

/// `count` object types, each referring to the next through a property and to another through an
/// array: different values are evaluated against different types, never against all at once.
fn data_model(count: usize) -> Value {
    let defs: serde_json::Map<String, Value> = (0..count)
        .map(|i| {
            let child = format!("#/$defs/d{}", (i + 1) % count);
            let listed = format!("#/$defs/d{}", (i * 7 + 3) % count);
            (
                format!("d{i}"),
                json!({"type": "object", "properties": {
                    "name": {"type": "string"},
                    "child": {"$ref": child},
                    "list": {"type": "array", "items": {"$ref": listed}}
                }, "required": ["name"], "additionalProperties": false}),
            )
        })
        .collect();
    json!({"$defs": defs, "type": "object", "properties": {"root": {"$ref": "#/$defs/d0"}}})
}

#[test]
fn mutually_recursive_data_models_are_accepted_and_answer_deep_arguments() {
    let tool = definition(data_model(300)).unwrap();
    let deep = chain("child", MAX_ARGUMENT_DEPTH - 2, json!({"name": "x"}));
    assert!(
        tool.validate(&json!({"root": deep})).is_err(),
        "names are missing above the leaf"
    );
    let named = (0..MAX_ARGUMENT_DEPTH - 4).fold(
        json!({"name": "x"}),
        |inner, _| json!({"name": "n", "child": inner, "list": [{"name": "m"}]}),
    );
    assert!(tool.validate(&json!({"root": named})).is_ok());
}

#[test]
fn ordinary_tool_schemas_are_accepted() {
    let schemas = [
        json!({"type": "object"}),
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
               "additionalProperties": false}),
        // MCP style: a union of actions, each with its own required properties.
        json!({"type": "object", "properties": {"action": {"oneOf": [
            {"type": "object", "properties": {"type": {"const": "click"}, "x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["type", "x", "y"]},
            {"type": "object", "properties": {"type": {"const": "type"}, "text": {"type": "string"}}, "required": ["type", "text"]},
            {"type": "object", "properties": {"type": {"const": "scroll"}, "dy": {"type": "integer"}}, "required": ["type"]}
        ]}}, "required": ["action"]}),
        json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}},
               "additionalProperties": {"type": "integer"}}),
        json!({"type": "object", "properties": {"list": {"type": "array",
               "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false,
               "contains": {"type": "string"}}}}),
        json!({"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]},
               "else": {"required": ["c"]}}),
        json!({"type": "object", "allOf": [{"$ref": "#/$defs/base"}],
               "unevaluatedProperties": false,
               "$defs": {"base": {"properties": {"id": {"type": "string"}}}}}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
               "definitions": {"p": {"type": "string"}},
               "properties": {"a": {"$ref": "#/definitions/p"},
                              "t": {"type": "array", "items": [{"type": "string"}],
                                    "additionalItems": {"type": "integer"}}}}),
        json!({"$id": "https://example.com/tool", "type": "object",
               "$defs": {"n": {"$anchor": "num", "type": "number"}},
               "properties": {"a": {"$ref": "#num"}, "b": {"$ref": "https://example.com/tool#/$defs/n"}}}),
    ];
    for schema in schemas {
        let text = schema.to_string();
        definition(schema).unwrap_or_else(|error| panic!("{text}: {error}"));
    }
}

#[cfg(feature = "schemars")]
mod generated {
    use super::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Node {
        name: String,
        children: Vec<Node>,
    }

    #[derive(Deserialize, Serialize, JsonSchema)]
    enum Shape {
        Circle { radius: f64 },
        Rect { width: f64, height: f64 },
        Group(Vec<Shape>),
        Empty,
    }

    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Scene {
        root: Node,
        shapes: Vec<Shape>,
        tags: std::collections::BTreeMap<String, Option<Shape>>,
    }

    #[test]
    fn schemars_recursive_types_are_accepted_and_answer_deep_arguments() {
        let tool =
            ToolDefinition::typed::<Scene, _>("scene", "Draw.", |_: Scene| Ok(String::new()))
                .unwrap();
        let deep_node = nested_tree(MAX_ARGUMENT_DEPTH / 2 - 1, "leaf");
        let mut group = json!({"Circle": {"radius": 1.0}});
        for _ in 0..(MAX_ARGUMENT_DEPTH / 2 - 2) {
            group = json!({"Group": [group]});
        }
        let valid = json!({"root": deep_node, "shapes": [group], "tags": {}});
        assert!(tool.validate(&valid).is_ok());
        let invalid =
            json!({"root": nested_tree(MAX_ARGUMENT_DEPTH / 2 - 1, 1), "shapes": [], "tags": {}});
        assert!(tool.validate(&invalid).is_err());
    }
}
