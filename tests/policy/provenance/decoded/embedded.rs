//! A JSON document inside other text — a fenced block a question follows, a document and a
//! footer, JSON lines and a closing line — is read whole, as a document that ends the text is
//! (each failed before: the values were read as text, and a hotel's name in a string was not
//! seen). Brackets in prose (citations, lists of numbers) read nothing, and a page of hundreds
//! of them overflows no session. The rest is what an independent attack on the first version
//! found (session 64).

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
    // Distinct citations past the values a result may add, a quote, a list of numbers.
    let citations: String = (1..=toolgate::provenance::MAX_VALUES_PER_RESULT + 88)
        .map(|n| format!("as shown [{n}], "))
        .collect();
    let page = format!("\"Quoted\" {citations} and [1, 2, 3].");
    assert!(!asked(&page, "Hotel Aurora"));
    // A string of the fourth document deep, holding a quote and a bracket but no document:
    // nothing is nested past the depth read, and nothing is cut.
    let mut text = json!({"note": "say \"hi\" [sic] twice"}).to_string();
    for _ in 0..3 {
        text = json!({ "a": text }).to_string();
    }
    assert!(!asked(&text, "Hotel Aurora"), "{text}");
}

#[test]
fn a_decoded_document_is_read_where_the_text_as_written_holds_a_small_one() {
    // Each failed on the first version: the text's own `["k"]` was read, and its decodings'
    // documents were not looked for.
    let pages = [
        r#"{&quot;hotel&quot;: &quot;Mallory Inn&quot;} [a] [b] [c] ["k"]"#.to_owned(),
        r#"{\"hotel\": \"Mallory Inn\"} [a] [b] [c] ["k"]"#.to_owned(),
        r#"<script type="application/ld+json">{"@type": "WebPage"}</script><pre>{&quot;hotel&quot;: &quot;Mallory Inn&quot;}</pre><p>Book now</p>"#.to_owned(),
        r#"{"ok": "yes"} then "{\"hotel\": \"Mallory Inn\"}" end"#.to_owned(),
        // A document escaped as HTML in a string of one, and past a citation the text ends with.
        json!({"html": "<pre>{&quot;hotel&quot;: &quot;Mallory Inn&quot;}</pre>"}).to_string(),
        r#"See [1]. Result: {"hotel": "Mallory Inn", "stars": 3} (cached) [2]"#.to_owned(),
        // Inside a value that never closes; after an open quote.
        r#"["a", {"hotel": "Mallory Inn", "stars": 3} x"#.to_owned(),
        r#"Note [" {"hotel": "Mallory Inn"} end"#.to_owned(),
    ];
    let unseen: Vec<&String> = pages
        .iter()
        .filter(|page| !asked(page, "Mallory Inn"))
        .collect();
    assert!(unseen.is_empty(), "not seen: {unseen:#?}");
}

#[test]
fn a_document_past_the_depth_read_overflows_however_it_is_spelled() {
    // An HTML-escaped document in a string of the fourth document deep: the first version
    // neither read it nor overflowed the session.
    let mut text = json!({"html": "{&quot;hotel&quot;: &quot;Mallory Inn&quot;}"}).to_string();
    for _ in 0..3 {
        text = json!({ "a": text }).to_string();
    }
    assert!(asked(&text, "Hotel Aurora"), "{text}");
    // Documents inside a page's script, a string of the fourth deep a small one: not read past
    // the depth, as no value of one is past a result's bound, and it overflows nothing (the
    // second version overflowed the session for it; the first read none of it).
    let mut text = json!({"d": "row[\"k\"]"}).to_string();
    for _ in 0..3 {
        text = json!({ "a": text }).to_string();
    }
    let page = format!("<script>{text}</script>");
    assert!(!asked(&page, "Hotel Aurora"), "{page}");
}

#[test]
fn a_decoding_s_document_the_text_ends_with_counts_as_one_beside_a_small_one_as_written() {
    // The second version read a decoding only for documents inside other text once the text as
    // written held a small one: a document of 600 strings overflowed the session no more, and
    // one broken by a trailing comma was not read in part. (Past a result's bound, as 600 were.)
    let fill: Vec<String> = (0..toolgate::provenance::MAX_VALUES_PER_RESULT + 88)
        .map(|n| format!("a{n:04} filler"))
        .collect();
    let escaped = json!(fill).to_string().replace('"', "&quot;");
    assert!(asked(
        &format!("[a] [b] [c] [d] [\"k\"]\n{escaped}"),
        "Hotel Aurora"
    ));
    for page in [
        r#"{&quot;hotel&quot;: &quot;Mallory Inn&quot;,} ["k"]&quot;"#,
        r#"{\"hotel\": \"Mallory Inn\", \"stars\": 3,} ["k"]\n"#,
    ] {
        assert!(asked(page, "Mallory Inn"), "{page}");
    }
}

#[test]
fn pages_and_programs_full_of_small_documents_overflow_no_session() {
    // A page's script data of 600 distinct strings: the first are seen, none overflows.
    let items: Vec<String> = (0..600).map(|n| format!("Item {n:03}")).collect();
    let page = format!(
        r#"<html><script id="__NEXT_DATA__" type="application/json">{}</script><p>Hotels</p></html>"#,
        json!({"props": {"items": items}})
    );
    assert!(!asked(&page, "Hotel Aurora"));
    assert!(asked(&page, "Item 001"));
    // A program indexing by strings, and a log of one line many times, with a footer.
    let program: String = (0..300)
        .map(|n| format!("x{n} = row[\"a{n}\"] + row[\"b{n}\"]\n"))
        .collect();
    assert!(!asked(&program, "Hotel Aurora"));
    let log = format!(
        "{}-- end of log",
        "{\"level\": \"info\", \"ok\": \"yes\"}\n".repeat(17_000)
    );
    assert!(!asked(&log, "Hotel Aurora"));
}

#[test]
fn a_page_of_script_data_read_again_and_again_overflows_no_session() {
    // A third attack: 512 values of the page's script recorded at each read, counted against
    // the session's 100,000, overflowed it at the 195th read. They are counted apart now, and
    // past their own bound are left unrecorded: the page's links and lines still count.
    let items: Vec<String> = (0..600).map(|n| format!("Item {n:03}")).collect();
    let page = format!(
        r#"<script id="__NEXT_DATA__">{}</script><p>See https://shop.example/sale</p>"#,
        json!({"props": {"items": items}})
    );
    let controller = after_reading(&page);
    for _ in 0..200 {
        let read = controller.handle(ToolCall::new("read", "read_page", json!({})));
        assert_eq!(outcome_word(read), "allow");
    }
    assert_eq!(
        decided(&controller, "book", json!({"hotel": "Hotel Aurora"})),
        "allow"
    );
    assert_eq!(
        decided(&controller, "book", json!({"hotel": "Item 001"})),
        "ask"
    );
    assert_eq!(
        decided(
            &controller,
            "fetch",
            json!({"url": "https://shop.example/sale"})
        ),
        "ask"
    );
}
