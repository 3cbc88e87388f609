//! Text an upstream or a caller wrote, made safe to show an operator (a log line, `check`,
//! `/healthz`): every character that shows nothing spelled out, names cut and quoted.

/// `text` with every character that shows nothing — a control (a line break too), zero-width or
/// bidi character — spelled `\u{…}`: text an upstream wrote, made safe to show an operator.
pub fn escape_invisible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let mut one = [0; 4];
        if toolgate::registry::first_invisible(c.encode_utf8(&mut one)).is_some() {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A name as JSON text, cut to 80 characters, with every character that shows nothing (a
/// zero-width or bidi control, which JSON leaves raw) spelled `\u{…}`: upstream names may hold
/// anything, and a log or page must show what is there.
pub fn quoted(name: &str) -> String {
    let cut: String = name.chars().take(80).collect();
    let mut text = escape_invisible(&serde_json::to_string(&cut).unwrap_or_default());
    if cut.len() < name.len() {
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn a_quoted_name_shows_every_character_that_shows_nothing() {
        assert_eq!(quoted("echo"), "\"echo\"");
        assert_eq!(quoted("ech\u{200b}o"), "\"ech\\u{200b}o\"");
        assert_eq!(quoted("\u{202e}evil"), "\"\\u{202e}evil\"");
        assert_eq!(quoted("a\"b\n"), "\"a\\\"b\\n\"");
        let long = "x".repeat(100);
        assert_eq!(quoted(&long), format!("\"{}\"…", "x".repeat(80)));
    }

    #[test]
    fn text_an_upstream_wrote_shows_what_it_holds() {
        use super::escape_invisible;
        assert_eq!(escape_invisible("plain text"), "plain text");
        assert_eq!(
            escape_invisible("a\u{202e}b\u{200b}c"),
            "a\\u{202e}b\\u{200b}c"
        );
        assert_eq!(escape_invisible("x\u{1b}[31m"), "x\\u{001b}[31m");
        assert_eq!(escape_invisible("line\nforged"), "line\\u{000a}forged");
    }
}
