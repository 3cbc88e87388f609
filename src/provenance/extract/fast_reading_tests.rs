//! The fast readings (a plain word read whole, IBAN check digits reduced once per 7 characters)
//! held equal to the readings they stand in for: recording and lookup must agree, or a value is
//! recorded as one kind and looked up as another.

use super::*;

/// ISO 13616's MOD 97-10 as written: one remainder per character.
fn iban_checks_by_the_letter(iban: &str) -> bool {
    let rearranged = iban[4..].chars().chain(iban[..4].chars());
    let mut remainder: u32 = 0;
    for c in rearranged {
        let Some(value) = c.to_digit(36) else {
            return false;
        };
        remainder = (remainder * if value >= 10 { 100 } else { 10 } + value) % 97;
    }
    remainder == 1
}

#[test]
fn the_fast_iban_check_agrees_with_the_standard_on_every_near_miss() {
    // Real IBANs of 15 to 32 characters, then every one-character change of each and every
    // length cut: the fast check reduces once per 7 characters, so lengths and letters (two
    // decimal digits each) past each reduction are what could go wrong.
    let ibans = [
        "NO9386011117947",
        "BE68539007547034",
        "DE89370400440532013000",
        "GB82WEST12345698765432",
        "FR7612739000700012345678959",
        "MT84MALT011000012345MTLCAST001S",
        "LC55HEMM000100010012001200023015",
    ];
    let alphabet = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZaz-";
    let mut compared = 0;
    for short in ["", "G", "GB", "GB8"] {
        assert!(!numbers::iban_checks(short), "{short:?}");
    }
    // Four characters are a whole (if short) reading: `0001` rearranged is 1, which checks.
    for four in ["0001", "0002", "AB01"] {
        assert_eq!(
            numbers::iban_checks(four),
            iban_checks_by_the_letter(four),
            "{four}"
        );
    }
    assert!(numbers::iban_checks("0001"));
    for iban in ibans {
        assert!(numbers::iban_checks(iban), "{iban}");
        // Lowercase letters count as their capitals.
        assert!(numbers::iban_checks(&iban.to_ascii_lowercase()), "{iban}");
        for length in 4..=iban.len() {
            let cut = &iban[..length];
            assert_eq!(
                numbers::iban_checks(cut),
                iban_checks_by_the_letter(cut),
                "{cut}"
            );
        }
        for at in 0..iban.len() {
            for &replacement in alphabet {
                let mut changed = iban.as_bytes().to_vec();
                changed[at] = replacement;
                let changed = String::from_utf8(changed).expect("ASCII");
                assert_eq!(
                    numbers::iban_checks(&changed),
                    iban_checks_by_the_letter(&changed),
                    "{changed}"
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 6_000, "{compared}");
}

#[test]
fn a_plain_word_is_read_whole_as_the_general_reading_reads_it() {
    // `whole` reads a word of ASCII letters and digits without scanning it; recording and
    // lookup must agree with the general reading on every such word, or a value would be
    // recorded as one kind and looked up as another.
    let mut words: Vec<String> = Vec::new();
    for iban in [
        "GB82WEST12345698765432",
        "DE89370400440532013000",
        "MT84MALT011000012345MTLCAST001S",
        "NO9386011117947",
        "LC55HEMM000100010012001200023015",
    ] {
        for length in 1..=iban.len() {
            words.push(iban[..length].to_owned());
            words.push(iban[..length].to_ascii_lowercase());
            words.push(format!("{}x", &iban[..length]));
            words.push(format!("9{}", &iban[..length]));
        }
        words.push(format!("{iban}{iban}"));
    }
    for length in 1..=40 {
        words.push("7".repeat(length));
        words.push(format!("{}A", "1".repeat(length)));
        words.push(format!("A{}", "1".repeat(length)));
    }
    // Pseudo-random words over an alphabet heavy in digits and IBAN letters.
    let alphabet = b"0123456789GBDEWSTabcxyz";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..20_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let length = 1 + (state >> 58) as usize % 36;
        let word: String = (0..length)
            .map(|at| {
                let pick = (state >> (at % 48)) as usize ^ at.wrapping_mul(31);
                char::from(alphabet[pick % alphabet.len()])
            })
            .collect();
        words.push(word);
    }
    for word in &words {
        let general = whole_in_general(word)
            .0
            .map(|token| (token.kind, token.canonical));
        // The fast reading decides every word but those an IBAN may be glued into: two letters
        // and a digit past its start.
        match whole_word(word) {
            Some(token) => assert_eq!(Some((token.kind, token.canonical)), general, "{word:?}"),
            None => assert!(
                super::may_glue_an_iban(word) || word.len() >= 15,
                "{word:?}"
            ),
        }
        assert_eq!(
            whole(word).map(|token| (token.kind, token.canonical)),
            general
        );
    }
}

mod sentence_ends {
    use proptest::prelude::*;

    use super::*;

    /// Text built of what decides whether a full stop's or a colon's chunk holds a value: dots
    /// and colons before letters, digits, spaces and the end, `www`, every other byte a chunk is
    /// read for, the punctuation trimmed off a value, and non-ASCII full stops; and what the
    /// number scans read: amounts and their currencies, IBAN groups, long numbers.
    fn prose() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a", "Ex", "ample", "9", "42", ".", ". ", ".\n", "..", "www", "WwW", "http", "s", ":",
            "//", "/", "@", "#", "\\", "~", ",", ")", "(", "[", "](", "\"", "'", " ", "-", "e.g.",
            "mailto:", "\u{3002}", "\u{FF0E}", "é", "=", "?", "&", "%2F", ": ", ":\n", ":\t", "::",
            "8443", "1,450.00", "1.450,00", "1'450", "35,-", " EUR ", "€", "$", "USD", " euros",
            "DE89", "3704", "0044", "0532", "013000", "00095028", "₹",
        ]);
        prop::collection::vec(pieces, 0..30).prop_map(|pieces| pieces.concat())
    }

    /// `text` gives the same values whether the chunks the scan skips are read or not.
    fn assert_read_alike(text: &str) {
        let (mut skipping, mut every) = (Vec::new(), Vec::new());
        scan_skipping(text, &mut skipping, true);
        scan_skipping(text, &mut every, false);
        skipping.sort_unstable();
        every.sort_unstable();
        assert_eq!(skipping, every, "{text:?}");
    }

    #[test]
    fn a_full_stop_ending_www_is_read_as_every_other_spelling_of_it() {
        // `www.` with no letter after it is read as a link's start; its full stop is never
        // skipped, however it is cased or wherever it stands.
        for text in [
            "www.",
            "WWW.",
            "wWw.)",
            "see www., then",
            "(www.)",
            "www..,a",
            "x www. y",
            "awww.",
            "a.www.",
            "ww.",
            "www.\n",
            "www.-evil",
            "WWW.-a-b",
            "(www._x)",
        ] {
            assert_read_alike(text);
        }
    }

    #[test]
    fn a_colon_ending_a_label_is_skipped_and_one_before_more_is_read() {
        // A colon with white space or nothing after it starts no read; one with anything after
        // it may be a scheme's (`http:a` is `http://a/`) or a port's, and is read.
        for text in [
            "http:a",
            "https:evil",
            "HTTPS:evil.example",
            "mailto:a%40b.example",
            "Paragraph 12: see https://a.example/x",
            "Note:\nwww.evil.example",
            "Ref:\ta@b.example",
            "host.example:",
            "host.example:8443/pay",
            "12:30",
            "a::b",
            "https:",
            "https:\n//evil.example/pay",
        ] {
            assert_read_alike(text);
        }
    }

    proptest! {
        // Each case costs microseconds; the rare spellings (`http:a`) need thousands.
        #![proptest_config(ProptestConfig::with_cases(5_000))]
        #[test]
        fn skipping_the_full_stops_that_end_sentences_reads_the_same_values(text in prose()) {
            let (mut skipping, mut every) = (Vec::new(), Vec::new());
            scan_skipping(&text, &mut skipping, true);
            scan_skipping(&text, &mut every, false);
            skipping.sort_unstable();
            every.sort_unstable();
            prop_assert_eq!(skipping, every, "{:?}", text);
        }
    }
}

#[test]
fn a_word_no_iban_can_be_glued_into_is_read_without_a_scan() {
    for word in ["hello", "x1y2z3", "A1B2C3D4E5F6", "12ab", "ab12", "a", "Q3"] {
        assert!(whole_word(word).is_some(), "{word}");
    }
    for word in ["IBANDE89370400440532013000", "xAB12", "ref12ab34"] {
        assert!(whole_word(word).is_none(), "{word}");
    }
}
