//! What a second independent attack found (session 63): a later decoding can hide what an
//! earlier one shows (`\\4111` is `\4111`, then octal `\411`), so every round is read.

use super::*;

#[test]
fn a_card_an_earlier_round_shows_is_never_shown() {
    let shown: Vec<&str> = [
        r"<td>\\4111&nbsp;1111&nbsp;1111&nbsp;1111</td>",
        "<td>&amp;#4111&nbsp;1111&nbsp;1111&nbsp;1111</td>",
        r#"{"card": "\\4111\u00a01111\u00a01111\u00a01111"}"#,
    ]
    .into_iter()
    .filter(|text| {
        let result = read_back(text);
        !result.is_error || result.content.contains("1111")
    })
    .collect();
    assert!(shown.is_empty(), "shown: {shown:#?}");
}
