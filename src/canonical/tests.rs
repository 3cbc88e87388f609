//! Canonical JSON and digests: one spelling per meaning, another digest for any change.

use super::*;
use serde_json::json;

#[test]
fn integral_numbers_past_i64_have_one_spelling_as_integer_or_float() {
    for (a, b) in [
        ("1e19", "10000000000000000000"),
        ("-9.223372036854775808e18", "-9223372036854775808"),
        ("9.223372036854775808e18", "9223372036854775808"),
        ("1.8446744073709551615e19", "18446744073709551616"),
        ("-0.0", "0"),
        ("4.2e1", "42"),
    ] {
        let (a, b): (Value, Value) = (
            serde_json::from_str(a).unwrap(),
            serde_json::from_str(b).unwrap(),
        );
        assert_eq!(canonical_json(&a), canonical_json(&b), "{a} {b}");
        assert_eq!(digest(&a), digest(&b), "{a} {b}");
    }
    assert_eq!(canonical_json(&json!(1e19)), "10000000000000000000");
    assert_eq!(canonical_json(&json!(-1e19)), "-1e19");
    assert_eq!(canonical_json(&json!(2e19)), "2e19");
    assert_eq!(canonical_json(&json!(0.5)), "5e-1");
}

#[test]
fn keys_are_sorted_and_whitespace_dropped() {
    let value: Value =
        serde_json::from_str(r#"{ "b": 1, "a": {"d": [1, 2], "c": null} }"#).unwrap();
    assert_eq!(
        canonical_json(&value),
        r#"{"a":{"c":null,"d":[1,2]},"b":1}"#
    );
}

#[test]
fn one_spelling_per_number() {
    for spelling in ["1", "1.0", "1e0", "10e-1", "0.1e1"] {
        let value: Value = serde_json::from_str(spelling).unwrap();
        assert_eq!(canonical_json(&value), "1", "{spelling}");
    }
    let half: Value = serde_json::from_str("0.5").unwrap();
    let half_again: Value = serde_json::from_str("5e-1").unwrap();
    assert_eq!(canonical_json(&half), canonical_json(&half_again));
    assert_ne!(canonical_json(&json!(1)), canonical_json(&json!(2)));
    assert_eq!(canonical_json(&json!(u64::MAX)), u64::MAX.to_string());
    assert_eq!(canonical_json(&json!(-0.0)), "0");
}

#[test]
fn same_meaning_same_digest_any_change_differs() {
    let a: Value = serde_json::from_str(r#"{"x": 1.0, "y": "é"}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"y":"\u00e9","x":1}"#).unwrap();
    assert_eq!(digest(&a), digest(&b));
    assert_ne!(digest(&a), digest(&json!({"x": 1, "y": "e"})));
    assert_ne!(digest(&json!({"x": "1"})), digest(&json!({"x": 1})));
    assert!(digest(&a).starts_with("sha256:"));
    assert_eq!(digest(&a).len(), 7 + 64);
}

#[test]
fn strings_are_escaped_exactly_as_serde_json_does() {
    let mut texts: Vec<String> = (0_u32..0x100)
        .filter_map(char::from_u32)
        .map(|c| format!("a{c}b"))
        .collect();
    texts.extend(["", "plain", "é\u{2028}\u{fffd}😀", "\"", "\\", "\u{7f}"].map(str::to_owned));
    for text in texts {
        let mut out = String::new();
        push_string(&mut out, &text);
        assert_eq!(out, serde_json::to_string(&text).unwrap(), "{text:?}");
    }
}

#[test]
fn integers_print_as_display_does() {
    for integer in [0, 1, -1, 9, 10, -10, 1_000_000_007, i64::MIN, i64::MAX] {
        assert_eq!(canonical_json(&json!(integer)), integer.to_string());
    }
    for integer in [u64::MAX, u64::MAX - 1, 1 << 63] {
        assert_eq!(canonical_json(&json!(integer)), integer.to_string());
    }
    assert_eq!(canonical_json(&json!(-1e15)), "-1000000000000000");
}

#[test]
fn call_digest_hashes_tool_definition_and_canonical_arguments_in_one_pass() {
    let arguments = json!({"path": "/work/a.txt", "n": 1.0});
    let mut hasher = Sha256::new();
    hasher.update(b"write_file\0sha256:def\0");
    hasher.update(br#"{"n":1,"path":"/work/a.txt"}"#);
    let expected = hex_digest(&hasher.finalize());
    // The first computation fills the thread's prefix cache, the second reads it.
    for _ in 0..2 {
        assert_eq!(
            call_digest("write_file", "sha256:def", &arguments),
            expected
        );
    }
    let hash = call_hash(call_prefix("write_file", "sha256:def"), &arguments);
    assert!(digest_is(&expected, &hash));
    assert_eq!(hex_digest(&hash), expected);
    assert_eq!(
        ArgumentHash::of(&arguments).text(),
        digest(&json!({"n": 1, "path": "/work/a.txt"}))
    );
}

#[test]
fn digest_is_accepts_only_the_exact_lowercase_text() {
    let hash: [u8; 32] = Sha256::digest(b"x").into();
    let text = hex_digest(&hash);
    assert!(digest_is(&text, &hash));
    for wrong in [
        text.to_uppercase(),
        text.replacen("sha256:", "sha512:", 1),
        text[..text.len() - 1].to_owned(),
        format!("{text}0"),
        text.replacen("sha256:", "", 1),
        String::new(),
    ] {
        assert!(!digest_is(&wrong, &hash), "{wrong}");
    }
    let mut other = hash;
    other[31] ^= 1;
    assert!(!digest_is(&text, &other));
}

/// The streamed hash is the hash of `canonical_json`'s text, for every kind of value: escapes,
/// numbers, text longer than the buffer, and nesting past the recursion bound (which takes the
/// text path).
#[test]
fn streamed_hash_equals_the_hash_of_the_canonical_text() {
    let mut deep = json!({"x": 1});
    for _ in 0..150 {
        deep = json!({"d": [deep]});
    }
    let values = [
        json!(null),
        json!(true),
        json!(-0.0),
        json!(1.5e300),
        json!(u64::MAX),
        json!(i64::MIN),
        json!("quote \" backslash \\ control \u{1} é 😀"),
        json!({"b": [1, 2.5, {"z": null, "a": false}], "a": "", "": {}}),
        json!([[], {}, [[[]]]]),
        json!({"long": "x".repeat(1000), "keys": {"é": 1, "e": 2, "E": 3}}),
        deep,
    ];
    for value in values {
        assert_eq!(
            ArgumentHash::of(&value).0,
            <[u8; 32]>::from(Sha256::digest(canonical_json(&value).as_bytes())),
            "{}",
            canonical_json(&value).chars().take(80).collect::<String>()
        );
        let mut expected = call_prefix("t", "sha256:d");
        expected.update(canonical_json(&value).as_bytes());
        let expected: [u8; 32] = expected.finalize().into();
        assert_eq!(call_hash(call_prefix("t", "sha256:d"), &value), expected);
    }
}

#[test]
fn cached_prefixes_never_mix_tools_or_definitions() {
    let arguments = json!({"a": 1});
    let fresh = |tool: &str, definition: &str| {
        let mut hasher = Sha256::new();
        hasher.update(tool.as_bytes());
        hasher.update([0]);
        hasher.update(definition.as_bytes());
        hasher.update([0]);
        hasher.update(canonical_json(&arguments).as_bytes());
        hex_digest(&hasher.finalize())
    };
    // More pairs than the cache holds, each asked twice, in an order that evicts.
    let pairs: Vec<(String, String)> = (0..2 * CACHED_PREFIXES_PER_THREAD + 3)
        .map(|i| (format!("tool_{}", i % 5), format!("sha256:{i}")))
        .collect();
    for round in 0..2 {
        for (tool, definition) in pairs.iter().skip(round) {
            assert_eq!(
                call_digest(tool, definition, &arguments),
                fresh(tool, definition)
            );
        }
    }
    // Moving the separator between tool and definition changes the digest.
    assert_ne!(
        call_digest("ab", "c", &arguments),
        call_digest("a", "bc", &arguments)
    );
}

#[test]
fn hex_digests_are_lowercase_pairs_of_every_byte() {
    assert_eq!(hex_digest(&[0x00, 0xff, 0x1a]), "sha256:00ff1a");
    let long: Vec<u8> = (0..40).collect();
    let expected: String = long.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex_digest(&long), format!("sha256:{expected}"));
}

#[test]
fn hex_is_written_four_bytes_at_a_time_as_byte_by_byte() {
    // Every byte at each of the four places of a word, among two fillers, then every length
    // up to 32 bytes (words and a rest).
    let by_bytes = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    for byte in 0..=u8::MAX {
        for at in 0..4 {
            for filler in [0x00, 0xff, 0x9a] {
                let mut word = [filler; 4];
                word[at] = byte;
                assert_eq!(hex_lower(&word), by_bytes(&word), "{word:?}");
            }
        }
    }
    let bytes: Vec<u8> = (0..32_u8)
        .map(|n| n.wrapping_mul(37).wrapping_add(11))
        .collect();
    for len in 0..=bytes.len() {
        assert_eq!(
            hex_lower(&bytes[..len]),
            by_bytes(&bytes[..len]),
            "{len} bytes"
        );
    }
}

#[test]
fn deep_values_do_not_overflow() {
    let mut value = json!(0);
    for _ in 0..100_000 {
        value = Value::Array(vec![value]);
    }
    assert_eq!(canonical_json(&value).len(), 200_001);
    crate::definition::drop_deep(value);
}
