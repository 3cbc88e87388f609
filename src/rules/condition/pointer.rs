//! JSON Pointers (RFC 6901) into the arguments: checked at load, split once, resolved per call.

use serde_json::Value;

/// A JSON Pointer split and unescaped once, at load, so resolving it per call allocates nothing
/// (`serde_json::Value::pointer` unescapes every token on every call).
#[derive(Debug)]
pub(crate) struct Pointer {
    tokens: Vec<(String, Option<usize>)>,
    // The pointer as the policy wrote it, from the top of the arguments (`/files/-/path` inside
    // `every`): named in a decision's reason when the value there cannot be judged.
    text: Box<str>,
}

impl Pointer {
    /// Splits a pointer whose syntax was already checked (`""` is the whole value).
    pub(crate) fn parse(pointer: &str) -> Self {
        let tokens = pointer
            .split('/')
            .skip(1)
            .map(|token| {
                let key = unescape(token);
                let index = array_index(&key);
                (key, index)
            })
            .collect();
        Self {
            tokens,
            text: pointer.into(),
        }
    }

    /// The same pointer, named `text` in reasons (its absolute form inside `every` / `some`).
    pub(crate) fn named(mut self, text: String) -> Self {
        self.text = text.into_boxed_str();
        self
    }

    /// The pointer as a reason names it.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn resolve<'a>(&self, mut value: &'a Value) -> Option<&'a Value> {
        for (key, index) in &self.tokens {
            value = match value {
                Value::Object(map) => map.get(key)?,
                Value::Array(items) => items.get((*index)?)?,
                _ => return None,
            };
        }
        Some(value)
    }
}

/// The array index a token names: RFC 6901 allows only `0` or ASCII digits without a leading zero
/// (so `+0`, `00` and `0x1` name no element, here and in the schema lookup alike).
pub(crate) fn array_index(token: &str) -> Option<usize> {
    let canonical = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    if canonical { token.parse().ok() } else { None }
}

/// One token with `~1` → `/` and `~0` → `~`, in that order (RFC 6901).
pub(crate) fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Checks a pointer as written in a policy. `element` allows `""` (the list element itself, inside
/// `every` / `some`); elsewhere a pointer must name a field.
pub(crate) fn check_pointer_syntax(pointer: &str, element: bool) -> Result<(), String> {
    if pointer.is_empty() && element {
        return Ok(());
    }
    if !pointer.starts_with('/') {
        return Err(format!(
            "pointer {pointer:?} must start with '/' and name a field (\"\" would be the whole arguments)"
        ));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "pointer {pointer:?} has a '~' not followed by 0 or 1"
            ));
        }
    }
    if pointer.split('/').skip(1).any(|token| token == "-") {
        return Err(format!(
            "pointer {pointer:?} holds '-', which names no element: use every or some for lists"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_resolve_like_rfc_6901() {
        let value = json!({"a/b": {"m~n": [10, 20]}, "list": [1, 2], "01": "x", "~1": "t"});
        for (pointer, expected) in [
            ("/a~1b/m~0n/1", Some(json!(20))),
            ("/list/0", Some(json!(1))),
            ("/list/01", None),
            ("/list/+0", None),
            ("/list/00", None),
            ("/list/2", None),
            ("/list/-", None),
            ("/01", Some(json!("x"))),
            ("/~01", Some(json!("t"))),
            ("/missing", None),
            ("/list/0/deeper", None),
            ("", Some(value.clone())),
        ] {
            assert_eq!(
                Pointer::parse(pointer).resolve(&value).cloned(),
                expected,
                "{pointer}"
            );
            assert_eq!(
                value.pointer(pointer).cloned(),
                expected,
                "serde_json agrees on {pointer}"
            );
        }
    }

    #[test]
    fn pointer_syntax_is_checked() {
        assert!(check_pointer_syntax("/a~0b~1c", false).is_ok());
        assert!(check_pointer_syntax("", true).is_ok());
        for bad in ["", "a", "/a~", "/a~2", "/~x", "/list/-", "/-/a"] {
            assert!(check_pointer_syntax(bad, false).is_err(), "{bad:?}");
        }
    }
}
