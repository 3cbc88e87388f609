//! Strings a JSON Schema `pattern` accepts, built from the pattern's syntax tree (regex-syntax's
//! HIR): the analysis needs a valid call for a tool whose string fields carry patterns, and one
//! value per class that fits them. Every string built here is checked again by the schema's own
//! validator before it is used; a pattern this cannot read (look-around, back-references: ECMA
//! 262 constructs regex-syntax refuses) gives no string.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Strings the unanchored `pattern` matches, built a few ways (the first choice of every class
/// and alternative, the last, and with each repetition one longer), and `fresh` put before and
/// after one of them: candidates that differ from any literal a rule names. Empty when the
/// pattern cannot be read.
pub(super) fn matching(pattern: &str, fresh: &str) -> Vec<String> {
    let Ok(hir) = regex_syntax::ParserBuilder::new().build().parse(pattern) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for choice in [Choice::First, Choice::Last, Choice::Longer] {
        let mut text = String::new();
        if build(&hir, choice, &mut text, 0) && !out.contains(&text) {
            out.push(text);
        }
    }
    if let Some(first) = out.first().cloned() {
        // An unanchored pattern also matches with anything around the match: those come first,
        // since no literal can hold the fresh name.
        out.insert(0, format!("{fresh}{first}"));
        out.insert(0, format!("{first}{fresh}"));
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    First,
    Last,
    Longer,
}

/// Appends a match of `hir` to `out`; `false` when there is none to build (an empty class, a
/// look-around that cannot be satisfied plainly, too deep a tree).
fn build(hir: &Hir, choice: Choice, out: &mut String, depth: usize) -> bool {
    if depth > 64 || out.len() > 4096 {
        return false;
    }
    match hir.kind() {
        HirKind::Empty => true,
        HirKind::Literal(literal) => match std::str::from_utf8(&literal.0) {
            Ok(text) => {
                out.push_str(text);
                true
            }
            Err(_) => false,
        },
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            // A letter or digit where the class has one, so the string reads plainly.
            let plain = |c: char| c.is_ascii_alphanumeric();
            let picked = match choice {
                Choice::Last => ranges.last().map(|range| range.end()),
                _ => ranges
                    .iter()
                    .flat_map(|range| (range.start()..=range.end()).take(128))
                    .find(|c| plain(*c))
                    .or_else(|| ranges.first().map(|range| range.start())),
            };
            picked.is_some_and(|c| {
                out.push(c);
                true
            })
        }
        HirKind::Class(Class::Bytes(class)) => class
            .ranges()
            .iter()
            .map(|range| range.start())
            .find(u8::is_ascii)
            .is_some_and(|byte| {
                out.push(char::from(byte));
                true
            }),
        // Anchors and word boundaries: the string built is checked by the validator anyway.
        HirKind::Look(_) => true,
        HirKind::Repetition(repetition) => {
            let times = match choice {
                Choice::Longer => repetition
                    .max
                    .map_or(repetition.min + 1, |max| max.min(repetition.min + 1)),
                _ => repetition.min,
            };
            (0..times.min(64)).all(|_| build(&repetition.sub, choice, out, depth + 1))
        }
        HirKind::Capture(capture) => build(&capture.sub, choice, out, depth + 1),
        HirKind::Concat(parts) => parts.iter().all(|part| build(part, choice, out, depth + 1)),
        HirKind::Alternation(options) => {
            let option = match choice {
                Choice::Last => options.last(),
                _ => options.first(),
            };
            option.is_some_and(|option| build(option, choice, out, depth + 1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matching;

    #[test]
    fn strings_are_built_for_the_patterns_real_servers_declare() {
        for (pattern, expected) in [
            ("^ORD-[0-9]{6}$", "ORD-000000"),
            ("^[a-z]+@[a-z]+\\.example$", "a@a.example"),
            ("^(dev|staging|prod)$", "dev"),
            ("abc", "abc"),
        ] {
            let built = matching(pattern, "zz");
            assert_eq!(
                built.get(2).map(String::as_str),
                Some(expected),
                "{pattern}"
            );
            assert_eq!(built[0], format!("{expected}zz"));
        }
        assert!(
            matching("^a(?=b)", "zz").is_empty(),
            "look-ahead is not read"
        );
        assert!(matching("(a", "zz").is_empty());
        let built = matching("[0-9]+", "zz");
        assert!(built.contains(&"0zz".to_owned()) && built.contains(&"zz0".to_owned()));
    }
}
