//! Canonical JSON and its digest: one byte string per meaning.

use std::cell::RefCell;
use std::fmt::Write as _;

use serde_json::{Number, Value};
use sha2::{Digest as _, Sha256};

mod stream;

/// Where canonical JSON is written: a `String`, or a hasher's buffer ([`stream::HashSink`]).
pub(crate) trait Out {
    fn text(&mut self, text: &str);

    /// One ASCII punctuation byte (`{`, `:`, …).
    fn byte(&mut self, byte: u8);

    /// ASCII decimal digits.
    fn digits(&mut self, digits: &[u8]) {
        // ASCII digits, so this never fails.
        self.text(std::str::from_utf8(digits).unwrap_or_default());
    }
}

impl Out for String {
    fn text(&mut self, text: &str) {
        self.push_str(text);
    }

    fn byte(&mut self, byte: u8) {
        self.push(char::from(byte));
    }
}

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

/// The SHA-256 of a value's canonical form: what an audit event's argument digest shows and what
/// an approval's call digest is derived from, so each side of a round trip hashes the arguments
/// once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArgumentHash([u8; 32]);

impl ArgumentHash {
    /// Canonicalizes `value` and hashes it.
    pub(crate) fn of(value: &Value) -> Self {
        Self(hash_canonical(Sha256::new(), value))
    }

    /// `sha256:` and the hash in hex: the same text as [`digest`] of the value.
    pub(crate) fn text(&self) -> String {
        hex_digest(&self.0)
    }

    /// The raw hash.
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// `sha256:` followed by the hex SHA-256 of the canonical form of `value`.
pub(crate) fn digest(value: &Value) -> String {
    ArgumentHash::of(value).text()
}

/// The digest an approval binds to: `sha256:` over the tool name and the definition's digest, each
/// followed by a NUL byte, then the arguments' canonical JSON. The definition's digest has a fixed
/// form without NUL and canonical JSON escapes control characters, so the three parts are read
/// back unambiguously: same meaning → same digest; any change of tool, definition or argument
/// value → another (SHA-256 is collision resistant).
///
/// The arguments are hashed in the same pass as the prefix rather than hashed apart and their hash
/// appended: with the prefix's first block kept (see [`call_prefix`]), a call whose canonical
/// arguments fit the rest of a block costs one SHA-256 compression instead of two.
pub(crate) fn call_digest(tool: &str, definition_digest: &str, arguments: &Value) -> String {
    hex_digest(&call_hash(prefix_state(tool, definition_digest), arguments))
}

/// The raw [`call_digest`], from the hasher after [`call_prefix`] of the call's tool and
/// definition digest.
pub(crate) fn call_hash(prefix: Sha256, arguments: &Value) -> [u8; 32] {
    hash_canonical(prefix, arguments)
}

/// The hasher after absorbing `tool \0 definition_digest \0`: the part of a [`call_digest`] that is
/// the same for every call of a tool. A definition keeps its own (`ToolDefinition::call_prefix`).
pub(crate) fn call_prefix(tool: &str, definition_digest: &str) -> Sha256 {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(definition_digest.as_bytes());
    hasher.update([0]);
    hasher
}

/// Whether `text` is the digest text (`sha256:` and lowercase hex) of `hash`, without building it.
pub(crate) fn digest_is(text: &str, hash: &[u8; 32]) -> bool {
    let Some(hex) = text.as_bytes().strip_prefix(b"sha256:") else {
        return false;
    };
    hex.len() == 64 && hex_pairs(hash) == *hex
}

/// `prefix` with `value`'s canonical JSON absorbed, finished.
fn hash_canonical(prefix: Sha256, value: &Value) -> [u8; 32] {
    let mut hasher = prefix.clone();
    let mut sink = stream::HashSink::new(&mut hasher);
    if stream::write(&mut sink, value, 0).is_ok() {
        sink.finish();
        return hasher.finalize().into();
    }
    // Too deep for the recursive walk, or a map to sort: the same bytes, built as text.
    let mut hasher = prefix;
    hasher.update(canonical_json(value).as_bytes());
    hasher.finalize().into()
}

/// How many (tool, definition) hash prefixes one thread keeps.
const CACHED_PREFIXES_PER_THREAD: usize = 8;

/// (tool, definition digest, the hasher after `tool \0 definition \0`).
type CachedPrefix = (Box<str>, Box<str>, Sha256);

thread_local! {
    static PREFIXES: RefCell<Vec<CachedPrefix>> = const { RefCell::new(Vec::new()) };
}

/// [`call_prefix`], kept per thread for [`call_digest`] callers that have no definition at hand
/// (`ApprovalRequest::digest_matches`). That prefix is longer than one SHA-256 block (64 bytes),
/// so keeping it saves a compression. The state is a pure function of the two strings it is keyed
/// by, so a cached one is the one that would be computed.
fn prefix_state(tool: &str, definition_digest: &str) -> Sha256 {
    let cached = PREFIXES
        .try_with(|cache| {
            cache
                .borrow()
                .iter()
                .find(|(t, d, _)| **t == *tool && **d == *definition_digest)
                .map(|(_, _, state)| state.clone())
        })
        .ok()
        .flatten();
    if let Some(state) = cached {
        return state;
    }
    let hasher = call_prefix(tool, definition_digest);
    // Unavailable only while the thread is being torn down; then the state is just not kept.
    let _ = PREFIXES.try_with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHED_PREFIXES_PER_THREAD {
            cache.remove(0);
        }
        cache.push((tool.into(), definition_digest.into(), hasher.clone()));
    });
    hasher
}

/// `sha256:` and the hash in lowercase hex.
// Fast path: byte pairs into a buffer (~200 instr.; `write!` per byte cost ~4,000).
pub(crate) fn hex_digest(hash: &[u8]) -> String {
    let mut text = String::with_capacity(7 + 2 * hash.len());
    text.push_str("sha256:");
    push_hex(&mut text, hash);
    text
}

/// `bytes` in lowercase hex, two digits each (see [`hex_digest`] for why not `format!`).
pub(crate) fn hex_lower(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 * bytes.len());
    push_hex(&mut text, bytes);
    text
}

pub(crate) fn push_hex(text: &mut String, bytes: &[u8]) {
    for chunk in bytes.chunks(32) {
        let mut pairs = [0_u8; 64];
        write_hex_pairs(&mut pairs, chunk);
        // ASCII throughout, so this never fails.
        text.push_str(std::str::from_utf8(&pairs[..2 * chunk.len()]).unwrap_or_default());
    }
}

/// Each byte of `hash` as two lowercase hex digits.
fn hex_pairs(hash: &[u8; 32]) -> [u8; 64] {
    let mut pairs = [0_u8; 64];
    write_hex_pairs(&mut pairs, hash);
    pairs
}

/// Writes each byte of `bytes` (at most half of `pairs`) as two lowercase hex digits: four bytes
/// at a time, the rest one by one.
fn write_hex_pairs(pairs: &mut [u8; 64], bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut fours = bytes.chunks_exact(4);
    for (eight, four) in pairs.chunks_exact_mut(8).zip(&mut fours) {
        let four: [u8; 4] = four.try_into().unwrap_or_default();
        eight.copy_from_slice(&hex_of_four(u32::from_be_bytes(four)));
    }
    let done = bytes.len() - fours.remainder().len();
    for (pair, byte) in pairs[2 * done..].chunks_exact_mut(2).zip(fours.remainder()) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0x0f)];
    }
}

/// The eight lowercase hex digits of `value`, computed in one word: each nibble spread to a
/// byte of its own, then made a digit, `a` to `f` where it is ten or more. A table lookup per
/// nibble cost twice as much; a provenance value's counter name writes 32 digits.
fn hex_of_four(value: u32) -> [u8; 8] {
    const LOW_NIBBLES: u64 = 0x0F0F_0F0F_0F0F_0F0F;
    let mut spread = u64::from(value);
    spread = (spread | (spread << 16)) & 0x0000_FFFF_0000_FFFF;
    spread = (spread | (spread << 8)) & 0x00FF_00FF_00FF_00FF;
    spread = (spread | (spread << 4)) & LOW_NIBBLES;
    // Per byte, a nibble of ten or more carries into bit 4 once six is added (no byte passes
    // 0x15, so no carry crosses bytes).
    let letters = ((spread + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    let digits = spread + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10);
    digits.to_be_bytes()
}

pub(crate) fn push_string(out: &mut impl Out, text: &str) {
    // What serde_json escapes: `"`, `\` and control characters below U+0020. Text without them is
    // written as is, the same bytes serde_json would write, without its allocation.
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.byte(b'"');
        out.text(text);
        out.byte(b'"');
        return;
    }
    // Serializing a &str cannot fail.
    out.text(&serde_json::to_string(text).unwrap_or_default());
}

/// `integer` in decimal, as `{}` prints it.
// Fast path: no formatting machinery (it cost ~300 instr. a number).
pub(crate) fn push_unsigned(out: &mut impl Out, mut integer: u64) {
    let mut digits = [0_u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (integer % 10) as u8;
        integer /= 10;
        if integer == 0 {
            break;
        }
    }
    // ASCII digits, so this never fails.
    out.digits(&digits[start..]);
}

fn push_signed(out: &mut impl Out, integer: i64) {
    if integer < 0 {
        out.byte(b'-');
    }
    push_unsigned(out, integer.unsigned_abs());
}

fn push_number(out: &mut impl Out, number: &Number) {
    if let Some(integer) = number.as_i64() {
        push_signed(out, integer);
    } else if let Some(integer) = number.as_u64() {
        push_unsigned(out, integer);
    } else if let Some(float) = number.as_f64().filter(|float| float.is_finite()) {
        // An integral float prints as the integer it equals wherever an integer type holds it
        // (from -2^63, below 2^64): `1e19` and `10000000000000000000` are one number.
        if float.fract() == 0.0 && (-9.223_372_036_854_776e18..0.0).contains(&float) {
            push_signed(out, float as i64);
        } else if float.fract() == 0.0 && (0.0..1.844_674_407_370_955_2e19).contains(&float) {
            push_unsigned(out, float as u64);
        } else {
            // `{:e}` on f64 is the shortest decimal that reads back as the same float.
            let mut text = String::new();
            let _ = write!(text, "{float:e}");
            out.text(&text);
        }
    } else {
        // Only with serde_json's `arbitrary_precision` (turned on by another crate in the build):
        // a number past f64's range keeps its own spelling rather than collapsing into `inf`.
        out.text(&number.to_string());
    }
}

#[cfg(test)]
mod tests;
