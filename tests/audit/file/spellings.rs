//! One spelling per entry: every re-spelling of a valid line — same meaning, other bytes — fails
//! verification at its line, and so does a key named twice (which a JSON parser would quietly
//! collapse to one).

use super::*;

use AuditEntryProblem::{DuplicateKey, HashMismatch, NotAnEntry, NotCanonical, Unchained};

/// Line 5 (seq 4) is a policy decision: it has strings, a number and nested keys to re-spell.
const LINE: usize = 4;

/// (name, how line 5 is re-spelled, the problem reported)
type Spelling = (&'static str, fn(&str) -> String, AuditEntryProblem);

fn time_ms(line: &str) -> String {
    let start = line.find("\"time_ms\":").unwrap() + "\"time_ms\":".len();
    let end = start + line[start..].find(|c: char| !c.is_ascii_digit()).unwrap();
    line[start..end].to_owned()
}

fn hash(line: &str) -> String {
    let start = line.rfind("\"hash\":\"").unwrap() + "\"hash\":\"".len();
    line[start..line.len() - 2].to_owned()
}

/// Moves the member `"key":"value"` (a string value) to just before `before`.
fn move_member(line: &str, key: &str, before: &str) -> String {
    let start = line.find(&format!("\"{key}\":\"")).unwrap();
    let value_start = start + key.len() + 4;
    let end = value_start + line[value_start..].find('"').unwrap() + 1;
    let member = &line[start..end];
    // Take the member out with one of its commas, then put it back with one.
    let rest = if line[end..].starts_with(',') {
        format!("{}{}", &line[..start], &line[end + 1..])
    } else {
        format!("{}{}", &line[..start - 1], &line[end..])
    };
    rest.replacen(before, &format!("{member},{before}"), 1)
}

const CATALOGUE: &[Spelling] = &[
    (
        "duplicate key at top level, same value",
        |l| l.replacen("{\"seq\":4,", "{\"seq\":4,\"seq\":4,", 1),
        DuplicateKey,
    ),
    (
        "duplicate key inside the event, same value",
        |l| l.replacen("\"event\":{", "\"event\":{\"kind\":\"decision\",", 1),
        DuplicateKey,
    ),
    (
        "duplicate key inside the event, other value first",
        |l| l.replacen("\"event\":{", "\"event\":{\"kind\":\"call_received\",", 1),
        DuplicateKey,
    ),
    (
        "duplicate key inside the event, other value last",
        |l| {
            l.replacen(
                "\"kind\":\"decision\"",
                "\"kind\":\"decision\",\"kind\":\"execution_outcome\"",
                1,
            )
        },
        DuplicateKey,
    ),
    (
        "integer written as 1.0",
        |l| {
            let t = time_ms(l);
            l.replacen(&t, &format!("{t}.0"), 1)
        },
        NotCanonical,
    ),
    (
        "integer written as 1e0",
        |l| {
            let t = time_ms(l);
            l.replacen(&t, &format!("{t}e0"), 1)
        },
        NotCanonical,
    ),
    (
        "integer written with an exponent",
        |l| {
            let t = time_ms(l);
            l.replacen(&t, &format!("{}.{}e{}", &t[..1], &t[1..], t.len() - 1), 1)
        },
        NotCanonical,
    ),
    (
        "sequence written as 4.0",
        |l| l.replacen("{\"seq\":4,", "{\"seq\":4.0,", 1),
        NotAnEntry,
    ),
    (
        "sequence with a leading zero",
        |l| l.replacen("{\"seq\":4,", "{\"seq\":04,", 1),
        NotAnEntry,
    ),
    (
        "letter escaped as \\u0061",
        |l| l.replacen("\"allow\"", "\"\\u0061llow\"", 1),
        NotCanonical,
    ),
    (
        "key escaped as \\u006bind",
        |l| l.replacen("\"kind\":", "\"\\u006bind\":", 1),
        NotCanonical,
    ),
    (
        "escaped letter in the hash",
        |l| l.replacen("\"hash\":\"sha256", "\"hash\":\"\\u0073ha256", 1),
        NotCanonical,
    ),
    (
        "space after the opening brace",
        |l| l.replacen("{\"seq\"", "{ \"seq\"", 1),
        NotCanonical,
    ),
    (
        "space after a colon",
        |l| l.replacen("\"seq\":4", "\"seq\": 4", 1),
        NotCanonical,
    ),
    (
        "space inside the event",
        |l| l.replacen("\"event\":{", "\"event\": {", 1),
        NotCanonical,
    ),
    (
        "top-level keys reordered",
        |l| move_member(l, "hash", "\"seq\""),
        NotCanonical,
    ),
    (
        "event keys reordered",
        |l| move_member(l, "kind", "\"action\""),
        NotCanonical,
    ),
    ("trailing spaces", |l| format!("{l}  "), NotCanonical),
    ("tab before the newline", |l| format!("{l}\t"), NotCanonical),
    ("CRLF line ending", |l| format!("{l}\r"), NotCanonical),
    (
        "upper-case hex in the hash",
        |l| {
            let h = hash(l);
            l.replacen(&h, &h.to_uppercase().replacen("SHA256", "sha256", 1), 1)
        },
        HashMismatch,
    ),
    (
        "upper-case prefix of the hash",
        |l| l.replacen("\"hash\":\"sha256:", "\"hash\":\"SHA256:", 1),
        HashMismatch,
    ),
    (
        "upper-case hex in the previous hash",
        |l| {
            let start = l.find("\"prev\":\"sha256:").unwrap() + 15;
            format!(
                "{}{}{}",
                &l[..start],
                l[start..start + 64].to_uppercase(),
                &l[start + 64..]
            )
        },
        Unchained,
    ),
    (
        "an unknown top-level field",
        |l| l.replacen("{\"seq\":4,", "{\"seq\":4,\"note\":1,", 1),
        NotAnEntry,
    ),
    (
        "an extra event field in key order",
        |l| l.replacen("\"event\":{", "\"event\":{\"a\":1,", 1),
        HashMismatch,
    ),
    // Values of kinds no event holds, added in canonical form: each is read as written (the chain
    // hash, not the spelling check, refuses the line).
    (
        "an extra event field holding a negative number",
        |l| l.replacen("\"event\":{", "\"event\":{\"a\":-1,", 1),
        HashMismatch,
    ),
    (
        "an extra event field holding a fraction",
        |l| l.replacen("\"event\":{", "\"event\":{\"a\":5e-1,", 1),
        HashMismatch,
    ),
    (
        "an extra event field holding a list",
        |l| l.replacen("\"event\":{", "\"event\":{\"a\":[1,true],", 1),
        HashMismatch,
    ),
    (
        "an extra event field holding null",
        |l| l.replacen("\"event\":{", "\"event\":{\"a\":null,", 1),
        HashMismatch,
    ),
];

fn respelled(name: &str, spell: fn(&str) -> String) -> TempFile {
    let file = TempFile::new(&format!(
        "spelling-{}",
        name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    ));
    write_some_events(&file);
    let mut lines = file.lines();
    let original = lines[LINE].clone();
    lines[LINE] = spell(&original);
    assert_ne!(
        lines[LINE], original,
        "{name}: the spelling changed nothing"
    );
    file.write_lines(&lines);
    file
}

#[test]
fn every_respelling_of_a_line_fails_at_its_line() {
    assert!(CATALOGUE.len() >= 20);
    for &(name, spell, expected) in CATALOGUE {
        let file = respelled(name, spell);
        match verify_audit_file(&file.0) {
            Err(AuditVerifyError::Broken { line, problem }) => {
                assert_eq!((line, problem), (LINE as u64 + 1, expected), "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(
            matches!(open_waiting(&file.0, false), Err(AuditOpenError::Verify(_))),
            "{name}: not appended to"
        );
    }
}

#[test]
fn respellings_that_keep_the_meaning_parse_to_the_original_entry() {
    // Guards the catalogue itself: these are re-spellings, not edits — a verifier that compared
    // parsed values instead of bytes would accept every one of them.
    let same_meaning = [
        "duplicate key at top level, same value",
        "duplicate key inside the event, same value",
        "duplicate key inside the event, other value first",
        "integer written as 1.0",
        "integer written as 1e0",
        "integer written with an exponent",
        "letter escaped as \\u0061",
        "key escaped as \\u006bind",
        "escaped letter in the hash",
        "space after the opening brace",
        "space after a colon",
        "space inside the event",
        "top-level keys reordered",
        "event keys reordered",
        "trailing spaces",
        "tab before the newline",
        "CRLF line ending",
    ];
    let file = TempFile::new("spelling-meaning");
    write_some_events(&file);
    let original = file.lines()[LINE].clone();
    let parsed = |text: &str| -> serde_json::Value {
        let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
        // 1.0 and 1 differ as serde_json values; compare numbers by their f64 meaning.
        let time = value["event"]["time_ms"].as_f64().unwrap();
        value["event"]["time_ms"] = json!(time);
        value
    };
    for name in same_meaning {
        let (_, spell, _) = CATALOGUE.iter().find(|(n, ..)| *n == name).unwrap();
        assert_eq!(parsed(&spell(&original)), parsed(&original), "{name}");
    }
}

#[test]
fn a_byte_order_mark_on_the_first_line_fails_at_line_1() {
    let file = TempFile::new("spelling-bom");
    write_some_events(&file);
    let mut bytes = "\u{FEFF}".as_bytes().to_vec();
    bytes.extend(file.bytes());
    std::fs::write(&file.0, bytes).unwrap();
    assert!(matches!(
        verify_audit_file(&file.0),
        Err(AuditVerifyError::Broken {
            line: 1,
            problem: NotAnEntry
        })
    ));
}

#[test]
fn a_line_that_is_not_utf8_fails_at_its_line() {
    let file = TempFile::new("spelling-latin1");
    write_some_events(&file);
    let lines = file.lines();
    let mut bytes = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let line = line.as_bytes();
        if index == LINE {
            // "allow" with its 'a' as the Latin-1 byte 0xE1.
            let at = line.windows(7).position(|w| w == b"\"allow\"").unwrap() + 1;
            bytes.extend(&line[..at]);
            bytes.push(0xE1);
            bytes.extend(&line[at + 1..]);
        } else {
            bytes.extend(line);
        }
        bytes.push(b'\n');
    }
    std::fs::write(&file.0, bytes).unwrap();
    assert!(matches!(
        verify_audit_file(&file.0),
        Err(AuditVerifyError::Broken {
            line: 5,
            problem: NotAnEntry
        })
    ));
}

#[test]
fn the_written_spelling_verifies_unchanged() {
    let file = TempFile::new("spelling-baseline");
    write_some_events(&file);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 9);
    let line = &file.lines()[LINE];
    assert!(line.starts_with("{\"seq\":4,\"prev\":\"sha256:"), "{line}");
    assert!(line.contains(",\"event\":{\"action\":\"allow\","), "{line}");
}
