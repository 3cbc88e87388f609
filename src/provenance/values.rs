//! The values a result or a person's request carries, and the counters they are kept in.

use serde_json::Value;

use super::extract::{self, Kind, Token};
use super::keyed::Digest;
use super::{MAX_APART_PER_RESULT, MAX_VALUES_PER_RESULT, ProvenanceKey};
use crate::contract::{BlockFields, Principal, ToolResult};
use crate::text::references;

mod documents;

/// Whose records: a keyed digest of the principal's id, or `-` for calls without one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scope(std::borrow::Cow<'static, str>);

impl Scope {
    pub(crate) fn of(principal: Option<&Principal>, key: &ProvenanceKey) -> Self {
        Self(
            principal.map_or(std::borrow::Cow::Borrowed("-"), |principal| {
                key.digest(&Token {
                    kind: Kind::Text,
                    canonical: format!("principal:{}", principal.id),
                })
                .into()
            }),
        )
    }

    /// The counter holding `token`'s digest under `key` as seen in `source` (`u`, `t`, `p` or a
    /// named source's name).
    pub(crate) fn bucket_of(&self, source: &str, key: &ProvenanceKey, token: &Token) -> String {
        self.bucket_of_digest(source, &key.digest_bytes(token))
    }

    /// The counter holding the digest `digest` as seen in `source`: built by hand, its hex
    /// written in place (`format!` cost ~10× as much, twice a value).
    pub(crate) fn bucket_of_digest(&self, source: &str, digest: &Digest) -> String {
        let mut bucket = self.bucket_prefix(source);
        crate::canonical::push_hex(&mut bucket, digest);
        bucket
    }

    /// What the name of each counter of `source` starts with: a digest's hex follows (see
    /// [`bucket_of_digest`](Self::bucket_of_digest)); written once for a result's hundred values.
    pub(crate) fn bucket_prefix(&self, source: &str) -> String {
        let mut prefix = String::with_capacity(8 + source.len() + self.0.len() + 32);
        for part in ["prov:", source, ":", &self.0, ":"] {
            prefix.push_str(part);
        }
        prefix
    }

    /// The scope as text: a digest of the principal's id, or `-`.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The counter marking this scope overflowed.
    pub(crate) fn overflow(&self) -> String {
        format!("prov:overflow:{}", self.0)
    }

    /// The counter of the values this scope recorded.
    pub(crate) fn count(&self) -> String {
        format!("prov:count:{}", self.0)
    }

    /// The counter of the values this scope recorded under a bound that overflows nothing
    /// ([`Bound::APART`]).
    pub(crate) fn count_apart(&self) -> String {
        format!("prov:count-apart:{}", self.0)
    }
}

/// How many values one recording keeps, and whether more marks the session overflowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    pub(crate) most: usize,
    pub(crate) overflows: bool,
    /// Whether these count against the session's bound of values, and a session too full for
    /// them is marked overflowed; else they are counted apart, to a bound of their own (so they
    /// never take the room of those that overflow it), and what does not fit is left
    /// unrecorded, counting as never seen.
    pub(crate) fills_overflow: bool,
}

impl Bound {
    /// A result's: past it, the session overflows.
    pub(crate) const RESULT: Self = Self {
        most: MAX_VALUES_PER_RESULT,
        overflows: true,
        fills_overflow: true,
    };
    /// A person's request's: past it, the rest is not named by the person.
    pub(crate) const PERSON: Self = Self {
        most: super::MAX_VALUES_PER_REQUEST,
        overflows: false,
        fills_overflow: true,
    };
    /// The values counted apart ([`Found::apart`]: the lines of a text of several lines, and
    /// what documents inside other text gave): [`MAX_APART_PER_RESULT`], and neither past them nor
    /// past the session's bound does the session overflow: what does not fit is as unseen as a
    /// sentence's words.
    pub(crate) const APART: Self = Self {
        most: MAX_APART_PER_RESULT,
        overflows: false,
        fills_overflow: false,
    };
}

/// The longest run of a person's words recorded as one value (a name of up to four words).
const MAX_NAME_WORDS: usize = 4;

/// The values `result` carried, a value read twice listed twice (the recorder tells them apart
/// by their digests, and past [`MAX_VALUES_PER_RESULT`] keeps the first in their order).
pub(crate) fn values_of_result(result: &ToolResult) -> Found {
    let mut out = Found::default();
    text_values(&result.content, &mut out);
    if let Some(structured) = &result.structured {
        leaf_values(structured, &mut out);
    }
    if let Some(blocks) = &result.blocks {
        for block in &blocks.content {
            block_values(block, &mut out, None);
        }
        // The result's `_meta` reaches the client with it.
        if let Some(meta) = &blocks.meta {
            map_values(meta, &mut out);
        }
    }
    out
}

/// The distinct values of a person's words: what a result's values are, and also each word
/// and each run of up to [`MAX_NAME_WORDS`] words (a person names `Bob`, `AZ405` or `Hotel
/// Aurora` in a sentence; a result names them in a field or a line of their own), and a word
/// said as a possessive without its `'s` (`Ana's` names `Ana`).
pub(crate) fn values_of_person(text: &str) -> Vec<Token> {
    // What was nested too deep to read is not named: the request names less, never more.
    let mut found = Found::default();
    text_values(text, &mut found);
    let mut cut = found.cut;
    let mut out = found.values;
    out.append(&mut found.further);
    out.append(&mut found.apart);
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    // A name said as a possessive (`Ana's`) names its owner too, as a directory spells it: a
    // plain text only (`evil.example's` names no link); other words are read below.
    for word in words
        .iter()
        .filter(|word| word.contains(['\'', '\u{2019}']))
    {
        if out.len() >= extract::MAX_VALUES_READ {
            cut = true;
            break;
        }
        if let Some(name) = super::lookups::name_of(word) {
            out.push(name);
        }
    }
    for (start, _) in words.iter().enumerate() {
        // A request of more words than values are read for names only the first (less).
        if out.len() >= extract::MAX_VALUES_READ {
            cut = true;
            break;
        }
        for length in 1..=MAX_NAME_WORDS.min(words.len() - start) {
            let run = &words[start..start + length];
            if run.iter().all(|word| !word.is_empty()) {
                let (token, reading) = extract::whole_reading(&run.join(" "));
                cut |= reading.is_cut();
                out.extend(token);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    // An IP address is named only as a link's host (see `an_ip_not_linked`).
    let linked = extract::linked_hosts(text);
    out.retain(|token| !extract::an_ip_not_linked(token, &linked));
    // Which kinds of value the person named (`if_person_named`) — money whenever the words
    // speak of it, read or not (`1.2k EUR`): a marker lost would make a rule laxer.
    let mut kinds: Vec<Kind> = out.iter().map(|token| token.kind).collect();
    if extract::mentions_money(text) {
        kinds.push(Kind::Amount);
    }
    // A request read cut names less, but may have named a value of any kind in what was not
    // read: every kind counts as named, so no rule it narrows turns off (an independent attack
    // turned a payee rule off with a pasted statement of 65,536 numbers before the payee).
    if cut {
        kinds.extend(Kind::NAMEABLE);
    }
    kinds.sort_unstable();
    kinds.dedup();
    let mut named: Vec<Token> = kinds
        .into_iter()
        .map(|kind| Token {
            kind: Kind::AnyOf,
            canonical: kind.tag().to_owned(),
        })
        .collect();
    // The request's bound keeps the front: the markers, then the values read from the text
    // (links, IBANs, amounts …), then words and runs of words, which a long request has many of.
    let (words, read): (Vec<Token>, Vec<Token>) =
        out.into_iter().partition(|token| token.kind == Kind::Text);
    named.extend(read);
    named.extend(words);
    named
}

/// What a result or a text was read for: its values, and whether a part of it nested links
/// deeper than they are read (its values then are not all it holds).
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The values read from the texts as they are written.
    pub(crate) values: Vec<Token>,
    /// The values only a further reading found — a text decoded, a JSON document returned as
    /// text read leaf by leaf — which the recorder bounds apart: a page whose every line holds
    /// `&nbsp;` reads each line twice, and would reach a result's bound at half its lines.
    pub(crate) further: Vec<Token>,
    /// The values counted apart: each short line of a text of several lines (a page, a file,
    /// a log) whole, and the values only the documents inside other text gave (`Result: {…}
    /// (cached)`, a page's script data). Read up to [`extract::MAX_VALUES_READ`] (lines past it
    /// cut the reading, as any value read does; documents' values past it stop theirs), they
    /// are kept as far as a result's bound goes, and the recorder overflows nothing for the rest, which are then as unseen as a
    /// sentence's words — a source file of 600 lines, a changelog, a page's embedded data (a
    /// Next.js page holds hundreds of strings) or a program's `row["a"]` would otherwise
    /// overflow the session of whoever read it. A line's links, addresses and other tokens are
    /// read as written all the same, and count against the result's bound.
    pub(crate) apart: Vec<Token>,
    pub(crate) cut: bool,
    /// Whether what is read now is read further (listed in `further`).
    reading_further: bool,
    /// Whether what is read now is read from documents inside other text (listed in `apart`).
    reading_inside: bool,
    /// The bytes of the texts looked in for JSON documents, and those parsed again in looking
    /// for documents inside other text: their budget is shared (see `values/documents.rs`).
    looked_in: usize,
    retried: usize,
    /// The lines counted apart (in `apart`, beside what documents inside other text gave): they
    /// count against [`extract::MAX_VALUES_READ`] with the values read as written.
    lines_apart: usize,
}

impl Found {
    /// Whether [`extract::MAX_VALUES_READ`] values were read (values, further readings' and
    /// lines counted apart): nothing more is, and the reading is cut — but for documents inside
    /// other text, whose reading only stops. (Lines counted apart once stopped rather than cut:
    /// a text of 65,536 lines `x` hid every value after it, a document's too.)
    fn full(&mut self) -> bool {
        if self.reading_inside {
            return self.apart_full();
        }
        let read = self.values.len() + self.further.len() + self.lines_apart;
        let full = read >= extract::MAX_VALUES_READ;
        self.cut |= full;
        full
    }

    /// Whether [`extract::MAX_VALUES_READ`] values were counted apart: no more are read, and
    /// nothing is cut.
    fn apart_full(&self) -> bool {
        self.apart.len() >= extract::MAX_VALUES_READ
    }

    /// Where what is read now is listed.
    fn list(&mut self) -> &mut Vec<Token> {
        if self.reading_inside {
            &mut self.apart
        } else if self.reading_further {
            &mut self.further
        } else {
            &mut self.values
        }
    }

    /// `read` as a further reading.
    fn further(&mut self, read: impl FnOnce(&mut Self)) {
        let was = std::mem::replace(&mut self.reading_further, true);
        read(self);
        self.reading_further = was;
    }

    /// `read` as a reading of documents inside other text: what it reads is listed in
    /// `apart`, and it cuts nothing (the text around them is read as text, whole or cut).
    fn inside(&mut self, read: impl FnOnce(&mut Self)) {
        let was = std::mem::replace(&mut self.reading_inside, true);
        let cut = self.cut;
        read(self);
        self.reading_inside = was;
        self.cut = cut;
    }
}

/// The values in a text as it is written and as its reader reads it: with its character
/// references and escapes decoded (`eve&#64;evil&#46;example`, `pay\nThanks`: see
/// [`references`]), and — a JSON document returned as text, as a tool that answers with
/// `json.dumps` or `JSON.stringify` does — each of its strings and numbers whole, as structured
/// content's are.
fn text_values(text: &str, found: &mut Found) {
    written_values(text, found);
    found.further(|found| {
        // Most texts hold nothing to decode: one pass over them finds so, and nothing is kept.
        let starts = references::starts(text);
        let rounds = if starts.references {
            references::decodings(text)
        } else {
            Vec::new()
        };
        for round in &rounds {
            written_values(round, found);
        }
        documents::read_documents(text, starts.quotes, &rounds, found);
    });
}

/// The values of each further spelling decoding `text` gives ([`references::decodings`]).
fn decoded_values(text: &str, found: &mut Found) {
    for decoded in references::decodings(text) {
        written_values(&decoded, found);
    }
}

/// The values in a text as it is written: its tokens, and each short line whole — counted
/// apart ([`Found::apart`]) when the text has several lines and the line is no token of its own.
fn written_values(text: &str, found: &mut Found) {
    if text.is_empty() || found.full() {
        return;
    }
    // Room for a value every 64 bytes (a mail or a page holds fewer), so a long result's
    // values are not moved again and again as the list grows.
    found.list().reserve(text.len() / 64);
    let reading = extract::tokens(text, found.list());
    found.cut |= reading.is_cut();
    const MAX: usize = extract::MAX_WHOLE_VALUE_CHARS;
    // A text of one line is one value, as a field is; the lines of a longer one are counted
    // apart: a source file or a changelog of 600 short lines overflowed the session.
    let several = several_lines(text);
    for line in extract::lines(text) {
        // A character is 1 to 4 bytes: most lines are decided by their length alone, and an
        // ASCII line longer than the most has as many characters as bytes.
        let short = line.len() <= MAX
            || (line.len() <= 4 * MAX && !line.is_ascii() && line.chars().count() <= MAX);
        if short {
            let (token, reading) = extract::whole_reading(line);
            found.cut |= reading.is_cut();
            match token {
                Some(token) if several && token.kind == Kind::Text => {
                    if found.full() {
                        return;
                    }
                    // In a document inside other text, a line is one of its values, which
                    // only stop (`full` above).
                    if !found.reading_inside {
                        found.lines_apart += 1;
                    }
                    found.apart.push(token);
                }
                Some(token) => {
                    // Both lists count: a further reading's values are values read too.
                    if found.full() {
                        return;
                    }
                    found.list().push(token);
                }
                None => {}
            }
        }
    }
}

/// Whether `text` has two lines ([`extract::lines`]) that are not blank: a name with an empty
/// line before or after it (`"Evil Hotel\n\n"`) is one line, as the name alone is.
fn several_lines(text: &str) -> bool {
    extract::lines(text)
        .filter(|line| !line.trim().is_empty())
        .nth(1)
        .is_some()
}

/// The values of a content block: each of its fields' but its own type and its payload (see
/// [`BlockFields`]), and so for the `resource` it embeds.
fn block_values(block: &Value, out: &mut Found, fields: Option<BlockFields>) {
    let Value::Object(map) = block else {
        return leaf_values(block, out);
    };
    let fields = fields.unwrap_or_else(|| BlockFields::of(map));
    for (key, item) in map {
        if fields.is_payload(key) {
            continue;
        }
        if fields.embeds(key) {
            block_values(item, out, Some(BlockFields::Embedded));
        } else {
            leaf_values(item, out);
        }
    }
}

/// The values in a JSON value: each string (and number) whole, the tokens of each string, and the
/// tokens of each object key.
fn leaf_values(value: &Value, out: &mut Found) {
    match value {
        Value::String(text) => text_values(text, out),
        Value::Number(number) => number_values(&extract::number_text(number), out),
        Value::Array(items) => items.iter().for_each(|item| leaf_values(item, out)),
        Value::Object(map) => map_values(map, out),
        Value::Bool(_) | Value::Null => {}
    }
}

/// The values of an object: its values', and the tokens of its keys (a map keyed by IBAN or by
/// link names them as surely as a field does; a key is a name, not a value, so it is not read
/// whole).
fn map_values(map: &serde_json::Map<String, Value>, out: &mut Found) {
    for (key, item) in map {
        if out.full() {
            return;
        }
        key_values(key, out);
        leaf_values(item, out);
    }
}

/// The values of an object's key: its tokens, as written and decoded.
fn key_values(key: &str, out: &mut Found) {
    if out.full() {
        return;
    }
    out.cut |= extract::tokens(key, out.list()).is_cut();
    out.further(|out| {
        for decoded in references::decodings(key) {
            out.cut |= extract::tokens(&decoded, out.list()).is_cut();
        }
    });
}

/// The value of a number (as serde_json writes it): whole.
fn number_values(written: &str, out: &mut Found) {
    if !out.full()
        && let Some(token) = extract::whole(written)
    {
        out.list().push(token);
    }
}
