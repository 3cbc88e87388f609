//! Canonical JSON and its digest: one byte string per meaning.

use std::fmt::Write as _;

use serde_json::{Number, Value};
use sha2::{Digest as _, Sha256};

/// Writes `value` in canonical form: object keys sorted by their UTF-16 code units' byte order
/// (plain byte order of UTF-8 here), no whitespace, and each number in one spelling — an integral
/// value as a plain integer (`1.0`, `1e0` and `1` all become `1`), any other as the shortest
/// round-tripping decimal. Strings are escaped as `serde_json` escapes them.
///
/// Walks without recursion so a value nested deeper than the stack allows cannot overflow it.
pub(crate) fn canonical_json<'a>(value: &'a Value) -> String {
    enum Step<'a> {
        Value(&'a Value),
        Text(&'static str),
        Key(&'a str),
    }
    let mut out = String::with_capacity(64);
    let mut stack: Vec<Step<'a>> = Vec::with_capacity(16);
    stack.push(Step::Value(value));
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(text) => out.push_str(text),
            Step::Key(key) => {
                push_string(&mut out, key);
                out.push(':');
            }
            Step::Value(Value::Null) => out.push_str("null"),
            Step::Value(Value::Bool(flag)) => out.push_str(if *flag { "true" } else { "false" }),
            Step::Value(Value::Number(number)) => push_number(&mut out, number),
            Step::Value(Value::String(text)) => push_string(&mut out, text),
            Step::Value(Value::Array(items)) => {
                out.push('[');
                stack.push(Step::Text("]"));
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if index > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                out.push('{');
                stack.push(Step::Text("}"));
                let mut push_entry = |index: usize, key: &'a String, item: &'a Value| {
                    stack.push(Step::Value(item));
                    stack.push(Step::Key(key));
                    if index > 0 {
                        stack.push(Step::Text(","));
                    }
                };
                // serde_json's default map is a BTreeMap, already in key order; sort only when a
                // feature elsewhere in the build switched it to insertion order.
                if map.keys().is_sorted() {
                    for (index, (key, item)) in map.iter().enumerate().rev() {
                        push_entry(index, key, item);
                    }
                } else {
                    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    for (index, (key, item)) in entries.into_iter().enumerate().rev() {
                        push_entry(index, key, item);
                    }
                }
            }
        }
    }
    out
}

/// `sha256:` followed by the hex SHA-256 of the canonical form of `value`.
pub(crate) fn digest(value: &Value) -> String {
    hex_digest(&Sha256::digest(canonical_json(value).as_bytes()))
}

/// The digest an approval binds to: `sha256:` over the tool name, the definition's digest and
/// the canonical arguments, joined by NUL bytes (which none of them can contain unescaped).
/// Same meaning → same digest; any change of tool, definition or argument value → another.
pub(crate) fn call_digest(tool: &str, definition_digest: &str, arguments: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(definition_digest.as_bytes());
    hasher.update([0]);
    hasher.update(canonical_json(arguments).as_bytes());
    hex_digest(&hasher.finalize())
}

/// `sha256:` and the hash in lowercase hex. (Formatting each byte with `write!` cost more than
/// the hash itself: about 4,000 instructions per digest.)
pub(crate) fn hex_digest(hash: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(7 + 2 * hash.len());
    text.push_str("sha256:");
    for byte in hash {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    text
}

fn push_string(out: &mut String, text: &str) {
    // Serializing a &str cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

fn push_number(out: &mut String, number: &Number) {
    if let Some(integer) = number.as_i64() {
        let _ = write!(out, "{integer}");
    } else if let Some(integer) = number.as_u64() {
        let _ = write!(out, "{integer}");
    } else if let Some(float) = number.as_f64() {
        // 2^63 is where i64 ends; integral floats inside it print as integers.
        if float.fract() == 0.0 && float.abs() < 9.223_372_036_854_776e18 {
            let _ = write!(out, "{}", float as i64);
        } else {
            // `{}` on f64 is the shortest decimal that reads back as the same float.
            let _ = write!(out, "{float:e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_whitespace_dropped() {
        let value: Value =
            serde_json::from_str(r#"{ "b": 1, "a": {"d": [1, 2], "c": null} }"#).unwrap();
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"c":null,"d":[1,2]},"b":1}"#
        );
    }

    #[test]
    fn one_spelling_per_number() {
        for spelling in ["1", "1.0", "1e0", "10e-1", "0.1e1"] {
            let value: Value = serde_json::from_str(spelling).unwrap();
            assert_eq!(canonical_json(&value), "1", "{spelling}");
        }
        let half: Value = serde_json::from_str("0.5").unwrap();
        let half_again: Value = serde_json::from_str("5e-1").unwrap();
        assert_eq!(canonical_json(&half), canonical_json(&half_again));
        assert_ne!(canonical_json(&json!(1)), canonical_json(&json!(2)));
        assert_eq!(canonical_json(&json!(u64::MAX)), u64::MAX.to_string());
        assert_eq!(canonical_json(&json!(-0.0)), "0");
    }

    #[test]
    fn same_meaning_same_digest_any_change_differs() {
        let a: Value = serde_json::from_str(r#"{"x": 1.0, "y": "é"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"y":"\u00e9","x":1}"#).unwrap();
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&json!({"x": 1, "y": "e"})));
        assert_ne!(digest(&json!({"x": "1"})), digest(&json!({"x": 1})));
        assert!(digest(&a).starts_with("sha256:"));
        assert_eq!(digest(&a).len(), 7 + 64);
    }

    #[test]
    fn deep_values_do_not_overflow() {
        let mut value = json!(0);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        assert_eq!(canonical_json(&value).len(), 200_001);
        crate::definition::drop_deep(value);
    }
}
