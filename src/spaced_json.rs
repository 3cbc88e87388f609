//! JSON written as Python's `json.dumps` writes it by default — `, ` between items and `: `
//! after a key, on one line — for rules that read JSON whole: a pattern written over a key and
//! its value the way a person types it (`"password": "…"`) holds on it, as one written without
//! spaces holds on the compact form. Linear in the value, at any depth (an indented form
//! grew by the depth at every line: 1 MB nested 60 deep took 2.8 s and 372 MB to read; an
//! independent attack).

use std::io;

use serde::Serialize as _;
use serde_json::Value;

/// `value` written with `, ` and `: `, on one line.
pub(crate) fn spaced_json(value: &Value) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Spaced);
    // Writing a `Value` into memory cannot fail; an empty text would read as nothing.
    if value.serialize(&mut serializer).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// The formatter: compact, with a space after each `,` and `:`.
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        comma(writer, first)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        comma(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `, ` before every item but the first.
fn comma<W: ?Sized + io::Write>(writer: &mut W, first: bool) -> io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::spaced_json;

    #[test]
    fn json_is_written_with_a_space_after_each_comma_and_colon_on_one_line() {
        let value = json!({"a": [1, {"b": "x, y: z"}], "c": null});
        assert_eq!(
            spaced_json(&value),
            r#"{"a": [1, {"b": "x, y: z"}], "c": null}"#
        );
        assert_eq!(spaced_json(&json!([])), "[]");
        assert_eq!(spaced_json(&json!({})), "{}");
        // Linear at depth: 60 levels add their brackets, nothing per line.
        let mut deep = json!([0, 0]);
        for _ in 0..60 {
            deep = json!([deep]);
        }
        assert_eq!(spaced_json(&deep).len(), 2 * 60 + "[0, 0]".len());
    }
}
