//! How deep a value nests, and dropping one nested too deep for the stack: walks that run on
//! every call, so they are allocation-free and bounded.

use serde_json::Value;

use super::MAX_ARGUMENT_DEPTH;

/// Whether `value` nests more than `limit` arrays or objects deep (counted as `serde_json`'s
/// parser counts them). Recursive, but never deeper than `limit + 1` frames, and allocation-free:
/// it runs on every call.
// Inlined, so the top level (most arguments are one flat object of scalars) walks without a
// call; only a nested array or object calls `nested_exceeds_depth`.
#[inline(always)]
pub(crate) fn exceeds_depth(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => {
            limit == 0 || items.iter().any(|item| nested_exceeds(item, limit - 1))
        }
        Value::Object(map) => {
            limit == 0 || map.values().any(|item| nested_exceeds(item, limit - 1))
        }
        _ => false,
    }
}

/// [`exceeds_depth`] for a member: a scalar is answered here, without a call.
#[inline(always)]
fn nested_exceeds(value: &Value, limit: usize) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_)) && nested_exceeds_depth(value, limit)
}

/// [`exceeds_depth`] below the top level, out of line (it recurses).
#[inline(never)]
fn nested_exceeds_depth(value: &Value, limit: usize) -> bool {
    exceeds_depth(value, limit)
}

/// Drops a value without recursion, so a value nested far deeper than the stack allows (one a
/// program built in code; parsed JSON is limited to 128 levels) cannot overflow it when freed.
pub(crate) fn drop_deep(value: Value) {
    // Shallow values, nearly all of them, are dropped the ordinary way.
    if !exceeds_depth(&value, MAX_ARGUMENT_DEPTH) {
        return;
    }
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, item)| item)),
            _ => {}
        }
    }
}
