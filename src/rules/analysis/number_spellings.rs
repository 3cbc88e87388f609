//! A number the validator takes in two spellings the conditions tell apart: past 2^53 an integer
//! and the float of the same value are one to the schema (`enum`, `const`), but `range` judges the
//! integer exactly and cannot judge the float (it may have been rounded). The analysis tries both
//! (an independent attack found an enum's `2^53` hiding its float spelling, and the exact
//! integers past a bound of `2^53 - 1` never tried).

use serde_json::Value;

/// 2^53: below it every integer is an f64, so bounds compare exactly.
pub(super) const EXACT: f64 = 9_007_199_254_740_992.0;

/// `value` with each number at or past 2^53 written the other way, where that is the same number
/// to the validator: an integer as a float, an integral float as an integer — `None` if it holds
/// none. The conditions tell the two apart (a float that large may have been rounded, and
/// `range` does not judge it; an integer it compares exactly).
pub(super) fn spelled_otherwise(value: &Value) -> Option<Value> {
    match value {
        Value::Number(number) => {
            if let Some(float) = number.as_f64().filter(|_| number.is_f64()) {
                let integral = float.fract() == 0.0 && float.abs() >= 9.0e15;
                #[expect(
                    clippy::cast_possible_truncation,
                    reason = "integral, checked in range"
                )]
                let twin = if integral && (0.0..18_446_744_073_709_551_616.0).contains(&float) {
                    Some(Value::from(float as u64))
                } else if integral && (-9_223_372_036_854_775_808.0..0.0).contains(&float) {
                    Some(Value::from(float as i64))
                } else {
                    None
                };
                return twin;
            }
            let exact = |float: f64| float.abs() >= EXACT;
            #[expect(clippy::cast_precision_loss, reason = "kept only where it is exact")]
            let (float, same) = match (number.as_u64(), number.as_i64()) {
                (Some(unsigned), _) => (
                    unsigned as f64,
                    unsigned < u64::MAX && (unsigned as f64) as u64 == unsigned,
                ),
                (None, Some(signed)) => (signed as f64, (signed as f64) as i64 == signed),
                _ => return None,
            };
            (same && exact(float))
                .then(|| serde_json::Number::from_f64(float).map(Value::Number))
                .flatten()
        }
        Value::Array(items) => {
            let mut changed = false;
            let items = items
                .iter()
                .map(|item| {
                    spelled_otherwise(item).map_or_else(
                        || item.clone(),
                        |twin| {
                            changed = true;
                            twin
                        },
                    )
                })
                .collect();
            changed.then_some(Value::Array(items))
        }
        Value::Object(members) => {
            let mut changed = false;
            let members = members
                .iter()
                .map(|(key, member)| {
                    let member = spelled_otherwise(member).map_or_else(
                        || member.clone(),
                        |twin| {
                            changed = true;
                            twin
                        },
                    );
                    (key.clone(), member)
                })
                .collect();
            changed.then_some(Value::Object(members))
        }
        _ => None,
    }
}
