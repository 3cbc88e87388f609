//! A JSON document returned as text, read leaf by leaf as it is parsed: a tool that answers with
//! `json.dumps` or `JSON.stringify` shows the model the same values as one answering with
//! structured content, and they are read the same way — without building the document, so a
//! large one costs no more memory than its deepest path and its longest string.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One leaf of a JSON document.
pub(crate) enum Leaf<'a> {
    /// An object's key.
    Key(&'a str),
    /// A string.
    Text(&'a str),
    /// A number, written as serde_json writes it (as structured content's numbers are read).
    Number(String),
}

/// Calls `on` with each leaf of the JSON objects and arrays `text` holds, in order; whether any
/// was read: those [`ending_leaves`] reads, then those [`inside_leaves`] reads before them (as
/// `values/documents.rs` reads a text's own spelling; the tests read through it).
#[cfg(test)]
pub(crate) fn each_leaf(text: &str, on: &mut dyn FnMut(Leaf<'_>)) -> bool {
    let (ending, before) = ending_leaves(text, on);
    let mut budget = retry_budget(text.len());
    let inside = text.as_bytes().contains(&b'"') && inside_leaves(&text[..before], &mut budget, on);
    ending || inside
}

/// Calls `on` with each leaf of the document `text` ends with, as tools and APIs write one:
/// after a label, a byte order mark or an anti-XSSI prefix (`Result: {…}`, `)]}'`), inside a
/// Markdown code fence that ends the text, one document a line (JSON lines). Strict JSON (RFC
/// 8259, as serde_json reads it): a trailing comma or a number past a double's range ends the
/// reading where it stands. Whether any leaf was read, and where the text before the document
/// read ends (the text's length unless one was read whole to its end): other documents may
/// stand there, inside other text.
pub(crate) fn ending_leaves(text: &str, on: &mut dyn FnMut(Leaf<'_>)) -> (bool, usize) {
    // Most texts end in no `}` or `]`: nothing is searched for in them.
    let Some(body) = closed(text) else {
        return (false, text.len());
    };
    // From each of the first brackets, as a label may hold some (`2024-05-01 [info] {…}`),
    // until a reading reads anything.
    let mut read_any = false;
    for (start, _) in body.match_indices(['{', '[']).take(MOST_STARTS) {
        let mut read = false;
        let whole = parse(&body[start..], &mut |leaf| {
            read = true;
            on(leaf);
        });
        if whole {
            return (true, start);
        }
        // Read in part: what follows is JSON lines, or no JSON (read line by line below).
        if read {
            read_any = true;
            break;
        }
    }
    // One document a line (JSON lines). A line the reading above read is read again: its values
    // are one value each, and a document a string of it holds is read once (see `values.rs`).
    if body.contains('\n') {
        for line in body.lines() {
            if let Some(document) = closed(line).and_then(from_first_bracket) {
                read_any |= parse(document, on);
            }
        }
    }
    (read_any, text.len())
}

/// Calls `on` with each leaf of the documents inside other text — a fenced block a question
/// follows, a document and a footer, `Result: {…} (cached)` — each read where it parses whole
/// from a bracket and holds a string (a citation `[1]` or a list of numbers in prose reads
/// nothing), the text after it searched on; whether any leaf was read. What does not parse
/// whole is read from its next bracket on (`["a", {…} x`, an open quote before a document), as
/// long as the bytes such attempts parse stay within `budget` (see [`retry_budget`], which the
/// caller shares among the texts of one reading: a result's strings and their decodings); then
/// from where it stopped parsing, so the reading stays linear in the text. A document holding a
/// string holds a quote: a caller may look only in texts holding one.
pub(crate) fn inside_leaves(text: &str, budget: &mut usize, on: &mut dyn FnMut(Leaf<'_>)) -> bool {
    let bytes = text.as_bytes();
    let mut read_any = false;
    let mut from = 0;
    while let Some(found) = bytes[from..]
        .iter()
        .position(|&byte| byte == b'{' || byte == b'[')
    {
        let start = from + found;
        let rest = &text[start..];
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<IgnoredAny>();
        from = match stream.next() {
            Some(Ok(IgnoredAny)) => {
                let document = &rest[..stream.byte_offset()];
                if document.contains('"') {
                    let mut read = false;
                    parse(document, &mut |leaf| {
                        read = true;
                        on(leaf);
                    });
                    read_any |= read;
                }
                start + document.len().max(1)
            }
            Some(Err(error)) => {
                let stopped = stopped_at(rest, &error);
                if stopped <= *budget {
                    *budget -= stopped;
                    start + 1
                } else {
                    start + stopped.max(1)
                }
            }
            // `rest` starts with a bracket: a value or an error.
            None => break,
        };
    }
    read_any
}

/// How many bytes the attempts [`inside_leaves`] makes again after one that failed may parse,
/// for a reading of texts of `length` bytes in all: twice the texts and 64 KiB.
pub(crate) fn retry_budget(length: usize) -> usize {
    length.saturating_mul(2).saturating_add(64 * 1024)
}

/// The byte of `text` where parsing it stopped with `error` (serde_json says where as a line
/// and a column of bytes): the byte it could not take, or the one before.
fn stopped_at(text: &str, error: &serde_json::Error) -> usize {
    let line_start = if error.line() <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(error.line() - 2)
            .map_or(text.len(), |(at, _)| at + 1)
    };
    (line_start + error.column().saturating_sub(1)).min(text.len())
}

/// How many of a text's first brackets a document is looked for from.
const MOST_STARTS: usize = 4;

/// Whether `text` may end with a JSON document as [`ending_leaves`] reads one.
pub(crate) fn may_end_with_document(text: &str) -> bool {
    closed(text).and_then(from_first_bracket).is_some()
}

/// `text` without trailing white space, a code fence's closing and a closing quote (a document
/// written as a JSON string: `json.dumps` twice), if it then ends as an object or an array does.
fn closed(text: &str) -> Option<&str> {
    let text = text.trim_ascii_end();
    let text = text.strip_suffix("```").unwrap_or(text).trim_ascii_end();
    let text = text.strip_suffix('"').unwrap_or(text);
    matches!(text.as_bytes().last(), Some(b'}' | b']')).then_some(text)
}

/// `text` from its first `{` or `[`.
fn from_first_bracket(text: &str) -> Option<&str> {
    text.find(['{', '[']).map(|start| &text[start..])
}

/// Reads `document`, calling `on` with each leaf; whether it is one document, whole.
fn parse(document: &str, on: &mut dyn FnMut(Leaf<'_>)) -> bool {
    let mut parser = serde_json::Deserializer::from_str(document);
    Leaves(on).deserialize(&mut parser).is_ok() && parser.end().is_ok()
}

/// Reads one value, calling the function with each of its leaves.
struct Leaves<'f, 'g>(&'f mut (dyn FnMut(Leaf<'_>) + 'g));

impl<'de> DeserializeSeed<'de> for Leaves<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Leaves<'_, '_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, number: u64) -> Result<(), E> {
        (self.0)(Leaf::Number(number.to_string()));
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, number: i64) -> Result<(), E> {
        (self.0)(Leaf::Number(number.to_string()));
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, number: f64) -> Result<(), E> {
        if let Some(number) = serde_json::Number::from_f64(number) {
            (self.0)(Leaf::Number(super::extract::number_text(&number)));
        }
        Ok(())
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        (self.0)(Leaf::Text(text));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(Leaves(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            (self.0)(Leaf::Key(&key));
            map.next_value_seed(Leaves(&mut *self.0))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(text: &str) -> (bool, Vec<String>) {
        let mut read = Vec::new();
        let whole = each_leaf(text, &mut |leaf| {
            read.push(match leaf {
                Leaf::Key(key) => format!("key {key}"),
                Leaf::Text(text) => format!("text {text}"),
                Leaf::Number(number) => format!("number {number}"),
            });
        });
        (whole, read)
    }

    #[test]
    fn each_key_string_and_number_is_read_in_order_unescaped() {
        let (whole, read) = leaves(
            r#" {"hotel": "H\u00f4tel\nAurora", "stars": 3, "rate": 1.5, "big": -7,
                 "tags": ["a", null, true, {"k\u0041": 1e21}]} "#,
        );
        assert!(whole);
        assert_eq!(
            read,
            [
                "key hotel",
                "text Hôtel\nAurora",
                "key stars",
                "number 3",
                "key rate",
                "number 1.5",
                "key big",
                "number -7",
                "key tags",
                "text a",
                "key kA",
                "number 1e+21",
            ]
        );
    }

    #[test]
    fn a_document_is_read_as_tools_write_it() {
        let document = r#"{"hotel": "Mallory Inn"}"#;
        for text in [
            format!("Result: {document}"),
            format!("\u{feff}{document}"),
            format!(")]}}'\n{document}"),
            format!("```json\n{document}\n```\n"),
            format!("{{\"hotel\": \"Lux\"}}\n{document}"),
        ] {
            let (_, read) = leaves(&text);
            assert!(
                read.ends_with(&["key hotel".to_owned(), "text Mallory Inn".to_owned()]),
                "{text:?}: {read:?}"
            );
        }
    }

    #[test]
    fn a_text_that_is_no_json_document_is_read_up_to_where_it_stops_being_one() {
        assert_eq!(leaves("plain text"), (false, Vec::new()));
        assert_eq!(leaves("\"a string\""), (false, Vec::new()));
        assert_eq!(leaves("{ not json }"), (false, Vec::new()));
        assert!(!may_end_with_document("plain text") && may_end_with_document("see [1, 2]"));
        assert!(!may_end_with_document("{\"a\": 1} and more"));
        // Four starts that read nothing, then a line that is a document (no quote anywhere).
        assert_eq!(
            leaves("[a [b [c [d\n[7]"),
            (true, vec!["number 7".to_owned()])
        );
        assert_eq!(
            leaves(r#"["a", "b" "c"]"#),
            (true, vec!["text a".to_owned(), "text b".to_owned()])
        );
        // A trailing comma ends the reading there; JSON lines are read a line at a time.
        assert_eq!(
            leaves(r#"{"a": [1,], "b": 2}"#),
            (true, vec!["key a".to_owned(), "number 1".to_owned()])
        );
        let (whole, read) = leaves("{\"a\": 1}\n{\"b\": 2}");
        assert!(whole);
        assert!(read.ends_with(&[
            "key a".to_owned(),
            "number 1".to_owned(),
            "key b".to_owned(),
            "number 2".to_owned()
        ]));
        // Nested past serde_json's depth: not a document, no panic, no overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(!leaves(&deep).0);
    }

    #[test]
    fn a_document_inside_other_text_is_read_whole_and_the_text_after_it_searched_on() {
        let hotel = ["key hotel".to_owned(), "text Mallory Inn".to_owned()];
        for text in [
            "```json\n{\"hotel\": \"Mallory Inn\"}\n```\nShall I book it?",
            "Result: {\"hotel\": \"Mallory Inn\"} (cached). Anything else?",
            "Found:\n[\n  {\"hotel\":\n     \"Mallory Inn\"}\n]\n-- 1 result",
            // Prose with brackets and a broken document before it, over lines.
            "See [1], [2, 3] and [citation needed].\n{\"a\": [1,\n }\n{\"hotel\": \"Mallory Inn\"}.",
        ] {
            let (read_any, read) = leaves(text);
            assert!(read_any, "{text:?}");
            assert_eq!(read, hotel, "{text:?}");
        }
        // Two blocks and text between and after them; JSON lines and a footer.
        let (_, read) = leaves(
            "First:\n```json\n{\"a\": \"x\"}\n```\nthen [\"y\", 2]\n```\nend\n{\"b\": 1}\n-- end",
        );
        assert_eq!(
            read,
            ["key a", "text x", "text y", "number 2", "key b", "number 1"]
        );
    }

    #[test]
    fn a_document_is_read_inside_what_failed_to_parse_and_after_a_document_the_text_ends_with() {
        let doc = r#"{"hotel": "Mallory Inn", "stars": 3}"#;
        for text in [
            // A value that never closes, an open quote, an array broken over lines.
            format!(r#"["a", {doc} x"#),
            format!(r#"Note [" {doc} end"#),
            format!("Scores: [1, 2,\n{doc}\nand more"),
            format!("Meta {{\"a\": {doc} x"),
            format!("{}{doc} text", "[ ".repeat(200)),
            // The text ends as a document does, and its first bracket reads a citation.
            format!("See [1]. Result: {doc} (cached) [2]"),
            format!("{{\"id\": 1}}\n{doc} (cached)\n-- 2 results [end]"),
        ] {
            let (_, read) = leaves(&text);
            assert!(
                read.contains(&"text Mallory Inn".to_owned()),
                "{text:?}: {read:?}"
            );
        }
    }

    #[test]
    fn what_is_parsed_again_after_a_failure_is_bounded() {
        // Twice the text and 64 KiB.
        assert_eq!(retry_budget(1000), 2000 + 65_536);
        assert_eq!(retry_budget(usize::MAX), usize::MAX);
        // Each `[` opens a value that fails only at the text's end: parsed again from each
        // while the budget lasts, then passed over; a document after them is still read.
        let text = format!("{}{}", "[".repeat(100), "1,".repeat(50_000));
        assert!(!leaves(&format!("\"{text}")).0);
        let (_, read) = leaves(&format!("{text}] {{\"hotel\": \"Mallory Inn\"}} end"));
        assert!(read.contains(&"text Mallory Inn".to_owned()));
    }

    #[test]
    fn brackets_in_prose_read_nothing() {
        // Citations, lists of numbers, Markdown links, a Python list: no string in JSON.
        for text in [
            "As shown [1] and [2, 3], \"quoted\" [citation needed].",
            "a [link](https://a.example) and ['py', 'list'] \"x\"",
            "{ not json } \"x\" [",
        ] {
            assert_eq!(leaves(text), (false, Vec::new()), "{text:?}");
        }
        // Deeper than serde_json reads, opened and never closed, with a quote: no panic.
        for text in [
            format!("\"{}\"", "[".repeat(100_000)),
            format!("{}1{}\"", "[".repeat(100), ",1".repeat(100_000)),
        ] {
            assert!(!leaves(&text).0);
        }
    }

    #[test]
    fn where_parsing_stopped_is_the_byte_it_could_not_take() {
        for (text, bad) in [
            ("[1, x]", 4),
            ("[1,\n  2,\n  x]", 11),
            ("{\"a\" 1}", 5),
            ("[1 [2]]", 3),
            ("[1,\r\n x]", 6),
            ("[\"é\", x]", 7),
            // At the end: the last byte.
            ("[1,", 2),
        ] {
            let error = serde_json::from_str::<IgnoredAny>(text).unwrap_err();
            assert_eq!(stopped_at(text, &error), bad, "{text:?}");
        }
    }
}
