//! Result rules against the spellings an independent attack passed them with (session 62): a
//! card number beside another number or glued to a word, a second IBAN in a sentence, groups
//! joined by dashes of other kinds, a secret after a word character or an escape written out, a
//! pattern rule's match hidden by an invisible or fullwidth character, and a text block's `data`.
//! Each was passed to the model before its fix.

use super::*;
use toolgate::definition::ToolOutput;

/// Whether `text` still shows any of `pieces`.
fn shows_any(text: &str, pieces: &[&str]) -> bool {
    pieces.iter().any(|piece| text.contains(piece))
}

#[test]
fn a_card_number_beside_other_digits_glued_or_grouped_by_any_dash_is_redacted() {
    for text in [
        "2024-01-15 4111111111111111 charged",
        "card 4111 1111 1111 1111 12/26",
        "card 4111 1111 1111 1111 123",
        "qty 2 4111111111111111",
        "card4111111111111111",
        "card_4111111111111111",
        "4111\u{2013}1111\u{2013}1111\u{2013}1111",
        "4111 - 1111 - 1111 - 1111",
        "4111\u{2212}1111\u{2212}1111\u{2212}1111",
        "4111\u{a0}1111\u{a0}1111\u{a0}1111",
        "4111\u{2009}1111\u{202f}1111\u{ff0d}1111",
    ] {
        let returned = Arc::new(Mutex::new(json!(text)));
        let controller = controller(POLICY, &returned);
        let result = result_of(&controller, "read");
        assert!(!result.is_error, "{text}: {result:?}");
        assert!(
            !shows_any(&result.content, &["4111", "1111"])
                && result
                    .content
                    .contains(r#"[redacted by result rule "cards"]"#),
            "{text}: {}",
            result.content
        );
    }
    // What is no card number stays: a number whose Luhn check fails, digits no whole groups
    // of which make 13 to 19 digits, a phone number.
    // Grouped as an American Express card is (4, 6, 5).
    let returned = Arc::new(Mutex::new(json!("amex 3782 822463 10005 ok")));
    let result = result_of(&controller(POLICY, &returned), "read");
    assert_eq!(
        result.content,
        r#"amex [redacted by result rule "cards"] ok"#
    );
    for text in [
        "order 4111 1111 1111 1112",
        // Groups no card is written in: a first group of two digits, or tabs between them.
        "ref 41 1111 1111 1111 11",
        "4111\t1111\t1111\t1111",
        "id 41111111111111111111111",
        "call +1 555 123 4567",
    ] {
        let returned = Arc::new(Mutex::new(json!(text)));
        let result = result_of(&controller(POLICY, &returned), "read");
        assert_eq!(result.content, text);
    }
}

#[test]
fn every_iban_of_a_sentence_is_redacted_however_it_is_glued_or_grouped() {
    for text in [
        "Transfer from DE89 3704 0044 0532 0130 00 to GB29 NWBK 6016 1331 9268 19 today",
        "DE89370400440532013000 GB29NWBK60161331926819",
        "acct_DE89370400440532013000 and acct_GB29NWBK60161331926819",
        "DE89370400440532013000COBADEFF001ACCOUNT, GB29NWBK60161331926819",
        "DE89\t3704\t0044\t0532\t0130\t00 and GB82\tWEST\t1234\t5698\t7654\t32",
        "DE89\u{2013}3704\u{2013}0044\u{2013}0532\u{2013}0130\u{2013}00 / GB29 - NWBK - 6016 - 1331 - 9268 - 19",
    ] {
        let returned = Arc::new(Mutex::new(json!(text)));
        let result = result_of(&controller(POLICY, &returned), "read");
        assert!(!result.is_error, "{text}: {result:?}");
        assert!(
            !shows_any(&result.content, &["3704", "0532", "NWBK", "9268"]),
            "{text}: {}",
            result.content
        );
    }
    // A word that starts like an IBAN but whose check digits fail stays.
    let returned = Arc::new(Mutex::new(json!("ref DE88 3704 0044 0532 0130 00")));
    let result = result_of(&controller(POLICY, &returned), "read");
    assert_eq!(result.content, "ref DE88 3704 0044 0532 0130 00");
}

#[test]
fn a_secret_after_a_word_character_or_an_escape_written_out_labels_the_session() {
    for text in [
        "GET /x?auth=Bearer%20eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk",
        "aws_key%3DAKIAIOSFODNN7EXAMPLE",
        r#"{"log": "line\nghp_abcdefghijklmnopqrstuvwxyz0123456789"}"#,
        "AWS_KEY_AKIAIOSFODNN7EXAMPLE",
        "id9AKIAIOSFODNN7EXAMPLE",
        "AKIAIOSFODNN7EXAMPLE_old",
        r#"{"env": "OPENAI=\nsk-proj-abcdefghijklmnopqrstuv"}"#,
        "key%3Dsk-abcdefghijklmnopqrstuvwx",
        "task-ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ] {
        let returned = Arc::new(Mutex::new(json!(text)));
        let controller = controller(POLICY, &returned);
        result_of(&controller, "read");
        assert_eq!(send(&controller), "ask", "{text}");
    }
    // A word ending in `sk` or `rk` before a long hyphenated name is no key.
    for text in [
        "see task-abcdefghijklmnopqrstuvwxyz",
        "the risk-assessment-for-quarter-three",
        "network_live_abcdefghijklmnopqrstuvwxyz",
    ] {
        let returned = Arc::new(Mutex::new(json!(text)));
        let controller = controller(POLICY, &returned);
        result_of(&controller, "read");
        assert_eq!(send(&controller), "allow", "{text}");
    }
}

/// `read` returning `blocks`, under `policy`.
fn blocks_controller(policy: &str, blocks: Vec<Value>) -> ToolController {
    let output = ToolOutput::new(blocks);
    let registry = ToolRegistry::new([
        ToolDefinition::blocks_async(
            ToolSpec::new("read", "Reads.", json!({"type": "object"})),
            move |_: Value| std::future::ready(Ok::<_, ToolError>(output.clone())),
        )
        .unwrap(),
        ToolDefinition::new(
            ToolSpec::new("send", "Sends.", json!({"type": "object"})),
            |_: &Value| -> Result<String, ToolError> { Ok("sent".to_owned()) },
        )
        .unwrap(),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(policy, &registry).unwrap_or_else(|error| panic!("{error}"));
    ToolController::try_new(registry, policy).unwrap()
}

#[test]
fn a_pattern_rule_reads_the_second_spelling_too() {
    let policy = r#"{
      "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
      "results": [{"id": "order-ids", "tool": "read", "pattern": "ORD-[0-9]{6}",
                   "action": "withhold", "reason": "order ids stay inside"},
                  {"id": "tickets", "tool": "read", "pattern": "TKT-[0-9]{4}",
                   "action": "redact", "reason": "tickets stay inside"}]
    }"#;
    for hidden in [
        "ORD-12\u{200b}3456",
        "ORD-\u{ff11}23456",
        "ORD-12\u{2060}3456",
    ] {
        let controller = blocks_controller(policy, vec![json!({"type": "text", "text": hidden})]);
        let result = result_of(&controller, "read");
        assert!(
            result.is_error && result.content.contains("withheld"),
            "{hidden:?}: {result:?}"
        );
    }
    // A redacting pattern whose match another spelling hides cannot redact it in place: withheld.
    let controller = blocks_controller(
        policy,
        vec![json!({"type": "text", "text": "see TKT-12\u{200b}34 and TKT-5678"})],
    );
    let result = result_of(&controller, "read");
    assert!(result.is_error, "{result:?}");
    // Its own matches, in plain text, are redacted and the marker does not count as a match.
    let controller = blocks_controller(
        policy,
        vec![json!({"type": "text", "text": "see TKT-5678 and\u{a0}more"})],
    );
    let result = result_of(&controller, "read");
    assert!(
        !result.is_error && !result.content.contains("5678"),
        "{result:?}"
    );
}

/// Card numbers and IBANs redacted from every tool's results.
const CARDS: &str = r#"{
  "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
  "results": [{"id": "cards", "tool": "*", "detect": ["card_number", "iban"], "action": "redact",
               "reason": "no payment data to the model"}]
}"#;

#[test]
fn the_data_of_a_block_that_carries_no_payload_there_is_read() {
    let card = "4111111111111111";
    for block in [
        json!({"type": "text", "text": "x", "data": card}),
        json!({"type": "resource_link", "uri": "file:///x", "name": "x", "data": card}),
        json!({"type": "text", "text": "x", "blob": card}),
        json!({"type": "text", "text": "x", "mimeType": format!("text/{card}")}),
        json!({"text": "x", "data": card}),
        json!({"type": 7, "data": card}),
    ] {
        let controller = blocks_controller(CARDS, vec![block.clone()]);
        let result = result_of(&controller, "read");
        let shown = serde_json::to_string(&result).unwrap();
        assert!(!shown.contains(card), "{block}: {shown}");
    }
    // An image's data and media type are its payload, not text: a base64 image holding digits
    // that pass Luhn is not changed.
    let image = json!({"type": "image", "data": card, "mimeType": "image/png"});
    let controller = blocks_controller(CARDS, vec![image]);
    let shown = serde_json::to_string(&result_of(&controller, "read")).unwrap();
    assert!(shown.contains(card), "{shown}");
}

/// What a second attack on the detectors above found (session 62).
mod second_attack {
    use super::*;

    /// `read` returning `text`, under [`POLICY`] without its size bound (the long texts here
    /// would be withheld for their size alone); the result, and what `send` then gets.
    fn read(text: &str) -> (ToolResult, &'static str) {
        let returned = Arc::new(Mutex::new(json!(text)));
        let policy = POLICY.replace(r#""max_bytes": 10000"#, r#""max_bytes": 100000000"#);
        let controller = controller(&policy, &returned);
        let result = result_of(&controller, "read");
        (result, send(&controller))
    }

    #[test]
    fn words_ending_like_a_short_token_prefix_are_read_in_one_pass() {
        // Each `sk-` after a letter was searched again to the end of the run: 512 KB of `task-`
        // took 106 s. Now one pass; nothing is labelled or changed.
        let text = "task-".repeat(100_000);
        let (result, after) = read(&text);
        assert_eq!(result.content.len(), text.len());
        assert_eq!(after, "allow");
        let (_, after) = read(&format!(
            "{}-sk-proj-abcdefghijklmnopqrstuv",
            "ask-ant".repeat(20_000)
        ));
        assert_eq!(
            after, "ask",
            "a token at the end of such a run is still found"
        );
    }

    #[test]
    fn secrets_after_other_escapes_and_other_token_shapes_label_the_session() {
        for text in [
            "KEY=3Dsk-proj-abcdefghijklmnopqrstuv",
            r"{\u003esk-proj-abcdefghijklmnopqrstuv}",
            r"key\x3dsk_live_abcdefghijklmnopqrstuvwx",
            "OPENAI_API_KEY\tsk-proj-abcdefghijklmnopqrstuv",
            "xapp-1-A0123456789-abcdefghij",
            "xoxe-1-abcdefghijklmnop",
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0In0.",
        ] {
            assert_eq!(read(text).1, "ask", "{text}");
        }
    }

    #[test]
    fn an_iban_after_a_word_that_starts_like_one_is_redacted_whole() {
        for text in [
            "Miete KW10 an DE89 3704 0044 0532 0130 00",
            "Invoice KW12 paid to DE89 3704 0044 0532 0130 00",
            "DE89370400440532013000\tGB82WEST12345698765432",
        ] {
            let (result, _) = read(text);
            assert!(
                !shows_any(&result.content, &["0532", "WEST", "98765432"]),
                "{text}: {}",
                result.content
            );
        }
        // IBANs of several countries and lengths, each redacted.
        for iban in [
            "NO9386011117947",
            "BE68539007547034",
            "NL91ABNA0417164300",
            "CH9300762011623852957",
            "ES9121000418450200051332",
            "FR1420041010050500013M02606",
            "IT60X0542811101000000123456",
            "MT84MALT011000012345MTLCAST001S",
        ] {
            let (result, _) = read(&format!("pay {iban} today"));
            assert!(
                !result.content.contains(&iban[4..]),
                "{iban}: {}",
                result.content
            );
        }
    }

    #[test]
    fn prose_identifiers_and_numeric_tables_stay_as_they_are() {
        for text in [
            "Flight AF77 to Berlin departs from gate 12 at noon today",
            "Model AD42 ships next week to every customer in the region",
            "id ca02135e-92b1-4c3d-8e7f-0d7ac3baea9e",
            "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
            "0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0",
            "2024-03-07\t831\t3507\t53111090\t2992\t36",
            "Filesystem 1K-blocks Used\n/dev/sda1\t102400\t51200\t51200\t50%\n",
        ] {
            let (result, _) = read(text);
            assert_eq!(result.content, text);
        }
    }

    #[test]
    fn overlapping_matches_are_one_redaction() {
        // Windows of one run that each pass Luhn, and overlap.
        let (result, _) = read("cards 4111 1111 1111 1111 4111 1111 1111 1111 end");
        assert_eq!(
            result.content,
            r#"cards [redacted by result rule "cards"] end"#
        );
    }

    #[cfg(feature = "unicode")]
    #[test]
    fn the_second_reading_keeps_tabs_and_line_breaks() {
        // A fullwidth card in a numbered row: the tab no longer glues `1` to it.
        let (result, _) = read("1\t\u{ff14}\u{ff11}\u{ff11}\u{ff11} 1111 1111 1111");
        assert!(result.is_error, "{result:?}");
        let (result, _) = read("Qty 5\n4111\u{2002}1111\u{2002}1111\u{2002}1111");
        assert!(
            result.is_error || !result.content.contains("1111"),
            "{result:?}"
        );
        let (_, after) = read("OPENAI_API_KEY\tsk-proj-ab\u{ad}cdefghijklmnopqrstuv");
        assert_eq!(after, "ask");
    }

    #[test]
    fn a_resource_field_of_a_block_that_is_no_resource_is_read() {
        let card = "4111111111111111";
        let block = json!({"type": "text", "text": "x", "resource": {"blob": card}});
        let controller = blocks_controller(CARDS, vec![block]);
        let shown = serde_json::to_string(&result_of(&controller, "read")).unwrap();
        assert!(!shown.contains(card), "{shown}");
        // An embedded resource's own blob is its payload.
        let block = json!({"type": "resource", "resource": {"uri": "file:///x", "blob": card}});
        let controller = blocks_controller(CARDS, vec![block]);
        let shown = serde_json::to_string(&result_of(&controller, "read")).unwrap();
        assert!(shown.contains(card), "{shown}");
    }
}
