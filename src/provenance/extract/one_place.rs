//! Whether an argument read as one value (`value`, `host`) names one place: the value toolgate
//! reads must be where the call goes, or a rule judges one place and the call goes to another.

use super::chunk_values::chunk_tokens;
use super::readable;

/// Whether `text`, read as one value, names one place, as a renderer or a mail client would take
/// it. Not so — and then not judged, the rule's action holding — for:
/// - a chunk holding more than one Markdown `](`: links chained, nested or glued, where the
///   reader and a renderer take different targets (`[x](https://evil.example)](https://good.example)`);
/// - one `](` not in a Markdown link (`https://evil.example/](https://good.example)` goes to
///   `evil.example`);
/// - a Markdown link whose target reads as no value (an entity, an escape, a relative path):
///   its text is no stand-in for where it goes;
/// - more than one address in one chunk (`a@x,b@y`, `mailto:a@x?cc=b@y`): the call goes to each.
pub(crate) fn names_one_place(text: &str) -> bool {
    // Most arguments (an IBAN, a link, an id) hold none of the bytes that make two places: one
    // pass decides them, before the reading (a provenance condition costs about twice a flow
    // rule, and this is on its path).
    let plain = |byte: &u8| byte.is_ascii() && !matches!(byte, b']' | b'@' | b'%');
    if text.bytes().all(|byte| plain(&byte)) {
        return true;
    }
    let text = readable(text, false);
    let trimmed = text.trim();
    // Where the call goes: a Markdown link's target, else the text.
    let mut place = trimmed;
    match trimmed.matches("](").count() {
        0 => {}
        1 => {
            let link = trimmed.strip_prefix('!').unwrap_or(trimmed);
            let Some((_, target)) = link.split_once("](") else {
                return false;
            };
            let mut found = Vec::new();
            if !link.starts_with('[') || chunk_tokens(target, &mut found).is_none() {
                return false;
            }
            place = target;
        }
        _ => return false,
    }
    let chunked = !place.contains(char::is_whitespace);
    // `%40` in any case, counted without a lowered copy.
    let encoded = place
        .as_bytes()
        .windows(3)
        .filter(|three| three.eq_ignore_ascii_case(b"%40"))
        .count();
    let at_signs = place.matches('@').count() + encoded;
    !(chunked && at_signs > 1)
}

#[cfg(test)]
mod tests {
    use super::super::{Reading, host_of, whole, whole_reading};
    use super::*;

    #[test]
    fn chained_glued_or_textless_links_and_address_lists_name_no_one_place() {
        for text in [
            "https://evil.example/](https://good.example)",
            "https://evil.example#](https://good.example)",
            "evil.example/](good.example)",
            "<https://evil.example/](https://good.example)>",
            "[x](https://evil.example)](https://good.example)",
            "[x](https://evil.example)\\](https://good.example)",
            "[x](https://evil.example/](https://good.example))",
            "[[x](https://evil.example)](https://good.example)",
            "[x](https://evil.example)[y](https://good.example)",
            "[x](mailto:evil@evil.example)](mailto:good@good.example)",
            "[x](https://evil.example) and ](https://good.example)",
            "https://evil.example/ ](https://good.example)",
            "[https://good.example](<//evil.example>)",
            "[https://good.example](https&#58;//evil.example)",
            "[https://good.example](https\\://evil.example)",
            "[good@good.example](mailto:evil&#64;evil.example)",
            "[https://good.example](/pay)",
            "good@good.example,evil@evil.example",
            "good@good.example;evil@evil.example",
            "mailto:good@good.example?cc=evil@evil.example",
            "mailto:good@good.example?cc=evil%40evil.example",
            "mailto:good@good.example?cc=evil%40EVIL.example",
            "mailto:good@good.example?bcc=evil%4aevil.example%40x",
        ] {
            assert!(!names_one_place(text), "{text}");
        }
        for text in [
            "https://good.example/page?q=1",
            "[Docs](https://docs.example/start)",
            "![logo](https://cdn.example/logo.png)",
            "[boss@good.example](mailto:evil@evil.example)",
            "mailto:alice@good.example",
            "alice@good.example",
            "Alice Example <alice@good.example>",
            "https://r.example/?q=https://t.example/",
            "DE89 3704 0044 0532 0130 00",
            "plain words",
        ] {
            assert!(names_one_place(text), "{text}");
        }
    }

    #[test]
    fn a_markdown_links_value_and_host_are_its_targets_not_its_texts() {
        let value = |text: &str| whole(text).map(|token| token.canonical);
        assert_eq!(
            value("[alice@good.example](mailto:mallory@evil.example)").as_deref(),
            Some("mallory@evil.example")
        );
        assert_eq!(
            value("[https://good.example/](https://evil.example/x)").as_deref(),
            Some("https://evil.example/x")
        );
        let (host, reading) = host_of("[good.example](https://evil.example/x)");
        assert_eq!(reading, Reading::Whole);
        assert_eq!(
            host.map(|token| token.canonical).as_deref(),
            Some("evil.example")
        );
        // A text spending the nesting budget: the reading is cut, and names no value.
        let spent = format!("[{}](mallory@evil.example)", "a://".repeat(24));
        assert_eq!(whole_reading(&spent), (None, Reading::Cut));
        assert_eq!(host_of(&spent), (None, Reading::Cut));
    }
}
