//! What an independent attack on the decoded readings found (session 63): card numbers and
//! tokens a model reads that result rules passed — escaped twice, split by HTML's invisible
//! characters, in Python's escapes.
use super::*;

fn shown(text: &str) -> bool {
    let result = read_back(text);
    !result.is_error && result.content.contains("1111")
}

/// A JSON document carried as a string of a JSON text: escaped twice, decoded once.
#[test]
fn a_card_in_json_in_a_json_string_is_never_shown() {
    let inner = r#"{"card": "4111\u00a01111\u00a01111\u00a01111"}"#;
    let text = json!({ "payload": inner }).to_string();
    assert!(!shown(&text), "{text}");
}

/// HTML's names of invisible characters and spaces missing from `NAMED`.
#[test]
fn a_card_split_by_an_html_invisible_character_is_never_shown() {
    for name in [
        "&shy",
        "&NegativeVeryThinSpace;",
        "&ApplyFunction;",
        "&ThickSpace;",
    ] {
        let text = format!("<td>4111{name}1111{name}1111{name}1111</td>");
        assert!(!shown(&text), "{text}");
    }
}

/// Python escapes not decoded.
#[test]
fn a_card_or_token_in_python_escapes_is_judged() {
    for text in [
        r"<td>4111\0401111\0401111\0401111</td>",
        r"4111\U000000201111\U000000201111\U000000201111",
    ] {
        assert!(!shown(text), "{text}");
    }
    let returned = Arc::new(Mutex::new(json!(
        r"tok ghp\137abcdefghijklmnopqrstuvwxyz0123456789"
    )));
    let controller = controller(POLICY, &returned);
    let _ = result_of(&controller, "read");
    assert_eq!(send(&controller), "ask");
}
