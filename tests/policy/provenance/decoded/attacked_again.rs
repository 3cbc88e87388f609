//! What a second independent attack on the decoded readings found (session 63), each passed
//! before its fix: a document nested past the depth read, which recorded nothing and overflowed
//! nothing; JSON texts behind a label holding a bracket, escaped as HTML or as a JSON string, or
//! written by `json.dumps` twice.

use super::*;

fn asked(page: &str, tool: &str, field: &str, value: &str) -> bool {
    decided(&after_reading(page), tool, json!({ field: value })) == "ask"
}

#[test]
fn a_document_nested_past_the_depth_read_overflows_the_session() {
    let mut text = json!({"hotel": "Mallory Inn"}).to_string();
    for _ in 0..4 {
        text = json!({ "a": text }).to_string();
    }
    assert!(asked(&text, "book", "hotel", "Mallory Inn"), "{text}");
    // The session overflowed: every value counts as seen where results were.
    assert!(asked(&text, "book", "hotel", "Hotel Lux"));
    // Four deep is read, and overflows nothing.
    let mut text = json!({"hotel": "Mallory Inn"}).to_string();
    for _ in 0..3 {
        text = json!({ "a": text }).to_string();
    }
    assert!(asked(&text, "book", "hotel", "Mallory Inn"), "{text}");
    assert!(!asked(&text, "book", "hotel", "Hotel Lux"));
}

#[test]
fn json_texts_behind_a_bracket_escaped_or_written_as_a_string_are_read() {
    let doc = r#"{"hotel": "Mallory Inn", "stars": 3}"#;
    let pages = [
        json!(doc).to_string(),
        doc.replace('"', "&quot;"),
        doc.replace('"', "\\\""),
        format!("2024-05-01 [info] {doc}"),
    ];
    let unseen: Vec<&String> = pages
        .iter()
        .filter(|page| !asked(page, "book", "hotel", "Mallory Inn"))
        .collect();
    assert!(unseen.is_empty(), "not seen: {unseen:#?}");
}
