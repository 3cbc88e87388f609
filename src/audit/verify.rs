//! The JSON Lines chain format — one spelling per entry — and its verification.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::canonical;

/// The hash every chain starts from.
pub(crate) const GENESIS: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// One line of a JSON Lines audit file, as parsed back.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainedLine {
    seq: u64,
    prev: String,
    event: Value,
    hash: String,
}

/// The hash an entry carries: over its sequence number, the previous hash and the event in
/// canonical JSON (`event`).
pub(super) fn line_hash(seq: u64, prev: &str, event: &str) -> String {
    let mut hasher = Sha256::new();
    let mut digits = String::new();
    crate::canonical::push_unsigned(&mut digits, seq);
    hasher.update(digits.as_bytes());
    hasher.update([0]);
    hasher.update(prev.as_bytes());
    hasher.update([0]);
    hasher.update(event.as_bytes());
    canonical::hex_digest(&hasher.finalize())
}

/// The one spelling of an entry, newline included: `{"seq":…,"prev":…,"event":…,"hash":…}` with
/// the fields in this order, no whitespace and the event in canonical JSON (`event`). The sink
/// writes exactly this and verification accepts nothing else.
pub(super) fn entry_line(seq: u64, prev: &str, event: &str, hash: &str) -> String {
    let mut line = String::with_capacity(event.len() + prev.len() + hash.len() + 48);
    push_entry_line(&mut line, seq, prev, event, hash);
    line
}

/// Appends [`entry_line`] to `line`.
pub(super) fn push_entry_line(line: &mut String, seq: u64, prev: &str, event: &str, hash: &str) {
    line.push_str("{\"seq\":");
    crate::canonical::push_unsigned(line, seq);
    line.push_str(",\"prev\":");
    push_json_string(line, prev);
    line.push_str(",\"event\":");
    line.push_str(event);
    line.push_str(",\"hash\":");
    push_json_string(line, hash);
    line.push_str("}\n");
}

fn push_json_string(out: &mut String, text: &str) {
    // Hashes need no escaping: written as they are, the bytes serde_json would write.
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(text);
        out.push('"');
        return;
    }
    // Serializing a &str cannot fail.
    if let Ok(quoted) = serde_json::to_string(text) {
        out.push_str(&quoted);
    }
}

/// The end of a verified chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChainTip {
    /// How many entries the file holds.
    pub entries: u64,
    /// The last entry's hash (the genesis hash for an empty file).
    pub last_hash: String,
    /// The length in bytes of the verified entries: the whole file for a chain that verifies,
    /// save the zeros a sink reserves past its lines.
    pub bytes: u64,
}

/// Why an audit file does not verify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditVerifyError {
    /// The file could not be read: the operator's storage, not the log, is at fault.
    #[error("cannot read audit file {}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Every complete line is a valid entry, but the file ends in bytes that do not end their line:
    /// the writer died mid-write (or a sink is writing right now). Not tampering: recover with
    /// [`JsonlAuditSink::open_recovering`](crate::audit::JsonlAuditSink::open_recovering), which keeps the
    /// torn bytes in a side file.
    #[error(
        "audit file ends in a torn write: {valid_entries} entries verify, then {tail_bytes} bytes \
         from byte {tail_offset} do not end their line"
    )]
    TornTail {
        /// How many complete entries verify before the torn bytes.
        valid_entries: u64,
        /// Where the torn bytes start: the length of the valid part.
        tail_offset: u64,
        /// How many torn bytes follow.
        tail_bytes: u64,
    },
    /// A complete line (one ending in `\n`) is not the entry the chain expects there: the file was
    /// edited, entries were deleted or moved, or a torn line was written after. Treat it as
    /// tampering; nothing appends to it.
    #[error("audit file broken at line {line}: {problem}")]
    Broken {
        /// 1-based number of the first bad line.
        line: u64,
        /// What is wrong with it.
        problem: AuditEntryProblem,
    },
}

impl AuditVerifyError {
    /// The 1-based line where the chain breaks, for [`AuditVerifyError::Broken`].
    pub fn line(&self) -> Option<u64> {
        match self {
            Self::Broken { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// What is wrong with a line that breaks the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuditEntryProblem {
    /// Not UTF-8 JSON of an entry's shape (edited, or a torn line that more lines followed).
    #[error("not an audit entry (edited or truncated)")]
    NotAnEntry,
    /// An object in the line names a key twice (edited: a parser would keep only one of them).
    #[error("a key appears twice (edited)")]
    DuplicateKey,
    /// Valid JSON of the right meaning, but not spelled byte for byte as the sink writes it
    /// (whitespace, key order, number or string spelling, line ending: edited).
    #[error("not spelled as the sink writes it (edited)")]
    NotCanonical,
    /// The sequence number is not the line's position (an entry was deleted or moved).
    #[error("sequence {found} where {expected} was expected (an entry was deleted or moved)")]
    Sequence {
        /// The number in the line.
        found: u64,
        /// The number its position calls for.
        expected: u64,
    },
    /// The line does not name the previous entry's hash (an entry was deleted or moved).
    #[error("does not follow the previous entry (an entry was deleted or moved)")]
    Unchained,
    /// The line's content does not match its hash (edited).
    #[error("content does not match its hash (edited)")]
    HashMismatch,
}

/// Checks a JSON Lines audit file entry by entry.
///
/// # Guarantees
///
/// - Every line must be byte for byte the entry [`JsonlAuditSink`](crate::audit::JsonlAuditSink) would
///   write there: the spelling is re-derived from the parsed entry and compared, and a key named
///   twice anywhere is refused. Re-spelled numbers (`1.0`, `1e0`), escapes (`\u0041`), whitespace,
///   key order, `\r\n`, a byte-order mark, an upper-case hash: each is reported with its line.
/// - Editing, deleting or reordering entries breaks the chain at the first affected line
///   ([`AuditVerifyError::Broken`]).
/// - A file whose complete lines all verify but which ends in an unterminated line is reported as
///   [`AuditVerifyError::TornTail`] — a crash mid-write, not tampering. A bad line followed by
///   more lines, or a bad line ending in `\n`, is `Broken`.
/// - A run of NUL bytes at the end is space a sink reserved ahead of its writes (see
///   [`JsonlAuditSink`](crate::audit::JsonlAuditSink)), not entries. No entry holds a NUL byte: the
///   first one ends the entries. If no line ends after it, the bytes other than NUL from that
///   line on — a line cut short before the zeros — are a `TornTail` through the last of them. If
///   a line ends after it, complete lines follow bytes that are not an entry: `Broken` at the line
///   holding the NUL, as for any bad line with more after it. (A power cut that kept a later
///   block of an unsynced write and lost an earlier one reads so too: look before recovering —
///   recovery refuses a broken log.)
/// - Cutting whole entries off the end leaves a valid, shorter chain: compare
///   [`ChainTip::entries`] and [`ChainTip::last_hash`] with a copy kept elsewhere to detect it.
///
/// Verifying a file a sink is writing to may report `TornTail` for the entry being written.
///
/// # Errors
///
/// [`AuditVerifyError`]: unreadable, torn at the end, or broken at a line.
///
/// # Examples
///
/// ```
/// use toolgate::audit::{AuditVerifyError, verify_audit_file};
///
/// let path = std::env::temp_dir().join(format!("toolgate-doc-verify-{}.jsonl", std::process::id()));
/// std::fs::write(&path, b"{\"seq\":0,\"pr")?;
/// match verify_audit_file(&path) {
///     Err(AuditVerifyError::TornTail { valid_entries: 0, tail_offset: 0, .. }) => {}
///     other => panic!("{other:?}"),
/// }
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn verify_audit_file(path: impl AsRef<Path>) -> Result<ChainTip, AuditVerifyError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| AuditVerifyError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    let scan = scan(file, path)?;
    match scan.torn_bytes {
        0 => Ok(scan.tip),
        tail_bytes => Err(AuditVerifyError::TornTail {
            valid_entries: scan.tip.entries,
            tail_offset: scan.tip.bytes,
            tail_bytes,
        }),
    }
}

/// A file read to its end: the verified chain and how many torn bytes follow it.
pub(super) struct Scan {
    pub(super) tip: ChainTip,
    pub(super) torn_bytes: u64,
}

/// Reads entries from the start of `reader` and checks each; a broken line is an error, a torn
/// tail is reported in the result.
///
/// The first line holding a NUL byte ends the entries: no entry contains one (JSON escapes
/// control characters), and it is what the space a sink reserves ahead of its writes reads as
/// (see [`JsonlAuditSink`](crate::audit::JsonlAuditSink)). If from there to the end there are only
/// NUL bytes, that is reserved space and nothing is torn. Other bytes there with no line end
/// among them — a line cut short by a crash — are a torn tail, up to the last byte that is not
/// NUL. A line end after the NUL is `Broken`: treating complete lines as torn would let a NUL
/// written into a log's middle turn its later entries into "crash debris" that recovery moves
/// away.
pub(super) fn scan(reader: impl Read, path: &Path) -> Result<Scan, AuditVerifyError> {
    let unreadable = |source| AuditVerifyError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let mut tip = ChainTip {
        entries: 0,
        last_hash: GENESIS.to_owned(),
        bytes: 0,
    };
    loop {
        line.clear();
        let ended = read_line(&mut reader, &mut line).map_err(unreadable)?;
        let read = line.len();
        match ended {
            LineEnd::File if read == 0 => return Ok(Scan { tip, torn_bytes: 0 }),
            LineEnd::Nul => {
                // Not buffered: the zeros a sink reserves can be many megabytes.
                return match torn_before_reserve(&line, &mut reader).map_err(unreadable)? {
                    Some(torn_bytes) => Ok(Scan { tip, torn_bytes }),
                    None => Err(AuditVerifyError::Broken {
                        line: tip.entries + 1,
                        problem: AuditEntryProblem::NotAnEntry,
                    }),
                };
            }
            LineEnd::File => {
                // The last bytes of the file and not a whole line: only a crash mid-write leaves
                // this.
                return Ok(Scan {
                    tip,
                    torn_bytes: read as u64,
                });
            }
            LineEnd::Newline => {}
        }
        let hash = check_entry(&line, tip.entries, &tip.last_hash).map_err(|problem| {
            AuditVerifyError::Broken {
                line: tip.entries + 1,
                problem,
            }
        })?;
        tip.entries += 1;
        tip.last_hash = hash;
        tip.bytes += read as u64;
    }
}

/// What ended a line [`read_line`] read.
pub(crate) enum LineEnd {
    /// Its `\n` (kept in the line).
    Newline,
    /// A NUL byte (left unread): the entries end here.
    Nul,
    /// The end of the file.
    File,
}

/// Appends the next line's bytes to `line`, up to and with its `\n`, or up to a NUL byte or the
/// end of the file.
pub(crate) fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<LineEnd> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(LineEnd::File);
        }
        match buffer.iter().position(|byte| *byte == b'\n' || *byte == 0) {
            Some(at) if buffer[at] == 0 => {
                line.extend_from_slice(&buffer[..at]);
                reader.consume(at);
                return Ok(LineEnd::Nul);
            }
            Some(at) => {
                line.extend_from_slice(&buffer[..=at]);
                reader.consume(at + 1);
                return Ok(LineEnd::Newline);
            }
            None => {
                let used = buffer.len();
                line.extend_from_slice(buffer);
                reader.consume(used);
            }
        }
    }
}

/// How many bytes from the start of `first` (a line's bytes before a NUL byte) to the end of
/// `rest` (from that NUL byte on) come before the trailing run of NUL bytes: 0 if they are all
/// NUL; `None` if a line ends in `rest`.
fn torn_before_reserve(first: &[u8], rest: &mut impl BufRead) -> io::Result<Option<u64>> {
    let mut read = first.len() as u64;
    let mut torn = read;
    loop {
        let chunk = rest.fill_buf()?;
        if chunk.is_empty() {
            return Ok(Some(torn));
        }
        if chunk.contains(&b'\n') {
            return Ok(None);
        }
        if let Some(last) = chunk.iter().rposition(|byte| *byte != 0) {
            torn = read + last as u64 + 1;
        }
        read += chunk.len() as u64;
        let used = chunk.len();
        rest.consume(used);
    }
}

/// Checks one complete line (with its `\n`) against the position and hash the chain expects there,
/// and returns its hash.
fn check_entry(line: &[u8], seq: u64, prev: &str) -> Result<String, AuditEntryProblem> {
    let text = std::str::from_utf8(line).map_err(|_| AuditEntryProblem::NotAnEntry)?;
    let body = text.strip_suffix('\n').unwrap_or(text);
    let value = match serde_json::from_str::<Unique>(body) {
        Ok(Unique(value)) => value,
        // The only data error `Unique` raises is a repeated key; anything else is bad syntax.
        Err(error) if error.classify() == serde_json::error::Category::Data => {
            return Err(AuditEntryProblem::DuplicateKey);
        }
        Err(_) => return Err(AuditEntryProblem::NotAnEntry),
    };
    let entry: ChainedLine =
        serde_json::from_value(value).map_err(|_| AuditEntryProblem::NotAnEntry)?;
    let event = canonical::canonical_json(&entry.event);
    if entry_line(entry.seq, &entry.prev, &event, &entry.hash) != text {
        return Err(AuditEntryProblem::NotCanonical);
    }
    if entry.seq != seq {
        return Err(AuditEntryProblem::Sequence {
            found: entry.seq,
            expected: seq,
        });
    }
    if entry.prev != prev {
        return Err(AuditEntryProblem::Unchained);
    }
    if line_hash(entry.seq, &entry.prev, &event) != entry.hash {
        return Err(AuditEntryProblem::HashMismatch);
    }
    Ok(entry.hash)
}

/// A JSON value parsed with every object's keys unique: `serde_json::Value` silently keeps the last
/// of two equal keys, which would let an edited line carry a second meaning.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, flag: bool) -> Result<Value, E> {
        Ok(Value::Bool(flag))
    }

    fn visit_i64<E>(self, number: i64) -> Result<Value, E> {
        Ok(Value::from(number))
    }

    fn visit_u64<E>(self, number: u64) -> Result<Value, E> {
        Ok(Value::from(number))
    }

    fn visit_f64<E>(self, number: f64) -> Result<Value, E> {
        Ok(Value::from(number))
    }

    fn visit_str<E>(self, text: &str) -> Result<Value, E> {
        Ok(Value::String(text.to_owned()))
    }

    fn visit_string<E>(self, text: String) -> Result<Value, E> {
        Ok(Value::String(text))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::new();
        while let Some(Unique(item)) = items.next_element()? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom("duplicate key"));
            }
            let Unique(item) = entries.next_value()?;
            map.insert(key, item);
        }
        Ok(Value::Object(map))
    }
}
