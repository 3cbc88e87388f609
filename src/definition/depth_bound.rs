//! Which input schemas bound the nesting of every call they accept, so that a valid call needs no
//! depth walk before validation.
//!
//! Arguments are refused past [`MAX_ARGUMENT_DEPTH`](super::MAX_ARGUMENT_DEPTH) levels, and that
//! walk used to run before the validator on every call, so a recursive schema could never be
//! driven into a stack overflow (G9). For a schema analysed here the order can be turned around:
//! validating any value, however deep, descends no further than the schema's own nesting (each
//! keyword below compares or descends one level per schema level), and every value the schema
//! accepts nests at most as deep as the bound computed here. So the validator runs first; a valid
//! call is known to be shallow enough, and only a refused call is walked, to report a too-deep
//! value as too deep (the same rejection as before, in the same cases).
//!
//! The analysis is conservative: a keyword it does not model — `$ref`, the combinators,
//! `patternProperties`, `uniqueItems` (it compares items with each other, as deep as they go),
//! anything unknown — makes the schema unbounded, and such a schema keeps the walk first.

use serde_json::{Map, Value};

/// The rejection of arguments nested past [`MAX_ARGUMENT_DEPTH`](super::MAX_ARGUMENT_DEPTH).
#[cold]
pub(super) fn too_deep() -> super::ArgumentErrors {
    super::ArgumentErrors::one(
        String::new(),
        "maxDepth",
        &format!(
            "arguments nest deeper than {} levels",
            super::MAX_ARGUMENT_DEPTH
        ),
    )
}

/// Keywords that only assert something of a scalar, a key's presence or a size, or annotate:
/// validating them never descends into the value.
const FLAT_KEYWORDS: &[&str] = &[
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "contentEncoding",
    "contentMediaType",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "required",
    "dependentRequired",
];

/// The `$schema` values under which the keywords here mean what this module assumes: drafts 6 and
/// 7, 2019-09 and 2020-12 (before 2020-12, `prefixItems` is ignored and `items` covers every
/// element, which the bound already allows for). Draft-04 (no `const`) and any other meta-schema
/// are not analysed; neither are embedded resources (`$defs`, `definitions`), which could define
/// one.
const MODELLED_DIALECTS: &[&str] = &[
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2019-09/schema#",
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
];

/// Keywords modelled below, by how they constrain or descend.
const MODELLED_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "additionalProperties",
    "items",
    "prefixItems",
];

/// The deepest nesting (counted as [`exceeds_depth`](super::exceeds_depth) counts: a scalar is 0,
/// an object of scalars 1) of any value `schema` accepts, when validation of any value against it
/// is bounded too and the bound is at most `limit`; `None` otherwise.
pub(super) fn accepted_depth(schema: &Value, limit: usize) -> Option<usize> {
    // `$schema` decides which keywords the validator applies at all (draft-04 has no `const`; a
    // custom meta-schema can switch whole vocabularies off), and below the root it switches the
    // draft of that subschema: only the dialects whose keywords are modelled here, named at the
    // root, are analysed.
    let root = match schema {
        Value::Object(keywords) => match keywords.get("$schema") {
            None => schema,
            Some(Value::String(dialect)) if MODELLED_DIALECTS.contains(&dialect.as_str()) => {
                let mut rest = keywords.clone();
                rest.remove("$schema");
                return accepted_depth(&Value::Object(rest), limit);
            }
            Some(_) => return None,
        },
        _ => schema,
    };
    // A compiled schema nests at most `MAX_SCHEMA_DEPTH` JSON levels, so this budget is never the
    // reason a compiled schema goes unanalysed; it keeps the recursion bounded regardless.
    match analyse(root, super::MAX_SCHEMA_DEPTH) {
        Some(Bound::Depth(depth)) if depth <= limit => Some(depth),
        _ => None,
    }
}

/// What a schema says about the values it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// Every accepted value nests at most this deep.
    Depth(usize),
    /// Some accepted values nest arbitrarily deep (validation itself is still bounded).
    Unbounded,
}

impl Bound {
    fn deeper(self) -> Self {
        match self {
            Self::Depth(depth) => Self::Depth(depth + 1),
            Self::Unbounded => Self::Unbounded,
        }
    }

    fn max(self, other: Self) -> Self {
        match (self, other) {
            (Self::Depth(a), Self::Depth(b)) => Self::Depth(a.max(b)),
            _ => Self::Unbounded,
        }
    }

    fn min(self, other: Self) -> Self {
        match (self, other) {
            (Self::Depth(a), Self::Depth(b)) => Self::Depth(a.min(b)),
            (Self::Depth(a), Self::Unbounded) | (Self::Unbounded, Self::Depth(a)) => Self::Depth(a),
            (Self::Unbounded, Self::Unbounded) => Self::Unbounded,
        }
    }
}

/// `None` when the schema uses a keyword not modelled here, or nests more than `budget` schema
/// levels (then how deep validation descends is not known).
fn analyse(schema: &Value, budget: usize) -> Option<Bound> {
    let keywords = match schema {
        Value::Bool(true) => return Some(Bound::Unbounded),
        // Accepts nothing.
        Value::Bool(false) => return Some(Bound::Depth(0)),
        Value::Object(keywords) => keywords,
        _ => return None,
    };
    let budget = budget.checked_sub(1)?;
    if keywords.keys().any(|key| {
        !FLAT_KEYWORDS.contains(&key.as_str()) && !MODELLED_KEYWORDS.contains(&key.as_str())
    }) {
        return None;
    }
    // Analysed whatever the type allows: the validator applies them to any object or array.
    let members = members(keywords, budget)?;
    let elements = elements(keywords, budget)?;
    let mut bound = by_type(keywords.get("type"), members, elements)?;
    if let Some(options) = keywords.get("enum") {
        let options = options.as_array()?;
        let deepest = options.iter().try_fold(0, |deepest, option| {
            Some(literal_depth(option, budget)?.max(deepest))
        })?;
        bound = bound.min(Bound::Depth(deepest));
    }
    if let Some(literal) = keywords.get("const") {
        bound = bound.min(Bound::Depth(literal_depth(literal, budget)?));
    }
    Some(bound)
}

/// The bound on an accepted object's members' nesting: `properties` for the declared ones,
/// `additionalProperties` for the rest (absent: anything).
fn members(keywords: &Map<String, Value>, budget: usize) -> Option<Bound> {
    let mut bound = match keywords.get("additionalProperties") {
        None => Bound::Unbounded,
        Some(schema) => analyse(schema, budget)?,
    };
    if let Some(properties) = keywords.get("properties") {
        for schema in properties.as_object()?.values() {
            bound = bound.max(analyse(schema, budget)?);
        }
    }
    Some(bound)
}

/// The bound on an accepted array's elements' nesting: `prefixItems` for the first ones, `items`
/// for the rest (absent: anything). Draft-4 tuple `items` (an array) is not modelled.
fn elements(keywords: &Map<String, Value>, budget: usize) -> Option<Bound> {
    let mut bound = match keywords.get("items") {
        None => Bound::Unbounded,
        Some(schema @ (Value::Bool(_) | Value::Object(_))) => analyse(schema, budget)?,
        Some(_) => return None,
    };
    if let Some(prefix) = keywords.get("prefixItems") {
        for schema in prefix.as_array()? {
            bound = bound.max(analyse(schema, budget)?);
        }
    }
    Some(bound)
}

/// The bound `type` sets: a scalar type nests 0 deep, an object or array one more than its
/// members or elements; without `type`, any of them.
fn by_type(types: Option<&Value>, members: Bound, elements: Bound) -> Option<Bound> {
    let one = |name: &Value| -> Option<Bound> {
        match name.as_str()? {
            "null" | "boolean" | "integer" | "number" | "string" => Some(Bound::Depth(0)),
            "object" => Some(members.deeper()),
            "array" => Some(elements.deeper()),
            _ => None,
        }
    };
    match types {
        None => Some(members.deeper().max(elements.deeper())),
        Some(Value::Array(names)) if !names.is_empty() => names
            .iter()
            .try_fold(Bound::Depth(0), |bound, name| Some(bound.max(one(name)?))),
        Some(name @ Value::String(_)) => one(name),
        Some(_) => None,
    }
}

/// How deep a literal of `enum` or `const` nests, if within `budget`: comparing a value with it
/// descends no deeper than the literal.
fn literal_depth(literal: &Value, budget: usize) -> Option<usize> {
    let children: Box<dyn Iterator<Item = &Value>> = match literal {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return Some(0),
    };
    let budget = budget.checked_sub(1)?;
    children
        .map(|child| literal_depth(child, budget))
        .try_fold(0, |deepest, depth| Some(deepest.max(depth?)))
        .map(|deepest| deepest + 1)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn flat_object_schemas_are_bounded_by_their_members() {
        let calculator = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": false
        });
        assert_eq!(accepted_depth(&calculator, 64), Some(1));
        let nested = json!({
            "type": "object",
            "properties": {"list": {"type": "array", "items": {"type": "string"}}},
            "additionalProperties": false
        });
        assert_eq!(accepted_depth(&nested, 64), Some(2));
        assert_eq!(accepted_depth(&nested, 1), None, "deeper than the limit");
        let tuple = json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "array", "items": false}], "items": false});
        assert_eq!(accepted_depth(&tuple, 64), Some(2));
    }

    #[test]
    fn open_members_and_elements_are_unbounded() {
        for schema in [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "additionalProperties": {}}),
            json!({"type": "array"}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
            json!({"type": ["string", "object"], "additionalProperties": {"type": "object"}}),
            json!({}),
            json!(true),
        ] {
            assert_eq!(accepted_depth(&schema, 64), None, "{schema}");
        }
    }

    #[test]
    fn keywords_not_modelled_make_the_schema_unbounded() {
        for schema in [
            json!({"type": "string", "$ref": "#/x"}),
            json!({"type": "string", "allOf": [{"type": "string"}]}),
            json!({"type": "string", "anyOf": [{"type": "string"}]}),
            json!({"type": "string", "oneOf": [{"type": "string"}]}),
            json!({"type": "string", "not": {"type": "object"}}),
            json!({"type": "string", "if": {}, "then": {}}),
            json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}, "additionalProperties": false}),
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
            json!({"type": "array", "items": {"type": "string"}, "contains": {"type": "string"}}),
            json!({"type": "array", "items": [{"type": "string"}]}),
            json!({"type": "object", "additionalProperties": false, "propertyNames": {"pattern": "^a"}}),
            json!({"type": "object", "additionalProperties": false, "unevaluatedProperties": false}),
            json!({"type": "object", "additionalProperties": false, "dependentSchemas": {}}),
            json!({"type": "string", "x-vendor": 1}),
            json!({"type": "tuple"}),
            json!({"type": 3}),
            json!({"type": []}),
            json!({"type": "object", "properties": [], "additionalProperties": false}),
            json!({"type": "string", "enum": "a"}),
        ] {
            assert_eq!(accepted_depth(&schema, 64), None, "{schema}");
        }
    }

    #[test]
    fn only_root_dialects_whose_keywords_are_modelled_are_analysed() {
        let object = |dialect: Value| json!({"$schema": dialect, "type": "object", "additionalProperties": {"const": 1}});
        for dialect in MODELLED_DIALECTS {
            assert_eq!(
                accepted_depth(&object(json!(dialect)), 64),
                Some(1),
                "{dialect}"
            );
        }
        for dialect in [
            json!("http://json-schema.org/draft-04/schema#"),
            json!("http://json-schema.org/draft-03/schema#"),
            json!("urn:m"),
            json!("https://json-schema.org/draft/2020-12/schema#x"),
            json!(7),
        ] {
            assert_eq!(
                accepted_depth(&object(dialect.clone()), 64),
                None,
                "{dialect}"
            );
        }
        // Below the root, `$schema` switches that subschema's draft: never analysed.
        let nested = json!({"type": "object", "additionalProperties": false, "properties": {
            "a": {"$schema": "https://json-schema.org/draft/2020-12/schema", "const": 1}}});
        assert_eq!(accepted_depth(&nested, 64), None);
        // Embedded resources could define a meta-schema.
        for key in ["$defs", "definitions"] {
            let embedded = json!({"type": "string", key: {"m": {"$id": "urn:m"}}});
            assert_eq!(accepted_depth(&embedded, 64), None, "{key}");
        }
    }

    #[test]
    fn literals_bound_what_they_accept() {
        assert_eq!(
            accepted_depth(&json!({"enum": ["a", 1, null]}), 64),
            Some(0)
        );
        assert_eq!(
            accepted_depth(&json!({"enum": [[1], {"a": [2]}]}), 64),
            Some(2)
        );
        assert_eq!(
            accepted_depth(&json!({"const": {"a": {"b": 1}}}), 64),
            Some(2)
        );
        // The literal is the tighter bound of the two.
        assert_eq!(
            accepted_depth(
                &json!({"type": "object", "additionalProperties": false, "const": {}}),
                64
            ),
            Some(1)
        );
        assert_eq!(
            accepted_depth(
                &json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}, "const": []}),
                64
            ),
            Some(1)
        );
        assert_eq!(accepted_depth(&json!({"const": [[[1]]]}), 2), None);
    }

    #[test]
    fn false_accepts_nothing_and_scalars_nest_zero_deep() {
        assert_eq!(accepted_depth(&json!(false), 64), Some(0));
        assert_eq!(
            accepted_depth(&json!({"type": ["string", "null"]}), 64),
            Some(0)
        );
        assert_eq!(
            accepted_depth(
                &json!({"type": ["object", "array"], "additionalProperties": false, "items": false}),
                64
            ),
            Some(1)
        );
        assert_eq!(
            accepted_depth(
                &json!({"type": "string", "properties": {"a": {"$ref": "#"}}}),
                64
            ),
            None
        );
    }

    #[test]
    fn bounds_are_compared_with_the_limit() {
        let mut schema = json!({"type": "string"});
        for _ in 0..10 {
            schema = json!({"type": "object", "properties": {"a": schema}, "additionalProperties": false});
        }
        assert_eq!(accepted_depth(&schema, 64), Some(10));
        assert_eq!(accepted_depth(&schema, 10), Some(10));
        assert_eq!(accepted_depth(&schema, 9), None);
        // Past the analysis budget: unanalysed, whatever the limit.
        let mut deep = json!({"type": "string"});
        for _ in 0..super::super::MAX_SCHEMA_DEPTH {
            deep = json!({"type": "array", "items": deep});
        }
        assert_eq!(accepted_depth(&deep, usize::MAX), None);
        let mut literal = json!(1);
        for _ in 0..super::super::MAX_SCHEMA_DEPTH {
            literal = json!([literal]);
        }
        assert_eq!(accepted_depth(&json!({"const": literal}), usize::MAX), None);
    }
}

#[cfg(test)]
mod order_tests;
