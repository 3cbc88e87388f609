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
    let at_signs = place.matches('@').count() + place.to_ascii_lowercase().matches("%40").count();
    !(chunked && at_signs > 1)
}

#[cfg(test)]
mod tests {
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
}
