//! Calls built for the analysis: a base call valid against the tool's schema, one argument set at
//! a pointer, and what the schema says a pointer's value may be.

use serde_json::{Map, Value};

use crate::rules::condition::unescape_token;

/// The types a value at one pointer may have, as the schema declares them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Types {
    pub(super) string: bool,
    pub(super) number: bool,
    /// Only integers (the schema's `integer`, without `number`).
    pub(super) integer_only: bool,
    pub(super) boolean: bool,
    pub(super) null: bool,
    pub(super) array: bool,
    pub(super) object: bool,
    /// The field may be left out.
    pub(super) absent: bool,
    /// A number's bounds in the schema (`minimum` / `exclusiveMinimum`): the value and whether
    /// it is excluded. Numbers outside make no valid call, so no class is built there.
    pub(super) minimum: Option<(f64, bool)>,
    /// As `minimum`, for `maximum` / `exclusiveMaximum`.
    pub(super) maximum: Option<(f64, bool)>,
}

impl Types {
    pub(super) const ANY: Self = Self {
        string: true,
        number: true,
        integer_only: false,
        boolean: true,
        null: true,
        array: true,
        object: true,
        absent: true,
        minimum: None,
        maximum: None,
    };

    /// Whether the schema's bounds admit `x`.
    pub(super) fn admits(&self, x: f64) -> bool {
        let above = self
            .minimum
            .is_none_or(|(min, exclusive)| if exclusive { x > min } else { x >= min });
        let below = self
            .maximum
            .is_none_or(|(max, exclusive)| if exclusive { x < max } else { x <= max });
        above && below
    }
}

/// A bound of the schema: the tighter of `inclusive` and `exclusive` (draft 2020-12 spells both
/// as numbers), and whether it is excluded.
fn bound(sub: &Value, inclusive: &str, exclusive: &str, lower: bool) -> Option<(f64, bool)> {
    let inclusive = sub
        .get(inclusive)
        .and_then(Value::as_f64)
        .map(|x| (x, false));
    let exclusive = sub
        .get(exclusive)
        .and_then(Value::as_f64)
        .map(|x| (x, true));
    match (inclusive, exclusive) {
        (Some(a), Some(b)) => {
            let tighter = if lower { b.0 >= a.0 } else { b.0 <= a.0 };
            Some(if tighter { b } else { a })
        }
        (one, other) => one.or(other),
    }
}

/// The tokens of a JSON Pointer, unescaped.
fn tokens(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer.split('/').skip(1).map(unescape_token)
}

/// The subschema a pointer's value must satisfy whenever it is present, when the schema says so
/// plainly (a chain of `properties`), and whether every field on the way is required (so the
/// value is always there); `None` when it takes more reading (combinators, `$ref`, lists), and
/// then nothing is assumed about the value.
fn subschema<'s>(schema: &'s Value, pointer: &str) -> Option<(&'s Value, bool)> {
    let mut here = schema;
    let mut required = true;
    for token in tokens(pointer) {
        if has_combinators(here) || (may_be_a_list(here) && token.parse::<usize>().is_ok()) {
            // A pointer that may pick a list's element reads more than `properties` says.
            return None;
        }
        required &= here
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|list| list.iter().any(|name| name.as_str() == Some(&token)));
        here = here.get("properties")?.get(&token)?;
    }
    (!has_combinators(here)).then_some((here, required))
}

/// Whether a value this schema accepts may be a list (its `type` allows one, or it says nothing
/// of type and describes elements).
fn may_be_a_list(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(one)) => one == "array",
        Some(Value::Array(many)) => many.iter().any(|t| t == "array"),
        _ => true,
    }
}

/// Whether the schema declares a draft before 2019-09 (`$schema`): its keywords (`const`, the
/// exclusive bounds, `items`) mean other things there, and the analysis reads 2019-09 and 2020-12.
pub(super) fn older_draft(schema: &Value) -> Option<&str> {
    let declared = schema.get("$schema")?.as_str()?;
    (!(declared.contains("2020-12") || declared.contains("2019-09"))).then_some(declared)
}

fn has_combinators(schema: &Value) -> bool {
    [
        "$ref",
        "allOf",
        "not",
        "if",
        "dependentSchemas",
        "dependencies",
        "dependentRequired",
    ]
    .iter()
    .any(|key| schema.get(key).is_some())
        || ["anyOf", "oneOf"].iter().any(|key| {
            schema
                .get(key)
                .is_some_and(|list| !required_alternatives(list))
        })
}

/// Whether `alternatives` (an `anyOf` / `oneOf`) only say which keys are required — `{"required":
/// ["command"]}` or `["argv"]` — so the properties keep the types `properties` gives them.
fn required_alternatives(alternatives: &Value) -> bool {
    alternatives.as_array().is_some_and(|list| {
        !list.is_empty()
            && list.iter().all(|alternative| {
                alternative
                    .as_object()
                    .is_some_and(|object| object.keys().all(|key| key == "required"))
            })
    })
}

/// The keys alternative `index` of a schema's required-key `anyOf` / `oneOf` requires.
fn alternative_keys(schema: &Value, index: usize) -> Vec<&str> {
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(key))
        .filter(|list| required_alternatives(list))
        .filter_map(|list| list.as_array()?.get(index)?.get("required")?.as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// How many base calls are worth building: one per required-key alternative of the schema's
/// `anyOf` / `oneOf`, and with `minProperties`, one starting at each declared property (0: one
/// base will do).
pub(super) fn alternatives(schema: &Value) -> usize {
    let keyed = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(key))
        .filter(|list| required_alternatives(list))
        .filter_map(Value::as_array)
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    let filled = if schema.get("minProperties").is_some() {
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map_or(0, serde_json::Map::len)
            .min(32)
    } else {
        0
    };
    keyed.max(filled)
}

/// Whether the schema declares `pointer` plainly (a chain of `properties`): then a value there is
/// valid or not whatever the other fields hold.
pub(super) fn declared_plainly(schema: &Value, pointer: &str) -> bool {
    subschema(schema, pointer).is_some()
}

/// The schema of a list's elements at `pointer`, when the schema says so plainly.
pub(super) fn items_at<'s>(schema: &'s Value, pointer: &str) -> Option<&'s Value> {
    subschema(schema, pointer)?
        .0
        .get("items")
        .filter(|items| items.is_object())
}

/// The `pattern` a string at `pointer` must match, when the schema says so plainly.
pub(super) fn pattern_at<'s>(schema: &'s Value, pointer: &str) -> Option<&'s str> {
    subschema(schema, pointer)?.0.get("pattern")?.as_str()
}

/// What the schema allows at `pointer`: the types a value may have, whether it may be left out,
/// and the values it may have when the schema lists them (`enum`, `const`).
pub(super) fn types_at(schema: &Value, pointer: &str) -> (Types, Option<Vec<Value>>) {
    let Some((sub, required)) = subschema(schema, pointer) else {
        return (Types::ANY, None);
    };
    let mut types = Types::ANY;
    types.absent = !required;
    types.minimum = bound(sub, "minimum", "exclusiveMinimum", true);
    types.maximum = bound(sub, "maximum", "exclusiveMaximum", false);
    if let Some(constant) = sub.get("const") {
        return (types, Some(vec![constant.clone()]));
    }
    let enumerated = sub.get("enum").and_then(Value::as_array).cloned();
    let declared: Option<Vec<&str>> = match sub.get("type") {
        Some(Value::String(one)) => Some(vec![one.as_str()]),
        Some(Value::Array(many)) => many.iter().map(Value::as_str).collect(),
        _ => None,
    };
    if let Some(declared) = declared {
        let has = |name: &str| declared.contains(&name);
        types.string = has("string");
        types.number = has("number") || has("integer");
        types.integer_only = has("integer") && !has("number");
        types.boolean = has("boolean");
        types.null = has("null");
        types.array = has("array");
        types.object = has("object");
    }
    (types, enumerated)
}

/// A simple value the schema accepts, for the fields no rule reads: required properties filled
/// in, each with its `const`, first `enum` value, or a plain value of its type. The caller
/// validates it; a schema this cannot satisfy leaves the analysis unable to build a call.
pub(super) fn base_value(schema: &Value, depth: usize) -> Value {
    base_value_with(schema, depth, 0)
}

/// [`base_value`], with the keys of required-key alternative `alternative` filled in at the top.
pub(super) fn base_value_with(schema: &Value, depth: usize, alternative: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    let declared = match schema.get("type") {
        Some(Value::String(one)) => one.as_str(),
        Some(Value::Array(many)) => many.first().and_then(Value::as_str).unwrap_or("object"),
        _ if schema.get("properties").is_some() => "object",
        _ => "object",
    };
    match declared {
        "string" => {
            let length = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1);
            let plain = "z".repeat(usize::try_from(length.clamp(1, 64)).unwrap_or(1));
            // A string its pattern accepts, within its lengths where one of those built is.
            let fits = |text: &String| {
                let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
                chars >= length
                    && schema
                        .get("maxLength")
                        .and_then(Value::as_u64)
                        .is_none_or(|max| chars <= max)
            };
            let built = schema
                .get("pattern")
                .and_then(Value::as_str)
                .map(|pattern| super::pattern::matching(pattern, &plain))
                .unwrap_or_default();
            // The plain matches first (an anchored pattern refuses the two holding `plain`).
            let (wrapped, plain_matches) = built.split_at(built.len().min(2));
            Value::from(
                plain_matches
                    .iter()
                    .chain(wrapped)
                    .find(|text| fits(text))
                    .cloned()
                    .unwrap_or(plain),
            )
        }
        "integer" | "number" => base_number(schema, declared == "integer"),
        "boolean" => Value::Bool(false),
        "null" => Value::Null,
        "array" => {
            let count = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema
                .get("items")
                .map_or(Value::Null, |items| base_value(items, depth + 1));
            Value::Array(vec![item; usize::try_from(count.min(8)).unwrap_or(0)])
        }
        _ => {
            let mut object = Map::new();
            let properties = schema.get("properties").and_then(Value::as_object);
            let fill = |object: &mut Map<String, Value>, name: &str| {
                if object.contains_key(name) {
                    return;
                }
                let property = properties.and_then(|p| p.get(name));
                let value = property.map_or(Value::from("z"), |p| base_value(p, depth + 1));
                object.insert(name.to_owned(), value);
            };
            let required = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str);
            for name in required.chain(alternative_keys(schema, alternative)) {
                fill(&mut object, name);
            }
            // `minProperties`: the declared properties next, in order, until there are enough.
            let least = schema
                .get("minProperties")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            // Alternative `n` starts at the n-th property: a class that leaves one out is valid
            // on a base that filled another.
            let names: Vec<&String> = properties.into_iter().flat_map(Map::keys).collect();
            let start = if names.is_empty() {
                0
            } else {
                alternative % names.len()
            };
            for name in names.iter().cycle().skip(start).take(names.len()) {
                if u64::try_from(object.len()).unwrap_or(u64::MAX) >= least {
                    break;
                }
                fill(&mut object, name);
            }
            Value::Object(object)
        }
    }
}

/// A number the schema's bounds admit: 0 when it can, else next to a bound, else between them.
fn base_number(schema: &Value, integer: bool) -> Value {
    let bounds = Types {
        minimum: bound(schema, "minimum", "exclusiveMinimum", true),
        maximum: bound(schema, "maximum", "exclusiveMaximum", false),
        ..Types::ANY
    };
    let step = |x: f64, up: bool, exclusive: bool| match (integer, exclusive, up) {
        (true, true, true) => x.floor() + 1.0,
        (true, true, false) => x.ceil() - 1.0,
        (true, false, true) => x.ceil(),
        (true, false, false) => x.floor(),
        (false, true, true) => x + 1.0,
        (false, true, false) => x - 1.0,
        (false, false, _) => x,
    };
    let mut tries = vec![0.0];
    tries.extend(
        bounds
            .minimum
            .map(|(x, exclusive)| step(x, true, exclusive)),
    );
    tries.extend(
        bounds
            .maximum
            .map(|(x, exclusive)| step(x, false, exclusive)),
    );
    if let (Some((low, _)), Some((high, _))) = (bounds.minimum, bounds.maximum) {
        let middle = low + (high - low) / 2.0;
        tries.push(if integer { middle.floor() } else { middle });
    }
    tries
        .into_iter()
        .find(|x| x.is_finite() && bounds.admits(*x))
        .and_then(number_value)
        .unwrap_or(Value::from(0))
}

/// `x` as JSON: an integer when it is integral below 2^53 (exact), else a float; `None` for a
/// number JSON cannot hold (infinite, NaN).
pub(super) fn number_value(x: f64) -> Option<Value> {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        #[expect(clippy::cast_possible_truncation, reason = "integral and below 2^53")]
        Some(Value::from(x as i64))
    } else {
        serde_json::Number::from_f64(x).map(Value::Number)
    }
}

/// The value at `pointer` in `arguments`, `None` when absent.
pub(super) fn get<'v>(arguments: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut here = arguments;
    for token in tokens(pointer) {
        here = here.as_object()?.get(&token)?;
    }
    Some(here)
}

/// `arguments` with the value at `pointer` set to `value` (objects made on the way), or removed
/// (`None`). `false` when the pointer runs through a value that is not an object.
pub(super) fn set(arguments: &mut Value, pointer: &str, value: Option<&Value>) -> bool {
    let tokens: Vec<String> = tokens(pointer).collect();
    let Some((last, parents)) = tokens.split_last() else {
        if let Some(value) = value {
            *arguments = value.clone();
        }
        return value.is_some();
    };
    let mut here = arguments;
    for token in parents {
        let Value::Object(map) = here else {
            return false;
        };
        if value.is_none() && !map.contains_key(token) {
            return true;
        }
        here = map
            .entry(token.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = here else {
        return false;
    };
    match value {
        Some(value) => {
            map.insert(last.clone(), value.clone());
        }
        None => {
            map.remove(last);
        }
    }
    true
}
