//! `key --id ID [--group G]…`: a new API key and the config entry for it.

use std::process::ExitCode;

use sha2::{Digest as _, Sha256};

/// Prints a fresh 256-bit key (hex, from the OS) on stdout's first line, then the `[[clients]]`
/// entry with its SHA-256. The key is not kept anywhere.
pub fn key(id: &str, groups: &[String]) -> ExitCode {
    let mut secret = [0u8; 32];
    if let Err(error) = getrandom::fill(&mut secret) {
        eprintln!("toolgate-mcp-gateway: no randomness from the OS: {error}");
        return ExitCode::FAILURE;
    }
    let key = format!("tg_{}", crate::hex::encode(&secret));
    let hash = crate::hex::encode(&Sha256::digest(key.as_bytes()));
    println!("{key}");
    println!();
    println!(
        "# Give the key above to the client (Authorization: Bearer <key>); put this in the config:"
    );
    println!("[[clients]]");
    println!("id = {}", toml_string(id));
    if !groups.is_empty() {
        let groups: Vec<String> = groups.iter().map(|group| toml_string(group)).collect();
        println!("groups = [{}]", groups.join(", "));
    }
    println!("api_key_sha256 = \"{hash}\"");
    ExitCode::SUCCESS
}

/// A TOML basic string: quotes and backslashes escaped, and every control character (DEL too,
/// which JSON leaves raw and TOML refuses) as `\uXXXX`.
pub(super) fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
