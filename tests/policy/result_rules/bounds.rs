//! What the card and IBAN detectors' docs promise at their bounds, which no other test held
//! (found by surviving mutants of `src/rules/results/grouped.rs`): a card's 19 digits and its
//! first group of four, up to three separators between groups, an IBAN of each length the
//! countries issue, and none starting inside a word.

use super::*;

const REDACTED: &str = r#"[redacted by result rule "cards"]"#;

/// What the model is shown of `text`, returned by `read` under [`POLICY`].
fn shown(text: &str) -> String {
    let returned = Arc::new(Mutex::new(json!(text)));
    result_of(&controller(POLICY, &returned), "read").content
}

#[test]
fn a_card_is_read_to_19_digits_from_a_first_group_of_four() {
    assert_eq!(
        shown("card 4111111111111111003 ok"),
        format!("card {REDACTED} ok")
    );
    // A quantity before a card is no group of it, though the digits together pass Luhn too.
    assert_eq!(
        shown("qty 18 4111 1111 1111 1111"),
        format!("qty 18 {REDACTED}")
    );
    // A spaced dash of another kind is three separators, as a spaced hyphen is.
    assert_eq!(
        shown("card 4111 \u{2013} 1111 \u{2013} 1111 \u{2013} 1111"),
        format!("card {REDACTED}")
    );
}

#[test]
fn up_to_three_separators_stand_between_an_ibans_groups() {
    assert_eq!(shown("DE89\t\t\t3704\t0044\t0532\t0130\t00"), REDACTED);
    // Four tabs are a table's empty columns: the groups are parted.
    let parted = "DE89\t\t\t\t3704\t0044\t0532\t0130\t00";
    assert_eq!(shown(parted), parted);
}

#[test]
fn an_iban_of_each_length_is_redacted_and_none_starts_inside_a_word() {
    for iban in [
        "SI56263300012039086",
        "AT611904300234573201",
        "AE070331234567890123456",
        "PT50000201231234567890154",
        "TR330006100519786457841326",
        "PL61109010140000071219812874",
        "BR1800360305000010009795493C1",
        "KW81CBKU0000000000001234560101",
        "LC55HEMM000100010012001200023015",
        "RU0204452560040702810412345678901",
    ] {
        assert_eq!(
            shown(&format!("pay {iban} today")),
            format!("pay {REDACTED} today"),
            "{} characters",
            iban.len()
        );
    }
    // Letters and digits that only read as an IBAN from inside a word (a hash, a base64 blob).
    let blob = "blob 9xDE89370400440532013000Qw==";
    assert_eq!(shown(blob), blob);
}
