//! Result rules read a result as its reader does: a web page's character references decoded
//! (`4111&nbsp;1111…`, `&#65;KIA…`) and a JSON document's escapes decoded (`\u00a0`, `\u005f`).
//! What only that reading finds cannot be redacted where it is written: a redacting rule
//! withholds the result, a labelling rule labels the session.

use super::*;

fn read_back(text: &str) -> ToolResult {
    let returned = Arc::new(Mutex::new(json!(text)));
    result_of(&controller(POLICY, &returned), "read")
}

#[test]
fn a_card_number_or_iban_spelled_with_references_or_escapes_is_never_shown() {
    for text in [
        "<td>4111&nbsp;1111&nbsp;1111&nbsp;1111</td>",
        "<td>4111&#32;1111&#x20;1111&NonBreakingSpace;1111</td>",
        "card &#52;111111111111111 on file",
        "<td>DE89&nbsp;3704&nbsp;0044&nbsp;0532&nbsp;0130&nbsp;00</td>",
        r#"{"card": "4111\u00a01111\u00a01111\u00a01111"}"#,
        r#"{"iban": "DE89\u20133704\u20130044\u20130532\u20130130\u201300"}"#,
    ] {
        let result = read_back(text);
        assert!(
            result.is_error
                && !["1111", "3704"]
                    .iter()
                    .any(|piece| result.content.contains(piece)),
            "{text}: {result:?}"
        );
        assert!(result.content.contains(r#"result rule "cards""#), "{text}");
    }
}

#[test]
fn a_secret_spelled_with_references_or_escapes_labels_the_session() {
    for text in [
        "<code>&#65;KIAIOSFODNN7EXAMPLE</code>",
        "<code>AKIA&#x49;OSFODNN7EXAMPLE</code>",
        r#"{"token": "ghp\u005fabcdefghijklmnopqrstuvwxyz0123456789"}"#,
    ] {
        let returned = Arc::new(Mutex::new(json!(text)));
        let controller = controller(POLICY, &returned);
        assert!(!result_of(&controller, "read").is_error, "{text}");
        assert_eq!(send(&controller), "ask", "{text}");
    }
}

#[test]
fn a_text_whose_references_hide_nothing_passes_unchanged() {
    for text in [
        "AT&T &amp; R&D: order 4111 1111 1111 1112",
        "<p>Fish &amp; chips &#8212; &euro;12</p>",
        r#"{"path": "C:\\new\\table", "note": "caf\u00e9"}"#,
    ] {
        let result = read_back(text);
        assert!(!result.is_error, "{text}: {result:?}");
        assert_eq!(result.content, text);
    }
}

mod attacked;
mod attacked_again;
