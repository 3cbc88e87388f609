//! Validating first (for schemas `accepted_depth` bounds) answers every call exactly as walking
//! the depth first does: random schemas from the modelled keywords (and some that are not), random
//! arguments with deep chains spliced in.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::contract::ToolSpec;
use crate::definition::{
    ArgumentErrors, MAX_ARGUMENT_DEPTH, ToolDefinition, ToolError, exceeds_depth,
};

/// The order every schema used before: the depth walk, then the validator.
fn walk_first(definition: &ToolDefinition, arguments: &Value) -> Result<(), ArgumentErrors> {
    if exceeds_depth(arguments, MAX_ARGUMENT_DEPTH) {
        return Err(super::too_deep());
    }
    if definition.validator.is_valid(arguments) {
        return Ok(());
    }
    Err(ArgumentErrors::listed(
        &definition.validator,
        arguments,
        &definition.declared,
    ))
}

fn definition(schema: Value) -> Option<ToolDefinition> {
    let noop = |_: &Value| -> Result<String, ToolError> { Ok(String::new()) };
    ToolDefinition::new(ToolSpec::new("t", "", schema), noop).ok()
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(str::to_owned)
}

fn literal() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3_i64..3).prop_map(Value::from),
        key().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn schema() -> impl Strategy<Value = Value> {
    let scalar_type = prop_oneof![
        Just("string"),
        Just("integer"),
        Just("number"),
        Just("boolean"),
        Just("null")
    ];
    let leaf = prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!({})),
        scalar_type.clone().prop_map(|t| json!({"type": t})),
        prop::collection::vec(literal(), 1..3).prop_map(|options| json!({"enum": options})),
        literal().prop_map(|value| json!({"const": value})),
        Just(json!({"type": "object", "additionalProperties": false})),
        Just(json!({"type": "array", "items": false})),
        Just(json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true})),
    ];
    leaf.prop_recursive(4, 24, 3, move |inner| {
        let additional = prop_oneof![
            Just(None),
            Just(Some(json!(false))),
            Just(Some(json!(true))),
            inner.clone().prop_map(Some),
        ];
        let type_name = prop_oneof![
            Just(None),
            Just(Some(json!("object"))),
            Just(Some(json!("array"))),
            Just(Some(json!(["object", "array"]))),
            Just(Some(json!(["string", "object"]))),
            Just(Some(json!("string"))),
        ];
        prop_oneof![
            (
                type_name.clone(),
                prop::collection::btree_map(key(), inner.clone(), 0..3),
                additional.clone(),
                prop::collection::vec(key(), 0..2),
                prop::option::of(literal()),
            )
                .prop_map(|(type_name, properties, additional, required, constant)| {
                    let mut schema = Map::new();
                    if let Some(type_name) = type_name {
                        schema.insert("type".into(), type_name);
                    }
                    schema.insert("properties".into(), json!(properties));
                    if let Some(additional) = additional {
                        schema.insert("additionalProperties".into(), additional);
                    }
                    schema.insert("required".into(), json!(required));
                    if let Some(constant) = constant {
                        schema.insert("const".into(), constant);
                    }
                    Value::Object(schema)
                }),
            (
                type_name,
                prop::option::of(inner.clone()),
                prop::collection::vec(inner.clone(), 0..2)
            )
                .prop_map(|(type_name, items, prefix)| {
                    let mut schema = Map::new();
                    if let Some(type_name) = type_name {
                        schema.insert("type".into(), type_name);
                    }
                    if let Some(items) = items {
                        schema.insert("items".into(), items);
                    }
                    schema.insert("prefixItems".into(), Value::Array(prefix));
                    Value::Object(schema)
                }),
            // Keywords not modelled: these keep the walk first.
            (inner.clone(), inner).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
        ]
    })
}

/// `value` nested inside `levels` arrays and objects, alternating. (Built without `json!`, which
/// would copy the inner value through serde, recursively.)
fn chain(value: Value, levels: usize) -> Value {
    (0..levels).fold(value, |inner, level| {
        if level % 2 == 0 {
            Value::Array(vec![inner])
        } else {
            object([("a", inner)])
        }
    })
}

fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn arguments() -> impl Strategy<Value = Value> {
    let shallow = literal();
    let deep_levels = prop_oneof![
        Just(0_usize),
        Just(MAX_ARGUMENT_DEPTH - 2),
        Just(MAX_ARGUMENT_DEPTH),
        Just(MAX_ARGUMENT_DEPTH + 1),
        Just(1_000)
    ];
    (shallow, deep_levels, literal(), key()).prop_map(|(shallow, levels, leaf, key)| {
        if levels == 0 {
            return shallow;
        }
        // The deep chain under a key the schema may declare, inside an object or an array.
        let deep = chain(leaf, levels);
        match shallow {
            Value::Array(mut items) => {
                items.push(deep);
                Value::Array(items)
            }
            Value::Object(mut map) => {
                map.insert(key, deep);
                Value::Object(map)
            }
            _ => deep,
        }
    })
}

/// A value built to fit `schema` (best effort: it may still miss, e.g. a `const` beside a `type`),
/// steered by `choices`; sometimes a deep chain in place of a member.
fn fitting(schema: &Value, choices: &mut impl Iterator<Item = u8>, deep: usize) -> Value {
    let mut choose = |n: u8| choices.next().unwrap_or(0) % n;
    let Value::Object(keywords) = schema else {
        return json!(1);
    };
    if let Some(literal) = keywords.get("const") {
        return literal.clone();
    }
    if let Some(Value::Array(options)) = keywords.get("enum") {
        return options[usize::from(choose(8)) % options.len().max(1)].clone();
    }
    let type_name = match keywords.get("type") {
        Some(Value::Array(names)) => names.first().cloned(),
        other => other.cloned(),
    };
    let pick = choose(3);
    match type_name.as_ref().and_then(Value::as_str) {
        Some("string") => json!("a"),
        Some("integer") | Some("number") => json!(1),
        Some("boolean") => json!(true),
        Some("null") => Value::Null,
        Some("array") => {
            let mut items: Vec<Value> = keywords
                .get("prefixItems")
                .and_then(Value::as_array)
                .map(|prefix| prefix.iter().map(|s| fitting(s, choices, deep)).collect())
                .unwrap_or_default();
            if pick == 0 && deep > 0 {
                items.push(chain(json!(1), deep));
            }
            Value::Array(items)
        }
        _ => {
            let mut members = Map::new();
            if let Some(Value::Object(properties)) = keywords.get("properties") {
                for (key, subschema) in properties {
                    let member = if pick == 1 && deep > 0 {
                        chain(json!(1), deep)
                    } else {
                        fitting(subschema, choices, deep)
                    };
                    members.insert(key.clone(), member);
                }
            }
            Value::Object(members)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn validating_first_answers_as_walking_first(
        schema in schema(),
        mut inputs in prop::collection::vec(arguments(), 1..6),
        choices in prop::collection::vec(any::<u8>(), 0..32),
        deep in prop_oneof![Just(0_usize), Just(MAX_ARGUMENT_DEPTH), Just(MAX_ARGUMENT_DEPTH + 1), Just(1_000)],
    ) {
        inputs.push(fitting(&schema, &mut choices.into_iter(), deep));
        let Some(definition) = definition(schema) else {
            return Ok(());
        };
        for arguments in &inputs {
            let ours = definition.check_schema(arguments);
            let theirs = walk_first(&definition, arguments);
            prop_assert_eq!(ours.is_ok(), theirs.is_ok());
            if let (Err(ours), Err(theirs)) = (&ours, &theirs) {
                prop_assert_eq!(ours.is_depth_limit(), theirs.is_depth_limit());
                prop_assert_eq!(ours.to_string(), theirs.to_string());
            }
            if definition.validates_first && ours.is_ok() {
                prop_assert!(!exceeds_depth(arguments, MAX_ARGUMENT_DEPTH));
            }
        }
        inputs.into_iter().for_each(crate::definition::drop_deep);
    }
}

#[test]
fn the_generators_reach_both_orders_and_every_answer() {
    // Without this, a generator that never produced a bounded schema (or a deep call) would let
    // the property above pass without testing anything.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut bounded, mut walked, mut deep_refused, mut valid_bounded) = (0, 0, 0, 0);
    for _ in 0..500 {
        let schema = schema().new_tree(&mut runner).expect("tree").current();
        let choices = prop::collection::vec(any::<u8>(), 0..32)
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        let deep =
            [0, 0, MAX_ARGUMENT_DEPTH + 1][usize::from(choices.first().copied().unwrap_or(0) % 3)];
        let fitted = fitting(&schema, &mut choices.into_iter(), deep);
        let random = arguments().new_tree(&mut runner).expect("tree").current();
        let Some(definition) = definition(schema) else {
            continue;
        };
        if !definition.validates_first {
            walked += 1;
            continue;
        }
        bounded += 1;
        for arguments in [fitted, random] {
            match definition.check_schema(&arguments) {
                Ok(()) => valid_bounded += 1,
                Err(errors) if errors.is_depth_limit() => deep_refused += 1,
                Err(_) => {}
            }
            crate::definition::drop_deep(arguments);
        }
    }
    assert!(
        bounded > 50 && walked > 50,
        "{bounded} bounded, {walked} walked"
    );
    assert!(
        valid_bounded > 10 && deep_refused > 10,
        "{valid_bounded} valid, {deep_refused} too deep"
    );
}

#[test]
fn a_deep_value_against_a_shallow_schema_is_refused_as_too_deep_without_overflow() {
    let calculator = definition(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": false
    }))
    .expect("compiles");
    assert!(calculator.validates_first);
    for arguments in [
        object([("a", chain(json!(1), 100_000)), ("b", json!(2))]),
        object([
            ("a", json!(1)),
            ("b", json!(2)),
            ("c", chain(json!(1), 100_000)),
        ]),
        chain(json!(1), 100_000),
    ] {
        let errors = calculator.check_schema(&arguments).expect_err("refused");
        assert!(errors.is_depth_limit());
        crate::definition::drop_deep(arguments);
    }
    assert!(calculator.check_schema(&json!({"a": 1, "b": 2})).is_ok());
}

#[test]
fn dialects_that_change_the_keywords_keep_the_walk_first() {
    // Found by an independent attack: under draft-04 (no `const`), a nested `$schema`, or a custom
    // meta-schema embedded in `$defs` that switches vocabularies off, the validator accepts values
    // the modelled keywords would refuse. Those schemas are not analysed: a deep value is refused
    // as too deep, before the validator sees it.
    for schema in [
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
               "additionalProperties": {"const": 1}}),
        json!({"type": "object", "additionalProperties": false, "properties": {
               "a": {"$schema": "http://json-schema.org/draft-04/schema#", "const": 1}}}),
        json!({"$schema": "urn:m",
               "$defs": {"m": {"$id": "urn:m", "$vocabulary": {
                   "https://json-schema.org/draft/2020-12/vocab/core": true}}},
               "type": "object", "additionalProperties": false}),
    ] {
        let definition = definition(schema.clone()).expect("compiles");
        assert!(!definition.validates_first, "{schema}");
        let deep = object([("a", chain(json!(1), 100_000))]);
        let errors = definition.check_schema(&deep).expect_err("too deep");
        assert!(errors.is_depth_limit(), "{schema}");
        crate::definition::drop_deep(deep);
    }
}
