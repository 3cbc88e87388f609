//! `[[clients]]` ids and groups: names a person reads, so none that looks like another.

use super::{MINIMAL, problems};

#[test]
fn client_ids_and_groups_with_invisible_or_bidi_characters_are_refused() {
    let client = |id: &str, group: &str| {
        format!(
            "{MINIMAL}\n[listen]\nhttp = \"127.0.0.1:1\"\n[[clients]]\nid = {}\ngroups = [{}]\napi_key_sha256 = \"{}\"\n",
            escaped(id),
            escaped(group),
            "ab".repeat(32)
        )
    };
    for id in [
        "alice\u{200b}",
        "\u{202e}ecila",
        "\u{feff}alice",
        "al\u{2066}ice",
        "alice\u{7}",
        "al ice",
        "",
        "a\u{180e}",
        "a\u{e0041}",
    ] {
        let found = problems(&client(id, "ops"));
        assert!(
            found
                .iter()
                .any(|problem| problem.contains("clients[0].id: must be non-empty")),
            "{id:?}: {found:?}"
        );
    }
    for group in ["ops\u{200d}", "\u{2067}ops", "", "op s", "ops\u{ad}"] {
        let found = problems(&client("alice", group));
        assert!(
            found
                .iter()
                .any(|problem| problem.contains("clients[0].groups[0]: must be non-empty")),
            "{group:?}: {found:?}"
        );
    }
}

/// `text` as a TOML basic string with every non-ASCII or control character escaped.
fn escaped(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
            quoted.push(c);
        } else if u32::from(c) > 0xFFFF {
            quoted.push_str(&format!("\\U{:08X}", u32::from(c)));
        } else {
            quoted.push_str(&format!("\\u{:04X}", u32::from(c)));
        }
    }
    quoted.push('"');
    quoted
}
