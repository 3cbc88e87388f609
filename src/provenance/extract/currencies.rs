//! Currencies beside a number: what makes a number an amount of money (`€ 35`, `35 EUR`,
//! `Rs. 1,200`, `1.200,– €`), and whether a text speaks of money at all.

/// Currency symbols and symbol-like spellings, matched as written: beside a number they make it
/// an amount.
const SYMBOLS: [&str; 30] = [
    "€", "$", "£", "¥", "₹", "₩", "₽", "₺", "₪", "₫", "₴", "₦", "฿", "₿", "₱", "₡", "₸", "₾", "₼",
    "₲", "₵", "₭", "₮", "₨", "zł", "Kč", "R$", "US$", "A$", "C$",
];

/// Signs that speak of money without making the number beside them an amount read in
/// hundredths (cents, yen and yuan written in their own script).
const MONEY_SIGNS: [&str; 8] = ["¢", "₣", "﷼", "円", "元", "圓", "₠", "₧"];

/// Currency codes and names that make a number beside them an amount, compared without case
/// (but see [`UPPERCASE_ONLY`]); each must stand as a word of its own.
const NAMES: [&str; 46] = [
    "eur", "usd", "gbp", "chf", "jpy", "cny", "inr", "aud", "cad", "nzd", "sek", "nok", "dkk",
    "pln", "czk", "huf", "ron", "bgn", "try", "zar", "brl", "mxn", "sgd", "hkd", "krw", "ils",
    "aed", "sar", "rub", "uah", "thb", "php", "idr", "myr", "vnd", "ngn", "egp", "kes", "clp",
    "cop", "ars", "euro", "euros", "dollar", "dollars", "yen",
];

/// Codes that are also words (`try`, `Ron`, `cad`, `php`): a currency only in capitals.
const UPPERCASE_ONLY: [&str; 37] = [
    "jpy", "cny", "inr", "aud", "cad", "nzd", "sek", "nok", "dkk", "pln", "czk", "huf", "ron",
    "bgn", "try", "zar", "brl", "mxn", "sgd", "hkd", "krw", "ils", "aed", "sar", "rub", "uah",
    "thb", "php", "idr", "myr", "vnd", "ngn", "egp", "kes", "clp", "cop", "ars",
];

/// Words that speak of money but are also units, weekdays or abbreviations (`12 ft`, `10
/// pounds of rice`, `Fr. 12.05.`): they turn `if_person_named` on, never make an amount.
const MONEY_WORDS: [&str; 34] = [
    "pound", "pounds", "quid", "rs", "fr", "ft", "kr", "lei", "zl", "kc", "cent", "cents", "buck",
    "bucks", "rupee", "rupees", "peso", "pesos", "yuan", "baht", "rand", "reais", "zloty",
    "forint", "krona", "kronor", "krone", "kroner", "lira", "dirham", "riyal", "ruble", "rubles",
    "franc",
];

/// [`NAMES`] as [`name_key`]s, sorted: a word next to a number is looked up in a few
/// comparisons, not forty (a page of prose has a word beside most of its numbers).
static NAME_KEYS: [u64; NAMES.len()] = sorted_keys(NAMES);
static UPPERCASE_ONLY_KEYS: [u64; UPPERCASE_ONLY.len()] = sorted_keys(UPPERCASE_ONLY);
static MONEY_WORD_KEYS: [u64; MONEY_WORDS.len()] = sorted_keys(MONEY_WORDS);

const fn sorted_keys<const N: usize>(names: [&str; N]) -> [u64; N] {
    let mut keys = [0; N];
    let mut index = 0;
    while index < N {
        keys[index] = match name_key(names[index].as_bytes()) {
            Some(key) => key,
            None => panic!("a currency name longer than 7 letters"),
        };
        index += 1;
    }
    // Insertion sort: a `const` context has no `sort`.
    let mut sorted = 1;
    while sorted < N {
        let mut at = sorted;
        while at > 0 && keys[at - 1] > keys[at] {
            let swapped = keys[at - 1];
            keys[at - 1] = keys[at];
            keys[at] = swapped;
            at -= 1;
        }
        sorted += 1;
    }
    keys
}

/// A word of up to 7 ASCII letters as one number, lower-cased, its length in the top byte.
const fn name_key(word: &[u8]) -> Option<u64> {
    if word.is_empty() || word.len() > 7 {
        return None;
    }
    let mut key = (word.len() as u64) << 56;
    let mut at = 0;
    while at < word.len() {
        if !word[at].is_ascii_alphabetic() {
            return None;
        }
        key |= (word[at].to_ascii_lowercase() as u64) << (8 * at);
        at += 1;
    }
    Some(key)
}

/// The shortest and the longest of [`NAMES`], in letters.
const NAME_LENGTHS: std::ops::RangeInclusive<usize> = {
    let (mut shortest, mut longest, mut index) = (usize::MAX, 0, 0);
    while index < NAMES.len() {
        let length = NAMES[index].len();
        if length < shortest {
            shortest = length;
        }
        if length > longest {
            longest = length;
        }
        index += 1;
    }
    shortest..=longest
};

/// Whether the ASCII `word` is a currency code or name.
fn is_name(word: &[u8]) -> bool {
    // Most words beside a number are shorter or longer than every name (`is`, `Paragraph`).
    if !NAME_LENGTHS.contains(&word.len()) {
        return false;
    }
    let Some(key) = name_key(word) else {
        return false;
    };
    NAME_KEYS.binary_search(&key).is_ok()
        && (word.iter().all(u8::is_ascii_uppercase)
            || UPPERCASE_ONLY_KEYS.binary_search(&key).is_err())
}

/// Whether `word` (letters, or a symbol) is a currency.
pub(super) fn is_currency(word: &[u8]) -> bool {
    // Every symbol holds a `$` or a character past ASCII: a word of letters is compared with none.
    let may_be_symbol = word.iter().any(|&byte| byte == b'$' || !byte.is_ascii());
    may_be_symbol && SYMBOLS.iter().any(|symbol| symbol.as_bytes() == word)
        || is_name(word.strip_suffix(b".").unwrap_or(word))
}

/// Where the currency ending right before `start` starts (`EUR`, `€`, `Rs.`, `EUR:`; at most two
/// spaces between), if one does.
pub(super) fn currency_before(bytes: &[u8], start: usize) -> Option<usize> {
    let mut end = start;
    for _ in 0..2 {
        if let Some(width) = space_before(&bytes[..end]) {
            end -= width;
        }
    }
    if end > 0 && bytes[end - 1] == b':' {
        end -= 1;
    }
    let head = &bytes[..end];
    let last = *head.last()?;
    if (last == b'$' || !last.is_ascii())
        && let Some(symbol) = SYMBOLS
            .iter()
            .find(|symbol| head.ends_with(symbol.as_bytes()))
    {
        return Some(end - symbol.len());
    }
    let letters = head.strip_suffix(b".").unwrap_or(head);
    let word = letters.len() - letter_run(letters.iter().rev())?;
    // A name glued to a letter outside ASCII is part of a longer word.
    let glued = word > 0 && !letters[word - 1].is_ascii();
    (word < letters.len() && !glued && is_name(&letters[word..])).then_some(word)
}

/// Where the currency starting at `end` ends (`EUR`, `€`, `euros`; after `,-`, `,–` or `,--`,
/// and at most two spaces), if one does.
pub(super) fn currency_after(bytes: &[u8], end: usize) -> Option<usize> {
    let mut start = end;
    if matches!(bytes.get(start), Some(b',' | b'.')) {
        for dash in [",--", ".--", ",–", ".–", ",-", ".-"] {
            if bytes[start..].starts_with(dash.as_bytes()) {
                start += dash.len();
                break;
            }
        }
    }
    for _ in 0..2 {
        if let Some(width) = space_after(&bytes[start..]) {
            start += width;
        }
    }
    let tail = &bytes[start..];
    let first = *tail.first()?;
    // Symbols start with `$`, a character outside ASCII, or one of these letters (`zł`, `R$`).
    if (first == b'$' || !first.is_ascii() || b"zKRUAC".contains(&first))
        && let Some(symbol) = SYMBOLS
            .iter()
            .find(|symbol| tail.starts_with(symbol.as_bytes()))
    {
        return Some(start + symbol.len());
    }
    let word = letter_run(tail.iter())?;
    // A name followed by a letter outside ASCII is part of a longer word.
    let glued = tail.get(word).is_some_and(|next| !next.is_ascii());
    (word > 0 && !glued && is_name(&tail[..word])).then_some(start + word)
}

/// How many ASCII letters `bytes` starts with; `None` past 7, the longest name: a longer run is
/// a word, found without reading it all.
fn letter_run<'a>(bytes: impl Iterator<Item = &'a u8>) -> Option<usize> {
    let run = bytes
        .take(8)
        .take_while(|byte| byte.is_ascii_alphabetic())
        .count();
    (run < 8).then_some(run)
}

/// Whether `text` speaks of money: a currency symbol, code or name, or a word for money
/// (`€ fifty`, `20 bucks`, `3000円`, `٣٥ €`) anywhere in it, with or without a number that can
/// be read (read as every text is: invisible characters dropped, NFKC with `unicode`).
pub(crate) fn mentions_money(text: &str) -> bool {
    let text = super::readable(text, false);
    SYMBOLS
        .iter()
        .chain(&MONEY_SIGNS)
        .any(|symbol| text.contains(symbol))
        || text.split(|c: char| !c.is_ascii_alphabetic()).any(|word| {
            is_name(word.as_bytes())
                || name_key(word.as_bytes())
                    .is_some_and(|key| MONEY_WORD_KEYS.binary_search(&key).is_ok())
        })
}

/// Whether `bytes` starts with a currency symbol or a space of any width.
pub(super) fn symbol_or_space_at(bytes: &[u8]) -> bool {
    space_after(bytes).is_some()
        || SYMBOLS
            .iter()
            .any(|symbol| bytes.starts_with(symbol.as_bytes()))
}

/// The width of one space ending `bytes`.
fn space_before(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [.., b' '] => Some(1),
        [.., 0xC2, 0xA0] => Some(2),
        [.., 0xE2, 0x80, 0x89 | 0xAF] => Some(3),
        _ => None,
    }
}

/// The width of one space starting `bytes`.
fn space_after(bytes: &[u8]) -> Option<usize> {
    match bytes {
        [b' ', ..] => Some(1),
        [0xC2, 0xA0, ..] => Some(2),
        [0xE2, 0x80, 0x89 | 0xAF, ..] => Some(3),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortcuts_skip_no_currency() {
        // A symbol is compared only when the word holds a `$` or a byte past ASCII.
        for symbol in SYMBOLS {
            assert!(
                symbol.bytes().any(|byte| byte == b'$' || !byte.is_ascii()),
                "{symbol}"
            );
            assert!(is_currency(symbol.as_bytes()), "{symbol}");
        }
        // A name is looked up only when its length is a name's.
        assert_eq!(NAME_LENGTHS, 3..=7);
        for name in NAMES {
            assert!(is_name(name.to_ascii_uppercase().as_bytes()), "{name}");
            assert!(is_currency(
                format!("{}.", name.to_ascii_uppercase()).as_bytes()
            ));
        }
        for word in ["", "e", "eu", "euross", "dollarss", "Paragraph"] {
            assert!(!is_name(word.as_bytes()), "{word}");
        }
    }
}
