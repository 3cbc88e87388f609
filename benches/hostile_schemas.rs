//! What the worst arguments cost against the worst schemas `ToolDefinition` accepts, one per
//! family, and what the definition-time cost analysis adds to building a definition.
//!
//! `cargo bench --bench hostile_schemas -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolgate::definition::{MAX_ARGUMENT_DEPTH, MAX_SCHEMA_NODES};
use toolgate::{ToolDefinition, ToolError, ToolSpec};

fn noop(_: &Value) -> Result<String, ToolError> {
    Ok(String::new())
}

fn definition(schema: Value) -> ToolDefinition {
    ToolDefinition::new(ToolSpec::new("t", "bench", schema), noop).expect("accepted")
}

fn chain(key: &str, levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, _| json!({ key: inner }))
}

/// Each worst case validated with `validate`: `is_valid`, then the full error listing when invalid.
fn worst_accepted(c: &mut Criterion) {
    let deepest = MAX_ARGUMENT_DEPTH - 1;
    let json_like = definition(json!({"anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"$ref": "#"}},
        {"type": "object", "additionalProperties": {"$ref": "#"}}
    ]}));
    let exclusive = definition(json!({"$defs": {"n": {"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "a": {"$ref": "#/$defs/n"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "b": {"$ref": "#/$defs/n"}}, "required": ["kind"]}
    ]}}, "$ref": "#/$defs/n"}));
    let tree = definition(json!({"type": "object", "properties": {
        "left": {"$ref": "#"}, "right": {"$ref": "#"}, "v": {"type": "number"}
    }}));
    // Near the budget on every item: a union of 800 branches.
    let union = definition(json!({"type": "array", "items": {
        "anyOf": (0..800).map(|i| json!({"const": i})).collect::<Vec<_>>()
    }}));

    let mut group = c.benchmark_group("worst_accepted");
    let cases = [
        (
            "json_like_depth64_valid",
            &json_like,
            chain("a", deepest, json!("leaf")),
        ),
        (
            "json_like_depth64_invalid",
            &json_like,
            chain("a", deepest, json!(1)),
        ),
        (
            "exclusive_any_of_depth64_invalid",
            &exclusive,
            (0..deepest).fold(
                json!({"kind": "c"}),
                |inner, _| json!({"kind": "b", "b": inner}),
            ),
        ),
        (
            "tree_depth64_invalid",
            &tree,
            chain("left", deepest, json!({"v": "x"})),
        ),
        (
            "json_like_1mb_invalid",
            &json_like,
            Value::Object(
                (0..50_000)
                    .map(|i| (format!("k{i:06}"), json!(["s", {"k": 1}])))
                    .collect(),
            ),
        ),
        (
            "union_800_branches_1000_items_invalid",
            &union,
            json!(vec![-1; 1000]),
        ),
    ];
    for (name, tool, argument) in cases {
        group.bench_function(name, |b| {
            b.iter(|| black_box(tool.validate(black_box(&argument)).is_ok()));
        });
    }
    group.finish();
}

/// A large ordinary schema near `MAX_SCHEMA_NODES`: many `$defs`, each an object whose properties
/// refer to other definitions (a mutually recursive data model).
fn large_schema() -> Value {
    let count = 320;
    let mut defs = Map::new();
    for i in 0..count {
        let mut properties = Map::new();
        for j in 0..6 {
            properties.insert(format!("s{j}"), json!({"type": "string", "maxLength": 64}));
        }
        properties.insert(
            "child".into(),
            json!({"$ref": format!("#/$defs/d{}", (i + 1) % count)}),
        );
        properties.insert(
            "list".into(),
            json!({"type": "array", "items": {"$ref": format!("#/$defs/d{}", (i * 7 + 3) % count)}}),
        );
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": properties, "required": ["s0"], "additionalProperties": false}),
        );
    }
    json!({"$defs": defs, "type": "object", "properties": {"root": {"$ref": "#/$defs/d0"}}})
}

/// A `$ref` chain as long as the node limit allows, which makes the analysis's closures largest.
fn long_ref_chain() -> Value {
    let count = MAX_SCHEMA_NODES / 3 - 10;
    let mut defs = Map::new();
    for i in 0..count {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert(format!("d{count}"), json!({"type": "integer"}));
    json!({"$defs": defs, "type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}})
}

fn count_values(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_values).sum(),
        Value::Object(map) => map.values().map(count_values).sum(),
        _ => 0,
    }
}

fn analysis(c: &mut Criterion) {
    let mut group = c.benchmark_group("definition");
    group.sample_size(10);
    for (name, schema) in [
        ("large_model", large_schema()),
        ("long_ref_chain", long_ref_chain()),
    ] {
        eprintln!(
            "{name}: {} values; accepted: {}",
            count_values(&schema),
            ToolDefinition::new(ToolSpec::new("t", "", schema.clone()), noop).is_ok()
        );
        group.bench_function(format!("{name}_compile_only"), |b| {
            b.iter(|| {
                jsonschema::options()
                    .offline()
                    .build(black_box(&schema))
                    .is_ok()
            });
        });
        group.bench_function(format!("{name}_compile_and_analysis"), |b| {
            b.iter(|| {
                ToolDefinition::new(ToolSpec::new("t", "", black_box(schema.clone())), noop).is_ok()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, worst_accepted, analysis);
criterion_main!(benches);
