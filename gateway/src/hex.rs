//! Lowercase hex, the one spelling of keys and digests in the gateway's files and output.

/// `bytes` as lowercase hex digits, two per byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|byte| {
            [
                DIGITS[usize::from(byte >> 4)],
                DIGITS[usize::from(byte & 15)],
            ]
        })
        .map(char::from)
        .collect()
}

/// The bytes `text` spells in hex digits (either case), or `None` for an odd length or anything
/// else (a sign, a space: `u8::from_str_radix` alone would take `+f`).
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_byte_round_trips_and_only_hex_digits_decode() {
        let all: Vec<u8> = (0..=255).collect();
        let text = super::encode(&all);
        assert_eq!(&text[..6], "000102");
        assert_eq!(&text[text.len() - 4..], "feff");
        assert_eq!(super::decode(&text), Some(all.clone()));
        assert_eq!(super::decode(&text.to_ascii_uppercase()), Some(all));
        for bad in ["0", "+f", " f", "0g", "é0"] {
            assert_eq!(super::decode(bad), None, "{bad:?}");
        }
        assert_eq!(super::decode(""), Some(Vec::new()));
    }
}
