//! Exact comparison of JSON numbers and values, for `equals`, `one_of` and `range`.
//!
//! `serde_json` (without `arbitrary_precision`) keeps integers that fit 64 bits exactly and parses
//! every other number into an `f64`. A float is exact for what it holds, but one whose magnitude is
//! 2^53 or more may stand for a different integer the model wrote (`9007199254740993` written as
//! `9007199254740993.0`, or any integer beyond 64 bits): such a number cannot be compared exactly,
//! so the comparison is undetermined and restrictive rules apply.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// 2^53: from here on, an `f64` no longer holds every integer, so a float this large may have been
/// rounded when it was parsed.
const EXACT_FLOAT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// A number as compared: an integer held exactly, or a float known to be exactly what was written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Exact {
    Integer(i128),
    Float(f64),
}

fn exact(number: &Number) -> Option<Exact> {
    if let Some(integer) = number.as_i64() {
        return Some(Exact::Integer(i128::from(integer)));
    }
    if let Some(integer) = number.as_u64() {
        return Some(Exact::Integer(i128::from(integer)));
    }
    let float = number.as_f64()?;
    (float.is_finite() && float.abs() < EXACT_FLOAT_LIMIT).then_some(Exact::Float(float))
}

/// Whether a number can be compared exactly: an integer within 64 bits, or a float below 2^53 in
/// magnitude. Used at load to refuse bounds and values that could never be compared exactly.
pub(crate) fn is_exact(number: &Number) -> bool {
    exact(number).is_some()
}

/// Exact comparison; `None` when either number may have been rounded when parsed.
pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    Some(match (exact(a)?, exact(b)?) {
        (Exact::Integer(x), Exact::Integer(y)) => x.cmp(&y),
        (Exact::Float(x), Exact::Float(y)) => x.partial_cmp(&y)?,
        (Exact::Integer(x), Exact::Float(y)) => compare_integer_float(x, y),
        (Exact::Float(x), Exact::Integer(y)) => compare_integer_float(y, x).reverse(),
    })
}

/// `integer` against a float below 2^53 in magnitude, without rounding either: the float's floor and
/// ceiling are integers an `i128` holds exactly.
fn compare_integer_float(integer: i128, float: f64) -> Ordering {
    // Exact conversions: |float| < 2^53, so floor and ceil are integers below 2^53.
    #[expect(
        clippy::cast_possible_truncation,
        reason = "floor and ceil of a float below 2^53 in magnitude are exact integers"
    )]
    let (floor, ceil) = (float.floor() as i128, float.ceil() as i128);
    if integer < floor {
        Ordering::Less
    } else if integer > ceil {
        Ordering::Greater
    } else if floor == ceil {
        Ordering::Equal
    } else if integer == floor {
        // float has a fraction: floor < float < ceil.
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Equality where numbers compare by exact value (`1` equals `1.0`), recursively. `None` when a
/// number could not be compared exactly and nothing else already tells the values apart.
pub(crate) fn json_equal(a: &Value, b: &Value) -> Option<bool> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Some(compare_numbers(x, y)? == Ordering::Equal),
        (Value::Array(xs), Value::Array(ys)) => {
            if xs.len() != ys.len() {
                return Some(false);
            }
            all_equal(xs.iter().zip(ys))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            if xs.len() != ys.len() {
                return Some(false);
            }
            let mut pairs = Vec::with_capacity(xs.len());
            for (key, x) in xs {
                match ys.get(key) {
                    Some(y) => pairs.push((x, y)),
                    None => return Some(false),
                }
            }
            all_equal(pairs.into_iter())
        }
        _ => Some(a == b),
    }
}

/// `Some(false)` if any pair differs, else `None` if any pair is undetermined, else `Some(true)`.
fn all_equal<'a>(pairs: impl Iterator<Item = (&'a Value, &'a Value)>) -> Option<bool> {
    let mut determined = true;
    for (x, y) in pairs {
        match json_equal(x, y) {
            Some(false) => return Some(false),
            None => determined = false,
            Some(true) => {}
        }
    }
    determined.then_some(true)
}

/// Every number inside `value` can be compared exactly (see [`is_exact`]).
pub(crate) fn numbers_are_exact(value: &Value) -> bool {
    match value {
        Value::Number(number) => is_exact(number),
        Value::Array(items) => items.iter().all(numbers_are_exact),
        Value::Object(map) => map.values().all(numbers_are_exact),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn number(text: &str) -> Number {
        serde_json::from_str(text).expect("a JSON number")
    }

    fn cmp(a: &str, b: &str) -> Option<Ordering> {
        compare_numbers(&number(a), &number(b))
    }

    #[test]
    fn integers_compare_exactly_across_i64_and_u64() {
        assert_eq!(cmp("-1", "18446744073709551615"), Some(Ordering::Less));
        assert_eq!(
            cmp("18446744073709551615", "18446744073709551614"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp("-9223372036854775808", "-9223372036854775807"),
            Some(Ordering::Less)
        );
        assert_eq!(
            cmp("9007199254740993", "9007199254740992"),
            Some(Ordering::Greater)
        );
    }

    #[test]
    fn floats_below_two_to_the_53_compare_exactly_with_integers() {
        assert_eq!(cmp("1.0", "1"), Some(Ordering::Equal));
        assert_eq!(cmp("1e3", "1000"), Some(Ordering::Equal));
        assert_eq!(cmp("1.5", "1"), Some(Ordering::Greater));
        assert_eq!(cmp("1.5", "2"), Some(Ordering::Less));
        assert_eq!(cmp("-1.5", "-1"), Some(Ordering::Less));
        assert_eq!(cmp("-1.5", "-2"), Some(Ordering::Greater));
        assert_eq!(cmp("0.5", "0"), Some(Ordering::Greater));
        assert_eq!(cmp("-0.0", "0"), Some(Ordering::Equal));
        // The largest exact float against its integer neighbours.
        assert_eq!(
            cmp("9007199254740991.0", "9007199254740991"),
            Some(Ordering::Equal)
        );
        assert_eq!(
            cmp("9007199254740991.0", "9007199254740992"),
            Some(Ordering::Less)
        );
        // An integer that no float near it holds, compared with such a float: never rounded.
        assert_eq!(
            cmp("4503599627370495.5", "4503599627370495"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp("4503599627370495.5", "4503599627370496"),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn floats_that_may_have_been_rounded_are_undetermined() {
        for (a, b) in [
            ("9007199254740992.0", "9007199254740993"), // 2^53 as a float
            ("9007199254740993.0", "9007199254740993"), // parsed as 2^53
            ("18446744073709551616", "18446744073709551615"), // 2^64: beyond u64
            ("18446744073709551617", "1"),
            ("-9223372036854775809", "0"), // beyond i64
            ("1e300", "1"),
            ("-1e20", "0"),
            ("123456789012345678901234567890", "1"),
        ] {
            assert_eq!(cmp(a, b), None, "{a} vs {b}");
            assert_eq!(cmp(b, a), None, "{b} vs {a}");
            assert!(!is_exact(&number(a)), "{a}");
        }
        assert!(is_exact(&number("9007199254740991.0")));
        assert!(is_exact(&number("18446744073709551615")));
    }

    #[test]
    fn json_equal_is_three_valued_and_recursive() {
        assert_eq!(
            json_equal(&json!([1, {"a": 2.0}]), &json!([1.0, {"a": 2}])),
            Some(true)
        );
        assert_eq!(json_equal(&json!([1, 2]), &json!([1, 3])), Some(false));
        assert_eq!(json_equal(&json!([1]), &json!([1, 2])), Some(false));
        assert_eq!(json_equal(&json!({"a": 1}), &json!({"b": 1})), Some(false));
        assert_eq!(
            json_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})),
            Some(false)
        );
        assert_eq!(json_equal(&json!("1"), &json!(1)), Some(false));
        let big: Value = serde_json::from_str("18446744073709551616").expect("number");
        assert_eq!(json_equal(&big, &json!(1)), None);
        assert_eq!(
            json_equal(&json!([big.clone(), 1]), &json!([5, 2])),
            Some(false)
        );
        assert_eq!(json_equal(&json!([big.clone(), 1]), &json!([5, 1])), None);
        assert_eq!(json_equal(&json!({"n": big}), &json!({"n": 5})), None);
    }
}
