//! The JSON documents a text holds, read value by value as structured content is (see
//! [`json_text`]): the one the text ends with, those inside other text, those its decodings
//! spell (`{&quot;hotel&quot;: …}`, `{\"hotel\": …}`, a document written as a JSON string), and
//! those carried as strings of one another, four deep.

use super::super::json_text::{self, Leaf};
use super::{Found, decoded_values, key_values, number_values, written_values};
use crate::text::references;

/// How many JSON documents carried as strings of one another are read, the text's own first.
const MOST_NESTED_DOCUMENTS: usize = 4;

/// A string of a document that may be a document itself, and whether it was read from a
/// document inside other text (it is read as those are).
type Nested = (String, bool);

/// Reads the documents of `text` — `quoted` if it holds a quote, `rounds` its decodings — into
/// `found`.
pub(super) fn read_documents(text: &str, quoted: bool, rounds: &[String], found: &mut Found) {
    // A string of a document that is itself one is read in turn, from a list rather than by
    // recursion: documents nested in strings would nest the parser's 128 levels as many times
    // over, on the stack.
    let mut documents: Vec<Nested> = Vec::new();
    read_spellings(text, quoted, rounds, found, &mut documents);
    for _ in 1..MOST_NESTED_DOCUMENTS {
        let mut nested = std::mem::take(&mut documents);
        if nested.is_empty() || found.full() {
            break;
        }
        // A document read twice (a line of JSON lines, and the text it starts) is one.
        nested.sort_unstable();
        nested.dedup();
        for (document, inside) in nested {
            let rounds = decodings(&document);
            let quoted = document.contains('"');
            if inside {
                found.inside(|found| {
                    read_spellings(&document, quoted, &rounds, found, &mut documents);
                });
            } else {
                read_spellings(&document, quoted, &rounds, found, &mut documents);
            }
        }
    }
    // Documents nested deeper than they are read hold values nobody recorded: the reading is
    // cut, as links nested too deep are (the session overflows).
    found.cut |= documents
        .iter()
        .any(|(document, _)| holds_document(document));
}

/// The documents of `text` and of its decodings `rounds`: a decoding's only those inside other
/// text once a spelling before it read any — they spell the same documents again, and a broken
/// spelling of one (its strings' escapes decoded) read in part would add fragments of it.
fn read_spellings(
    text: &str,
    quoted: bool,
    rounds: &[String],
    found: &mut Found,
    documents: &mut Vec<Nested>,
) {
    let mut read = read_spelling(text, quoted, found, documents);
    for round in rounds {
        if !read {
            read = read_spelling(round, round.contains('"'), found, documents);
        } else if round.contains('"') {
            found.inside(|found| {
                json_text::inside_leaves(round, &mut |leaf| on_leaf(leaf, found, documents))
            });
        }
    }
}

/// The document `text` ends with, then those inside the text before it; whether any was read.
fn read_spelling(text: &str, quoted: bool, found: &mut Found, documents: &mut Vec<Nested>) -> bool {
    let (ending, before) =
        json_text::ending_leaves(text, &mut |leaf| on_leaf(leaf, found, documents));
    let inside = quoted
        && found.inside(|found| {
            json_text::inside_leaves(&text[..before], &mut |leaf| {
                on_leaf(leaf, found, documents);
            })
        });
    ending || inside
}

/// Reads one leaf of a document; a string that may be a document itself is kept for reading.
fn on_leaf(leaf: Leaf<'_>, found: &mut Found, documents: &mut Vec<Nested>) {
    match leaf {
        Leaf::Key(key) => key_values(key, found),
        Leaf::Text(text) => {
            written_values(text, found);
            decoded_values(text, found);
            if may_hold_document(text) {
                documents.push((text.to_owned(), found.reading_inside));
            }
        }
        Leaf::Number(number) => number_values(&number, found),
    }
}

/// Whether a string may hold a document: one it ends with, or a bracket and a quote, or a
/// reference or an escape that may spell one.
fn may_hold_document(text: &str) -> bool {
    json_text::may_end_with_document(text)
        || (text.contains(['{', '[']) && text.contains(['"', '&', '\\']))
}

/// Whether a string left past the depth read holds a document: one it ends with (even one the
/// reader cannot read: nested past serde_json's depth), or one read from it or a decoding.
fn holds_document(text: &str) -> bool {
    json_text::may_end_with_document(text)
        || json_text::each_leaf(text, &mut |_| {})
        || decodings(text)
            .iter()
            .any(|round| json_text::each_leaf(round, &mut |_| {}))
}

/// The decodings of a text holding a reference or an escape; none for most.
fn decodings(text: &str) -> Vec<String> {
    if references::starts(text).references {
        references::decodings(text)
    } else {
        Vec::new()
    }
}
