//! The texts of a result as result rules read them: where they stand (every string, number and
//! object key of structured content, a content block's fields but its own type and payload, the
//! result's `_meta`), the JSON of those parts read whole as well, and the second spelling the
//! detectors read each one in.

use serde_json::Value;

use crate::contract::{BlockFields, ToolResult};
use crate::text::references;

/// Calls `change` on every text of `result`: its text, every string, number and object key of its
/// structured content, of its content blocks (but a block's own type, media type and payload)
/// and of its `_meta`. A number or key that `change` rewrites (redacts) becomes the text written.
pub(super) fn for_each_text(result: &mut ToolResult, change: &mut dyn FnMut(&mut String)) {
    change(&mut result.content);
    if let Some(value) = &mut result.structured {
        in_value(value, change);
    }
    if let Some(blocks) = &mut result.blocks {
        for block in &mut blocks.content {
            in_block(block, change, None);
        }
        if let Some(meta) = &mut blocks.meta {
            in_map(meta, change);
        }
    }
}

/// A content block's texts: every field's but its own type and its payload (see
/// [`BlockFields`]), and so for the `resource` it embeds.
fn in_block(block: &mut Value, change: &mut dyn FnMut(&mut String), fields: Option<BlockFields>) {
    let Value::Object(map) = block else {
        return in_value(block, change);
    };
    let fields = fields.unwrap_or_else(|| BlockFields::of(map));
    for (key, item) in map.iter_mut() {
        if fields.is_payload(key) {
            continue;
        }
        if fields.embeds(key) {
            in_block(item, change, Some(BlockFields::Embedded));
        } else {
            in_value(item, change);
        }
    }
}

fn in_value(value: &mut Value, change: &mut dyn FnMut(&mut String)) {
    match value {
        Value::String(text) => change(text),
        Value::Number(number) => {
            let written = number.to_string();
            let mut text = written.clone();
            change(&mut text);
            if text != written {
                *value = Value::String(text);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| in_value(item, change)),
        Value::Object(map) => in_map(map, change),
        Value::Bool(_) | Value::Null => {}
    }
}

/// A map's keys and values; a key `change` rewrites is replaced (a second key rewritten alike
/// gets a number after it, so no value is lost).
fn in_map(map: &mut serde_json::Map<String, Value>, change: &mut dyn FnMut(&mut String)) {
    let mut renamed = Vec::new();
    for (key, item) in map.iter_mut() {
        let mut text = key.clone();
        change(&mut text);
        if text != *key {
            renamed.push((key.clone(), text));
        }
        in_value(item, change);
    }
    // The number each rewritten name tries next: every key redacted alike becomes the same
    // marker, and trying again from `(2)` for each made thousands of keys quadratic (16,000 took
    // 18 s). A name found taken stays taken (keys are only added here), so none is skipped.
    let mut next_number: std::collections::HashMap<String, usize> =
        std::collections::HashMap::new();
    for (key, base) in renamed {
        let Some(item) = map.remove(&key) else {
            continue;
        };
        let number = next_number.entry(base.clone()).or_insert(1);
        let numbered = |number: usize| match number {
            1 => base.clone(),
            n => format!("{base} ({n})"),
        };
        let mut name = numbered(*number);
        // The name taken here is found taken by the next key rewritten alike, which moves on.
        while map.contains_key(&name) {
            *number += 1;
            name = numbered(*number);
        }
        map.insert(name, item);
    }
}

/// `text` as the detectors read it a second time, when that differs: beside it, each decoding of
/// its character references and escapes (`4111&nbsp;1111`, `sk-\u0061bc`: see [`references`]);
/// invisible characters removed, with the `unicode` feature NFKC (fullwidth digits and letters,
/// no-break and other spaces), and each run of spaces one space — a card number, IBAN or token a reader sees whole
/// in a spelling the detectors' patterns do not take. Line breaks and tabs are kept (they are
/// white space, not invisible): joining lines or a table's columns would join numbers a list or
/// a table keeps apart, and glue a value to the word before it.
pub(super) fn respelled(text: &str) -> Option<String> {
    // Decoded as often as it decodes (a document carried in a string of another), each round
    // read: a later one may hide what an earlier one shows (`\\4111` is `\4111`, then octal
    // `\411`). The text and its rounds are read as lines apart, which no detector reads across.
    let rounds = references::decodings(text);
    let plain = rounds.is_empty() && text.is_ascii() && !text.contains("  ");
    if plain {
        return None;
    }
    let read = if rounds.is_empty() {
        std::borrow::Cow::Borrowed(text)
    } else {
        let mut all = text.to_owned();
        for round in &rounds {
            all.push('\n');
            all.push_str(round);
        }
        std::borrow::Cow::Owned(all)
    };
    let visible: String = read
        .chars()
        .filter(|c| !crate::text::is_invisible(*c) || c.is_whitespace())
        .collect();
    #[cfg(feature = "unicode")]
    let visible: String = {
        use unicode_normalization::UnicodeNormalization as _;
        visible.nfkc().collect()
    };
    let mut out = String::with_capacity(visible.len());
    let mut in_space = false;
    for c in visible.chars() {
        if c == ' ' {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    (out != text).then_some(out)
}

/// The JSON of each part of `result` whose texts [`for_each_text`] reads one by one, read whole
/// as well: its structured content, each content block but a text block's text alone (its
/// payload left out, as [`for_each_text`] leaves it), and its `_meta`. A rule matching beyond one string
/// — a pattern over a key and its value (`"password":\s*"…"`) — holds there too; a result's text
/// is read whole already. Each is written compact and spaced (`, ` and `: `), so a pattern
/// written either way (`"password":"`, `"password": "`) holds.
pub(super) fn whole_texts(result: &ToolResult) -> Vec<String> {
    let mut wholes = Vec::new();
    if let Some(value @ (Value::Object(_) | Value::Array(_))) = &result.structured {
        push_both(value, &mut wholes);
    }
    if let Some(blocks) = &result.blocks {
        for block in &blocks.content {
            let Value::Object(map) = block else { continue };
            let texts = without_payload(map, None);
            // A text block's text alone is read whole in the result's text already; any other
            // field, even alone (`{"type": "note", "password": "…"}`: a second attack), is not.
            let text_alone = texts.len() == 1 && texts.get("text").is_some_and(Value::is_string);
            if !texts.is_empty() && !text_alone {
                push_both(&Value::Object(texts), &mut wholes);
            }
        }
        if let Some(meta) = blocks.meta.as_ref().filter(|meta| !meta.is_empty()) {
            push_both(&Value::Object(meta.clone()), &mut wholes);
        }
    }
    wholes
}

/// `value` as JSON, compact and spaced (`, ` and `: `, as Python writes it).
fn push_both(value: &Value, wholes: &mut Vec<String>) {
    wholes.push(value.to_string());
    wholes.push(crate::spaced_json::spaced_json(value));
}

/// A content block's fields but its own type and payload, and so for the `resource` it embeds.
fn without_payload(
    map: &serde_json::Map<String, Value>,
    fields: Option<BlockFields>,
) -> serde_json::Map<String, Value> {
    let fields = fields.unwrap_or_else(|| BlockFields::of(map));
    map.iter()
        .filter(|(key, _)| !fields.is_payload(key))
        .map(|(key, item)| match item {
            Value::Object(embedded) if fields.embeds(key) => (
                key.clone(),
                Value::Object(without_payload(embedded, Some(BlockFields::Embedded))),
            ),
            _ => (key.clone(), item.clone()),
        })
        .collect()
}

/// Where a result carries its structured content again as JSON text — its text (a
/// [`structured`](crate::ToolDefinition::structured) handler's), a text block's (an MCP tool's
/// `json.dumps` beside it) — each as written, compact or indented. Redacted string by string,
/// such a text no longer read as JSON (`{"card":[redacted by result rule "r"]}`), nor as the
/// structured content it mirrors (a key renamed in one only): it is written again from the
/// redacted structured content instead (an independent attack).
#[derive(Debug, Default)]
pub(super) struct Mirrors {
    content: Option<bool>,
    blocks: Vec<(usize, bool)>,
    /// Whether the result's text is its blocks' texts, one a line: written again from them
    /// when a block is.
    content_joins_blocks: bool,
}

impl Mirrors {
    /// The texts of `result` that are its structured content as JSON, and whether each is
    /// indented.
    pub(super) fn of(result: &ToolResult) -> Self {
        let Some(structured) = &result.structured else {
            return Self::default();
        };
        let mirror = |text: &str| {
            let looks_like_json = text.trim_start().starts_with(['{', '[']);
            (looks_like_json && serde_json::from_str::<Value>(text).is_ok_and(|v| v == *structured))
                .then(|| text.contains('\n'))
        };
        let blocks = result.blocks.as_ref().map_or_else(Vec::new, |blocks| {
            blocks
                .content
                .iter()
                .enumerate()
                .filter(|(_, block)| block.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|(index, block)| {
                    let text = block.get("text")?.as_str()?;
                    Some((index, mirror(text)?))
                })
                .collect()
        });
        let content_joins_blocks = !blocks.is_empty()
            && result.blocks.as_ref().is_some_and(|all| {
                crate::definition::text_of(&all.content, None) == result.content
            });
        Self {
            content: mirror(&result.content),
            blocks,
            content_joins_blocks,
        }
    }

    /// Writes each mirroring text of `result` that no longer reads as its structured content
    /// again from it, as it was written (indented or not); one that still does is left as the
    /// tool wrote it (its keys' order, its indent), and so is a result whose structured content
    /// is gone.
    pub(super) fn write_again(&self, result: &mut ToolResult) {
        let Some(structured) = &result.structured else {
            return;
        };
        let written = |text: &str, indented: bool| {
            if serde_json::from_str::<Value>(text).is_ok_and(|value| value == *structured) {
                None
            } else if indented {
                Some(indented_within(structured, 2 * text.len() + 1024))
            } else {
                Some(structured.to_string())
            }
        };
        if let Some(text) = self
            .content
            .and_then(|indented| written(&result.content, indented))
        {
            result.content = text;
        }
        if let Some(blocks) = &mut result.blocks {
            let mut any = false;
            for &(index, indented) in &self.blocks {
                if let Some(Value::Object(block)) = blocks.content.get_mut(index)
                    && let Some(text) = block
                        .get("text")
                        .and_then(Value::as_str)
                        .and_then(|text| written(text, indented))
                {
                    block.insert("text".to_owned(), Value::String(text));
                    any = true;
                }
            }
            // Two blocks and more: the text, their texts joined, follows the block written again.
            if any && self.content_joins_blocks && self.content.is_none() {
                result.content = crate::definition::text_of(&blocks.content, None);
            }
        }
    }
}

/// `value` indented, as a tool writes it for people, unless that passes `most` bytes: then
/// compact. Indenting costs the depth at every line (1 MB nested 60 deep is 62 MB indented),
/// and a mirror redacted is never longer than what it mirrored by more than its markers.
fn indented_within(value: &Value, most: usize) -> String {
    let mut capped = Capped {
        written: Vec::new(),
        most,
    };
    if serde_json::to_writer_pretty(&mut capped, value).is_ok() {
        String::from_utf8(capped.written).unwrap_or_else(|_| value.to_string())
    } else {
        value.to_string()
    }
}

/// A writer that refuses to pass `most` bytes.
struct Capped {
    written: Vec<u8>,
    most: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.written.len() + bytes.len() > self.most {
            return Err(std::io::Error::other("past the bound"));
        }
        self.written.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
