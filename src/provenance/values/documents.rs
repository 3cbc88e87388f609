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
    // One budget for what is parsed again in looking for documents inside other text, shared
    // by every text of the result (or request) and the decodings and strings of each: twice
    // the texts and 64 KiB in all. Each text its own would let a result of many strings parse
    // 64 KiB again for each.
    found.looked_in = found.looked_in.saturating_add(text.len());
    let granted = json_text::retry_budget(found.looked_in).saturating_sub(found.retried);
    let mut left = granted;
    let budget = &mut left;
    read_spellings(text, quoted, rounds, found, &mut documents, budget);
    for _ in 1..MOST_NESTED_DOCUMENTS {
        let mut nested = std::mem::take(&mut documents);
        if nested.is_empty() || found.full() {
            break;
        }
        // A document read twice (a line of JSON lines, and the text it starts) is one.
        nested.sort_unstable();
        nested.dedup();
        for (document, inside) in nested {
            let rounds = references::decodings(&document);
            let quoted = document.contains('"');
            if inside {
                found.inside(|found| {
                    read_spellings(&document, quoted, &rounds, found, &mut documents, budget);
                });
            } else {
                read_spellings(&document, quoted, &rounds, found, &mut documents, budget);
            }
        }
    }
    found.retried = found.retried.saturating_add(granted - *budget);
    // Documents nested deeper than they are read hold values nobody recorded: the reading is
    // cut, as links nested too deep are (the session overflows) — where a string left ends as
    // a document does (even one the reader cannot read: nested past serde_json's depth). A
    // string of a document inside other text is not read past the depth, as no value of one is
    // past a result's bound, and cuts nothing.
    found.cut |= documents
        .iter()
        .any(|(document, inside)| !inside && json_text::may_end_with_document(document));
}

/// The documents of `text` and of its decodings `rounds`. A decoding's document it ends with
/// is read only while no spelling before it read one — they spell the same document again,
/// and one broken by decoding its strings' escapes, read in part, would add fragments of it —
/// and its documents inside other text always (only a decoding spells some: an HTML-escaped
/// document beside a `["k"]` as written).
fn read_spellings(
    text: &str,
    quoted: bool,
    rounds: &[String],
    found: &mut Found,
    documents: &mut Vec<Nested>,
    budget: &mut usize,
) {
    let mut ending = read_spelling(text, quoted, found, documents, budget);
    for round in rounds {
        if ending {
            if round.contains('"') {
                read_inside(round, found, documents, budget);
            }
        } else {
            ending = read_spelling(round, round.contains('"'), found, documents, budget);
        }
    }
}

/// The document `text` ends with, then those inside the text before it; whether one it ends
/// with was read.
fn read_spelling(
    text: &str,
    quoted: bool,
    found: &mut Found,
    documents: &mut Vec<Nested>,
    budget: &mut usize,
) -> bool {
    let (ending, before) =
        json_text::ending_leaves(text, &mut |leaf| on_leaf(leaf, found, documents));
    if quoted {
        read_inside(&text[..before], found, documents, budget);
    }
    ending
}

/// The documents inside other text in `text`, read as those are (see [`Found::inside`]).
fn read_inside(text: &str, found: &mut Found, documents: &mut Vec<Nested>, budget: &mut usize) {
    found.inside(|found| {
        json_text::inside_leaves(text, budget, &mut |leaf| {
            on_leaf(leaf, found, documents);
        });
    });
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

#[cfg(test)]
mod tests {
    use super::super::text_values;
    use super::*;

    #[test]
    fn what_is_parsed_again_is_bounded_for_a_whole_result_not_for_each_text() {
        // A result of 200 strings, each a quote and 127 brackets opening a list never closed:
        // every bracket starts an attempt that parses to the string's end.
        let text = format!("\"{}{}", "[".repeat(127), "1,".repeat(190));
        let mut found = Found::default();
        for _ in 0..200 {
            text_values(&text, &mut found);
        }
        assert_eq!(found.looked_in, 200 * text.len());
        // Each string its own budget would parse some 57 KB again, 11 MB in all.
        assert!(found.retried > 0);
        assert!(found.retried <= json_text::retry_budget(found.looked_in));
    }
}
