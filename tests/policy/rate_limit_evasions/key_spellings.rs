//! Key spellings: one recipient, many spellings (case, escapes, duplicates, list forms, nesting),
//! share one count.

use super::*;

#[test]
fn key_spelling_case_escapes_duplicates_and_list_forms_share_one_count() {
    let bench = bench(ONE_PER_RECIPIENT_CI);
    assert!(mail_runs(&bench, r#"{"to": "Bob@Example.com"}"#));
    for same in [
        r#"{"to": "bob@example.com"}"#,
        r#"{"to": "BOB@EXAMPLE.COM"}"#,
        r#"{"to": "\u0062ob@example.com"}"#,
        r#"{"to": "\u0042OB@EXAMPLE.COM"}"#,
        r#"{"to": ["bob@example.com"]}"#,
        r#"{"to": ["bob@example.com", "BOB@example.com"]}"#,
        r#"{"to": ["carol@example.com", "bob@example.com"]}"#,
    ] {
        assert!(!mail_runs(&bench, same), "{same} ran past the cap");
    }
    // The refused list took no slot for carol (all or none).
    assert!(mail_runs(&bench, r#"{"to": "carol@example.com"}"#));
    assert_eq!(bench.runs.load(Ordering::SeqCst), 2);
}

#[test]
fn key_spelling_case_insensitive_is_unicode_case_folding_final_sigma_and_long_s() {
    // Σ lowercases to ς at the end of a word and to σ elsewhere; ſ (long s) uppercases to S.
    // Under Unicode case folding "ΟΔΟΣ" = "οδοσ" and "ſam" = "SAM".
    let bench = bench(ONE_PER_RECIPIENT_CI);
    assert!(mail_runs(&bench, r#"{"to": "ΟΔΟΣ"}"#));
    assert!(
        !mail_runs(&bench, r#"{"to": "οδοσ"}"#),
        "final sigma spelled as a plain sigma got a fresh count"
    );
    assert!(mail_runs(&bench, r#"{"to": "SAM"}"#));
    assert!(
        !mail_runs(&bench, r#"{"to": "ſam"}"#),
        "long s got a fresh count"
    );
}

#[test]
fn key_spelling_missing_empty_list_and_absent_key_share_the_none_count() {
    let bench = bench(ONE_PER_RECIPIENT_CI);
    assert!(mail_runs(&bench, r#"{"body": "no recipient"}"#));
    assert!(!mail_runs(&bench, r#"{"to": []}"#));
    assert!(!mail_runs(&bench, r#"{}"#));
    // null is no recipient: it shares the "none" count too, alone or in lists.
    assert!(!mail_runs(&bench, r#"{"to": null}"#));
    assert!(!mail_runs(&bench, r#"{"to": [null]}"#));
    assert!(!mail_runs(&bench, r#"{"to": [[], [null]]}"#));
}

#[test]
fn key_spelling_nested_lists_of_one_recipient_get_no_fresh_count() {
    // `notify.to` is any list (a plausible loose schema). Each element is counted; a nested
    // list is an element of its own, so re-wrapping one recipient would make a new key.
    let limit = r#"{"id": "per-recipient", "tool": "notify", "max": 1, "per": "day",
        "over": "deny", "key": {"pointer": "/to"}, "reason": "one note a day to one recipient"}"#;
    let bench = bench(limit);
    assert!(ran(&send(&bench, "notify", json!({"to": ["bob"]}))));
    for wrapped in [
        json!({"to": [["bob"]]}),
        json!({"to": [[["bob"]]]}),
        json!({"to": [["bob", "bob"]]}),
    ] {
        assert!(
            !ran(&send(&bench, "notify", wrapped.clone())),
            "{wrapped} reached bob again past the cap"
        );
    }
}

#[test]
fn key_spelling_case_insensitive_reaches_text_inside_objects_and_nested_lists() {
    let limit = r#"{"id": "per-recipient", "tool": "notify", "max": 1, "per": "day",
        "over": "deny", "key": {"pointer": "/to", "case_insensitive": true},
        "reason": "one note a day to one recipient"}"#;
    let bench = bench(limit);
    assert!(ran(&send(
        &bench,
        "notify",
        json!({"to": [{"email": "bob@example.com"}]})
    )));
    assert!(
        !ran(&send(
            &bench,
            "notify",
            json!({"to": [{"email": "BOB@example.com"}]})
        )),
        "a case-insensitive key compared text inside an object by case"
    );
}

#[test]
fn key_spelling_more_than_64_keys_deny_but_many_spellings_of_64_count() {
    let limit = r#"{"id": "per-recipient", "tool": "send_email", "max": 2, "per": "day",
        "over": "deny", "key": {"pointer": "/to", "case_insensitive": true},
        "reason": "two mails a day to one recipient"}"#;
    let bench = bench(limit);
    let distinct: Vec<String> = (0..65).map(|i| format!("user{i}@example.com")).collect();
    assert!(!ran(&send(&bench, "send_email", json!({"to": distinct}))));
    // 64 recipients, each spelled three ways: 64 keys, within the bound.
    let spelled: Vec<String> = (0..64)
        .flat_map(|i| {
            let base = format!("user{i}@example.com");
            [
                base.clone(),
                base.to_uppercase(),
                format!("User{i}@Example.com"),
            ]
        })
        .collect();
    assert!(ran(&send(&bench, "send_email", json!({"to": spelled}))));
    // The 65-key call took nothing: each recipient has one of its two slots left.
    assert!(ran(&send(
        &bench,
        "send_email",
        json!({"to": "user0@example.com"})
    )));
    assert!(!ran(&send(
        &bench,
        "send_email",
        json!({"to": "USER0@example.com"})
    )));
}
