//! Amounts read from text: the spellings people write read as one value in hundredths, what is
//! not an amount left alone, and every grouping style read back to the value it was written from.

use proptest::prelude::*;

use super::*;

/// The amounts `text` carries, in hundredths, in the order found.
fn amounts(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    assert_eq!(tokens(text, &mut found), Reading::Whole);
    found
        .into_iter()
        .filter(|token| token.kind == Kind::Amount)
        .map(|token| token.canonical)
        .collect()
}

#[test]
fn the_spellings_of_one_amount_read_as_one_value() {
    for spelling in [
        "EUR 1,450.00",
        "1.450,00 €",
        "$1450",
        "1450 USD",
        "EUR1450",
        "1450EUR",
        "CHF 1'450.00",
        "1,450 euros",
        "£1,450",
        "1450,- EUR",
        "1.450.- €",
        "pay 1,450 EUR today.",
        "(EUR 1,450.00)",
    ] {
        assert_eq!(amounts(spelling), ["145000"], "{spelling:?}");
    }
    for (spelling, hundredths) in [
        ("35,5 EUR", "3550"),
        ("EUR 0.01", "1"),
        ("€35", "3500"),
        ("4,440.00 EUR", "444000"),
        ("EUR 1.280,00", "128000"),
        ("The fine is EUR 35.00. Please pay", "3500"),
        ("EUR 35.00 28 days", "3500"),
        ("Room 4 35 EUR", "3500"),
        ("¥1000", "100000"),
        // A plain space groups nothing: the count before an amount is no thousands.
        ("the 2 150 EUR invoices", "15000"),
        ("₹1,50,000", "15000000"),
        ("12,34,567 EUR", "123456700"),
        ("1\u{a0}450,00\u{a0}€", "45000"),
        ("Bitte 1.200,– € überweisen", "120000"),
        ("1.200,-- EUR", "120000"),
        ("(EUR: 1,200)", "120000"),
        ("€  1,200", "120000"),
        ("1 200 zł", "20000"),
        ("CHF 1'200", "120000"),
        ("pay EUR1450 today", "145000"),
        ("35€ each", "3500"),
        ("35 $ each", "3500"),
        // The longest numeral read: 15 digits, 6 separators.
        ("EUR 123456789012345", "12345678901234500"),
        ("₹1,00,00,00,00,000.50", "10000000000050"),
        ("US$ 35", "3500"),
    ] {
        assert_eq!(amounts(spelling), [hundredths], "{spelling:?}");
    }
}

#[test]
fn numbers_without_a_currency_or_in_a_word_are_no_amounts() {
    for text in [
        "pay 35 now",
        "on 14 May 2025 at 10.30",
        "reference PV-2025-088312",
        "35kg of flour",
        "35 European cities",
        "flight AZ405 EUR",
        "1.2345 EUR",
        "1,4500 EUR",
        "version 2.0",
        // Past 15 digits: no amount, not a part of one.
        "EUR 1234567890123456",
        "EUR 1,234,567,890,123,456",
        // Three decimals after a leading zero, four-decimal rates: no amount, not a part of one.
        "tariff €0.325 per kWh",
        "₿0.005",
        "EUR 0.125",
        "at USD 1.0845 per EUR",
        "EUR 1,2345",
        // Codes that are also words are codes only in capitals.
        "if it fails, try 3 times",
        "call Ron 2 times",
        "3 cad drawings",
        // A currency with a number on both sides is neither's.
        "35 EUR 12 months ahead",
        "invoice 4711 EUR 89.90",
        "the 2 $150 invoices",
        // Units, weekdays and abbreviations speak of money at most.
        "the shelf is 12 ft wide",
        "10 pounds of rice",
        "am Fr. 12.05.",
        "Rs. 1,200",
        // A number glued to a character that is neither a currency nor a space, or to letters
        // that are no code, even with a currency beside it.
        "€1½",
        "EUR 35kg",
        // A code at the end of a longer word is no code.
        "éEUR 35",
        "35 EURé",
        "€12th",
        "$5abcdefgh",
    ] {
        assert_eq!(amounts(text), Vec::<String>::new(), "{text:?}");
    }
}

#[test]
fn several_amounts_in_a_text_are_each_read() {
    assert_eq!(
        amounts("The fine is EUR 35.00; after 14 days a late fee of EUR 28.50 applies."),
        ["3500", "2850"]
    );
}

#[test]
fn a_whole_amount_with_or_without_its_currency() {
    let of = |text: &str| amount_of(text).map(|token| token.canonical);
    assert_eq!(of(" 35.50 "), Some("3550".to_owned()));
    assert_eq!(of("EUR 1,450"), Some("145000".to_owned()));
    assert_eq!(of("35,- €"), Some("3500".to_owned()));
    assert_eq!(of("\u{200b}€\u{200b}35"), Some("3500".to_owned()));
    // A `.` before three digits groups them, as in `1.450 €`.
    assert_eq!(of("35.001"), Some("3500100".to_owned()));
    for not_one in ["35 EUR and more", "-35", "about 35", "", "EUR", "35.0001"] {
        assert_eq!(of(not_one), None, "{not_one:?}");
    }
}

#[test]
fn numbers_read_as_amounts_and_as_minor_units() {
    let number = |text: &str| serde_json::from_str::<serde_json::Number>(text).unwrap();
    let amount = |text: &str| amount_of_number(&number(text)).map(|token| token.canonical);
    let minor = |text: &str| amount_of_minor_units(&number(text)).map(|token| token.canonical);
    assert_eq!(amount("35.5"), Some("3550".to_owned()));
    assert_eq!(amount("35"), Some("3500".to_owned()));
    assert_eq!(amount("0.01"), Some("1".to_owned()));
    // An exponent is read as the number it is.
    assert_eq!(amount("1e3"), Some("100000".to_owned()));
    for not_one in ["35.505", "-35", "1e300"] {
        assert_eq!(amount(not_one), None, "{not_one}");
    }
    assert_eq!(minor("3550"), Some("3550".to_owned()));
    assert_eq!(minor("3550.0"), Some("3550".to_owned()));
    for not_one in ["3550.5", "-1", "1e300"] {
        assert_eq!(minor(not_one), None, "{not_one}");
    }
}

/// `hundredths` written with `,` or `.` or `'` (or nothing) between groups, `.` or `,` before
/// its decimals (or none when whole), a currency before or after.
fn written(hundredths: u64, style: usize, currency: usize) -> String {
    let (group, decimal) = [(",", "."), (".", ","), ("'", "."), ("", ","), ("", ".")][style];
    let units = (hundredths / 100).to_string();
    let mut grouped = String::new();
    for (at, digit) in units.chars().enumerate() {
        if at > 0 && (units.len() - at).is_multiple_of(3) {
            grouped.push_str(group);
        }
        grouped.push(digit);
    }
    let cents = hundredths % 100;
    if cents != 0 || style == 0 {
        grouped.push_str(&format!("{decimal}{cents:02}"));
    }
    match currency {
        0 => format!("Total: EUR {grouped}, due now"),
        1 => format!("Total: {grouped} € due now"),
        2 => format!("Total: ${grouped}."),
        _ => format!("Total {grouped}\u{a0}CHF"),
    }
}

proptest! {
    #[test]
    fn every_grouping_style_reads_back_the_amount_it_was_written_from(
        hundredths in 0_u64..100_000_000_000_000,
        style in 0_usize..5,
        currency in 0_usize..4,
    ) {
        let text = written(hundredths, style, currency);
        prop_assert_eq!(amounts(&text), vec![hundredths.to_string()], "{}", text);
    }
}

/// Runs of digits and separators as long as a page: each byte is read a bounded number of times
/// (a numeral reads at most 15 digits and 6 separators), so these take as long as the number
/// scan over them, not the square of their length.
#[test]
fn long_runs_of_digits_and_separators_are_read_without_amounts() {
    for unit in ["1,", "1.", "12,", "1\u{a0}", "00 ", "1", "1,1 EUR "] {
        let text = unit.repeat(1_000_000 / unit.len());
        let found = amounts(&text);
        assert!(
            found.len() <= text.len() / unit.len(),
            "{unit:?}: {}",
            found.len()
        );
    }
    assert_eq!(amounts(&"1".repeat(1_000_000)), Vec::<String>::new());
}

/// Any mix of digits, separators, currencies and characters of several bytes reads without a
/// panic (every slice of the amount readings falls beside an ASCII byte).
#[test]
fn any_mix_of_digits_separators_and_currencies_reads_without_a_panic() {
    let pieces = [
        "1",
        "0",
        "9",
        "12",
        "123",
        ",",
        ".",
        "'",
        " ",
        "-",
        ",-",
        ",–",
        ".-",
        "\u{a0}",
        "\u{202f}",
        "\u{2009}",
        "€",
        "$",
        "£",
        "₿",
        "EUR",
        "eur",
        "try",
        "a",
        "é",
        "\u{200b}",
        "１",
        "٣",
        "\n",
        "kr",
        "US$",
        "₹",
        "zł",
        "Rs.",
        ":",
        "½",
        "ＥＵＲ",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..50_000 {
        let length = (next() % 12) as usize;
        let text: String = (0..length)
            .map(|_| pieces[(next() % pieces.len() as u64) as usize])
            .collect();
        let mut found = Vec::new();
        let _ = tokens(&text, &mut found);
        let _ = amount_of(&text);
        let _ = mentions_money(&text);
    }
}

#[test]
fn a_text_mentions_money_with_a_currency_or_a_word_for_money_anywhere() {
    for text in [
        "Pay the rent, 1.2k EUR",
        "35-40 €",
        "about 50 dollars",
        "12 zł",
        "Pay the gym fifty euros.",
        "Pay the gym € fifty.",
        "20 bucks",
        "500 rupees",
        "500 THB",
        "50¢",
        "3000円",
        "ادفع للنادي ٣٥ €",
        "Rs. 1,200",
    ] {
        assert!(mentions_money(text), "{text:?}");
    }
    for text in [
        "Pay the electricity bill in my inbox",
        "try 3 times",
        "35 kg",
        "500 thb",
    ] {
        assert!(!mentions_money(text), "{text:?}");
    }
}

/// A page of codes glued to digits (`EUR1EUR1…`, `1EUR1EUR…`) is read once: the glued word is
/// looked at no further than the longest code.
#[test]
fn codes_glued_to_digits_are_read_once() {
    for unit in ["EUR1", "1EUR", "USD1a", "$1"] {
        let text = unit.repeat(1_000_000 / unit.len());
        let found = amounts(&text);
        assert!(found.len() <= text.len() / unit.len(), "{unit:?}");
    }
    // The second `EUR` has a number on both sides: neither's (the stricter reading).
    assert_eq!(amounts("EUR1 EUR2"), ["100"]);
    assert_eq!(amounts("EUR1, EUR2"), ["100", "200"]);
}
