//! A JSON document inside other text — a fenced block a question follows, a document and a
//! footer, JSON lines and a closing line — is read whole, as a document that ends the text is
//! (each failed before: the values were read as text, and a hotel's name in a string was not
//! seen). Brackets in prose (citations, lists of numbers) read nothing, and a page of hundreds
//! of them overflows no session.

use super::*;

fn asked(page: &str, value: &str) -> bool {
    decided(&after_reading(page), "book", json!({ "hotel": value })) == "ask"
}

#[test]
fn a_document_followed_by_other_text_is_read_whole() {
    let doc = r#"{"hotel": "Mallory Inn", "stars": 3}"#;
    let pretty = serde_json::to_string_pretty(&json!([{"hotel": "Mallory Inn"}])).unwrap();
    let pages = [
        format!("Here is what I found:\n```json\n{doc}\n```\nShall I book it?"),
        format!("{doc}\n\n-- sent from the travel desk"),
        format!("Result: {doc} (cached 5 min ago)."),
        format!("{pretty}\nPage 1 of 1"),
        format!("{{\"hotel\": \"Hotel Lux\"}}\n{doc}\n# 2 lines, end of log"),
        // Escaped as HTML, with text after it.
        format!("<pre>{}</pre><p>Book now!</p>", doc.replace('"', "&quot;")),
    ];
    let unseen: Vec<&String> = pages
        .iter()
        .filter(|page| !asked(page, "Mallory Inn"))
        .collect();
    assert!(unseen.is_empty(), "not seen: {unseen:#?}");
    // And what none of them named is not seen: nothing overflowed.
    let seen: Vec<&String> = pages
        .iter()
        .filter(|page| asked(page, "Hotel Aurora"))
        .collect();
    assert!(seen.is_empty(), "seen or overflowed: {seen:#?}");
}

#[test]
fn brackets_in_prose_record_nothing_and_overflow_no_session() {
    // 600 distinct citations, a quote, a list of numbers: past the 512 a result may add.
    let citations: String = (1..=600).map(|n| format!("as shown [{n}], ")).collect();
    let page = format!("\"Quoted\" {citations} and [1, 2, 3].");
    assert!(!asked(&page, "Hotel Aurora"));
    // A string of the fourth document deep, holding a quote and a bracket but no document (it
    // ends as one would): nothing is nested past the depth read, and nothing is cut.
    let mut text = json!({"note": "say \"hi\" [sic]"}).to_string();
    for _ in 0..3 {
        text = json!({ "a": text }).to_string();
    }
    assert!(!asked(&text, "Hotel Aurora"), "{text}");
}
