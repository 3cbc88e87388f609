//! Directories read against what the person asked (`sources.lookups`): the records of a
//! directory's result, and the words of a record that may be a name the person said.
//!
//! The person says "Ana"; the directory's line `ana.silva - Ana Silva, Product designer` holds
//! the name, so its values (`ana.silva`, the line, its words) count as named by the person. The
//! person's words are recorded before; a record is read when the directory's result is.

use serde_json::Value;

use super::extract::{self, Kind, Token};
use crate::contract::ToolResult;

/// The most records of one result read against the person's words; later ones are not, so
/// their values stay unnamed (which only restricts).
pub(crate) const MAX_RECORDS: usize = 512;

/// The most names of one record read.
pub(crate) const MAX_NAMES_PER_RECORD: usize = 16;

/// The most names of one result read, all records together.
pub(crate) const MAX_NAMES: usize = 4096;

/// The most records of one result a request names; past them the rest stay unnamed. A person
/// names a few people; the bound keeps reading a directory to a few store round trips.
pub(crate) const MAX_NAMED_RECORDS: usize = 64;

/// How deep structured content is followed for records.
const MAX_DEPTH: usize = 16;

/// The fewest characters of a name.
const MIN_NAME_CHARS: usize = 3;

/// Words a request or a title holds far more often than they name anyone: a record holding one
/// is not picked by the person's saying it.
const NOT_NAMES: &[&str] = &[
    "about", "after", "all", "also", "and", "any", "are", "ask", "before", "but", "can", "could",
    "dear", "email", "for", "forward", "from", "get", "had", "has", "have", "hello", "her", "here",
    "him", "his", "how", "into", "its", "just", "mail", "may", "message", "must", "new", "not",
    "now", "off", "our", "ours", "out", "over", "per", "please", "let", "reply", "send", "share",
    "she", "should", "tell", "than", "thanks", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "under", "via", "was", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your", "yours",
];

/// The records of a directory's result, each as text: with structured content, each object in
/// it (its own one-line strings, a line each — an object or a list inside it gives records of its
/// own: a group's members, a user's manager, the values of a map keyed by id), each one-line
/// string in a list, and each line of a longer string; without, each non-empty line of its text
/// (its text blocks, joined; any line break). Never both: the text of a result with structured
/// content is that content written out, and a record read twice would share all its words with
/// itself. A result of more than [`MAX_RECORDS`] records, or nested deeper than [`MAX_DEPTH`],
/// gives none: which names are unique is known only over all of its records.
pub(crate) fn records_of(result: &ToolResult) -> Vec<String> {
    let mut reading = Reading::default();
    match &result.structured {
        Some(structured) => reading.value(structured, 0),
        None => reading.lines(&result.content),
    }
    if reading.cut || reading.records.len() > MAX_RECORDS {
        return Vec::new();
    }
    reading.records
}

/// Records read so far, and whether any part of the result was left unread.
#[derive(Default)]
struct Reading {
    records: Vec<String>,
    cut: bool,
}

impl Reading {
    /// Whether reading stops: past the records a result may have, or something left unread.
    fn full(&self) -> bool {
        self.cut || self.records.len() > MAX_RECORDS
    }

    /// Each non-empty line of `text` a record, at every line break a reader may show.
    fn lines(&mut self, text: &str) {
        for line in text.split(is_line_break) {
            if self.full() {
                return;
            }
            if !line.trim().is_empty() {
                self.records.push(line.to_owned());
            }
        }
    }

    /// `value` as records: a string's lines, an object's record (see [`Self::object`]), a
    /// list's elements.
    fn value(&mut self, value: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            self.cut = true;
            return;
        }
        match value {
            Value::String(text) => self.lines(text),
            Value::Array(items) => {
                for item in items {
                    if self.full() {
                        return;
                    }
                    self.value(item, depth + 1);
                }
            }
            Value::Object(map) => {
                let mut record = String::new();
                for item in map.values() {
                    match item {
                        Value::String(text) if !text.contains(is_line_break) => {
                            record.push_str(text);
                            record.push('\n');
                        }
                        _ => self.value(item, depth + 1),
                    }
                }
                if !record.trim().is_empty() && !self.full() {
                    self.records.push(record);
                }
            }
            _ => {}
        }
    }
}

/// A line break: `\n`, `\r`, a vertical tab, a form feed, NEL, or the Unicode line and paragraph
/// separators — where a reader shows a new line, a record ends.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// The names of each record: its words that are no common word ([`NOT_NAMES`]), of at least
/// three characters with a letter among them, read as the person's words are (case aside;
/// `Ana's` is `Ana`; no link, address or number; a handle is one) — and that no other record holds: a word several records share (`manager`
/// on two lines, two colleagues called Bob) names none of them. At most
/// [`MAX_NAMES_PER_RECORD`] a record.
pub(crate) fn names_by_record(records: &[String]) -> Vec<Vec<Token>> {
    let candidates: Vec<Vec<Token>> = records.iter().map(|record| words_of(record)).collect();
    let mut holders: std::collections::HashMap<&Token, usize> = std::collections::HashMap::new();
    for words in &candidates {
        for word in words {
            *holders.entry(word).or_default() += 1;
        }
    }
    candidates
        .iter()
        .map(|words| {
            words
                .iter()
                .filter(|word| holders.get(word) == Some(&1))
                .take(MAX_NAMES_PER_RECORD)
                .cloned()
                .collect()
        })
        .collect()
}

/// The distinct words of `record` and runs of letters and digits in them that may be a name,
/// before any is compared with the others'.
/// Every check reads the word as it is compared — invisible characters dropped, NFKC, case
/// folded —, so `t\u{200B}he` or a fullwidth `ｔｈｅ` is the common word `the`, not a name.
fn words_of(record: &str) -> Vec<Token> {
    let mut words: Vec<Token> = Vec::new();
    // Told apart by a set, not by searching the list: a record of many distinct words would
    // otherwise cost the square of their count (100,000 words took 10 s).
    let mut seen: std::collections::HashSet<Token> = std::collections::HashSet::new();
    // Each word, and each run of letters and digits in it: `Silva,Ana` holds `ana`, and so
    // does `ana.silva`, for counting who holds a name as for naming.
    let runs = record.split_whitespace().flat_map(|word| {
        let parts: Vec<&str> = word
            .split(|c: char| !c.is_alphanumeric())
            .filter(|part| !part.is_empty() && part.len() < word.len())
            .collect();
        std::iter::once(word).chain(parts)
    });
    for word in runs {
        let Some(token) = name_of(word) else {
            continue;
        };
        let name = token.canonical.as_str();
        if name.chars().count() < MIN_NAME_CHARS
            || !name.chars().any(char::is_alphabetic)
            || NOT_NAMES.contains(&name)
        {
            continue;
        }
        if seen.insert(token.clone()) {
            words.push(token);
        }
    }
    words
}

/// `word` read as a name, as the person's words are read: a plain text (no link, address or
/// number), without a possessive `'s`.
pub(crate) fn name_of(word: &str) -> Option<Token> {
    let word = word.trim_matches(|c: char| !c.is_alphanumeric());
    let token = extract::whole(word).filter(|token| token.kind == Kind::Text)?;
    let stem = without_possessive(&token.canonical);
    if stem.len() == token.canonical.len() {
        return Some(token);
    }
    Some(Token {
        kind: Kind::Text,
        canonical: stem.to_owned(),
    })
}

/// `word` without a possessive `'s` (either apostrophe): `Ana's` is `Ana`.
pub(crate) fn without_possessive(word: &str) -> &str {
    for suffix in ["'s", "'S", "\u{2019}s", "\u{2019}S"] {
        if let Some(stem) = word.strip_suffix(suffix)
            && !stem.is_empty()
        {
            return stem;
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(records: &[&str]) -> Vec<Vec<String>> {
        let records: Vec<String> = records.iter().map(|record| (*record).to_owned()).collect();
        names_by_record(&records)
            .into_iter()
            .map(|names| names.into_iter().map(|name| name.canonical).collect())
            .collect()
    }

    #[test]
    fn names_are_words_of_three_characters_or_more_that_are_no_common_word() {
        assert_eq!(
            names(&["ana.silva - Ana Silva, Product designer (the team) Al ID: 4711 a@b.example"]),
            [["ana", "silva", "product", "designer", "team", "example"]]
        );
        assert_eq!(
            names(&["Ana's and Jonas\u{2019}s mockups"]),
            [["ana", "jonas", "mockups"]]
        );
        assert_eq!(names(&["please send this to them"]), [Vec::<String>::new()]);
    }

    #[test]
    fn a_word_several_records_hold_names_none_of_them() {
        assert_eq!(
            names(&[
                "marco - Marco Bianchi, Release manager",
                "hannah - Hannah Cole, Engineering manager",
                "bob - Bob Diaz",
                "bob.k - Bob Kim",
            ]),
            [
                vec!["marco", "bianchi", "release"],
                vec!["hannah", "cole", "engineering"],
                vec!["diaz"],
                vec!["bob.k", "kim"],
            ]
        );
    }

    #[test]
    fn a_record_reads_at_most_sixteen_names() {
        let many: Vec<String> = (0..40).map(|at| format!("Name{at}x")).collect();
        assert_eq!(names(&[&many.join(" ")])[0].len(), MAX_NAMES_PER_RECORD);
    }

    #[test]
    fn records_are_lines_and_list_elements() {
        let text = ToolResult::ok("c1", "ana.silva - Ana Silva\n\n  \njonas.weber - Jonas");
        assert_eq!(
            records_of(&text),
            ["ana.silva - Ana Silva", "jonas.weber - Jonas"]
        );
        let mut result = ToolResult::ok("c1", "{\"users\": \"everyone in one line\"}");
        result.structured = Some(serde_json::json!({
            "users": [
                {"handle": "alice", "name": "Alice Chen", "teams": [{"team": "Core"}, "Web"]},
                {"handle": "bob", "name": "Bob Diaz"},
                "carol - Carol Jones",
                7
            ],
            "count": 3,
            "query": "everyone"
        }));
        // A list inside an element: its elements are records of their own, never the element's.
        assert_eq!(
            records_of(&result),
            [
                "Core\n",
                "Web",
                "alice\nAlice Chen\n",
                "bob\nBob Diaz\n",
                "carol - Carol Jones",
                "everyone\n",
            ]
        );
        let mut text_field = ToolResult::ok("c3", "");
        text_field.structured = Some(serde_json::json!({"text": "ana - Ana\njonas - Jonas"}));
        assert_eq!(records_of(&text_field), ["ana - Ana", "jonas - Jonas"]);
        let mut one = ToolResult::ok("c2", "");
        one.structured = Some(serde_json::json!({"handle": "dave", "name": "Dave Kim"}));
        assert_eq!(records_of(&one), ["dave\nDave Kim\n"]);
    }

    #[test]
    fn structured_content_is_followed_sixteen_levels_deep() {
        let nested = |levels: usize| {
            let mut value = serde_json::json!({"users": ["xavier - Xavier Ruiz"]});
            for _ in 0..levels {
                value = serde_json::json!({ "inner": value });
            }
            let mut result = ToolResult::ok("c1", "");
            result.structured = Some(value);
            records_of(&result)
        };
        assert_eq!(nested(MAX_DEPTH - 2), ["xavier - Xavier Ruiz"]);
        assert!(nested(MAX_DEPTH).is_empty());
        // Lists count as levels too.
        let listed = |levels: usize| {
            let mut value = serde_json::json!("xavier - Xavier Ruiz");
            for _ in 0..levels {
                value = serde_json::json!([value]);
            }
            let mut result = ToolResult::ok("c2", "");
            result.structured = Some(serde_json::json!({ "users": value }));
            records_of(&result)
        };
        assert_eq!(listed(MAX_DEPTH - 2), ["xavier - Xavier Ruiz"]);
        assert!(listed(MAX_DEPTH + 1).is_empty());
    }

    #[test]
    fn a_result_of_more_records_than_its_bound_gives_none() {
        let lines = |count: usize| -> Vec<String> {
            let lines: Vec<String> = (0..count).map(|at| format!("u{at} - User")).collect();
            records_of(&ToolResult::ok("c1", lines.join("\n")))
        };
        assert_eq!(lines(MAX_RECORDS).len(), MAX_RECORDS);
        assert!(lines(MAX_RECORDS + 1).is_empty());
        let mut many = ToolResult::ok("c2", "");
        let people: Vec<serde_json::Value> = (0..MAX_RECORDS + 1)
            .map(|at| serde_json::json!({"handle": format!("u{at}")}))
            .collect();
        many.structured = Some(serde_json::json!({ "users": people }));
        assert!(records_of(&many).is_empty());
    }
}
