//! One `[upstreams.NAME]` table: a child process (`command`) or a remote server (`url`), with
//! the fields that belong to each and nothing else.

use std::path::Path;

use super::super::{UpstreamSection, UpstreamTransport};

/// The transport of one `[upstreams.NAME]` table, or the field at fault and why.
pub(super) fn upstream(
    base: &Path,
    section: UpstreamSection,
) -> Result<UpstreamTransport, (String, String)> {
    if let Some(url) = section.url {
        if section.command.is_some() {
            return Err((
                "url".to_owned(),
                "set `command` (a child process) or `url` (a remote server), not both".to_owned(),
            ));
        }
        for (field, set) in [
            ("args", !section.args.is_empty()),
            ("env", !section.env.is_empty()),
            ("cwd", section.cwd.is_some()),
        ] {
            if set {
                return Err((field.to_owned(), "is for a child process; a `url` upstream takes `headers` and `bearer_token_env`".to_owned()));
            }
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err((
                "url".to_owned(),
                format!("{url:?} is not an http:// or https:// URL"),
            ));
        }
        // Refused, never printed: a password here reached the error log and `check`'s output.
        let authority = url.split_once("://").map_or("", |(_, rest)| {
            rest.split(['/', '?', '#']).next().unwrap_or("")
        });
        if authority.contains('@') {
            return Err((
                "url".to_owned(),
                "holds a user name or password (`user:password@`): it would be printed wherever the URL is; put a token in an environment variable and name it in `bearer_token_env`".to_owned(),
            ));
        }
        for (name, value) in &section.headers {
            if http::HeaderName::try_from(name.as_str()).is_err()
                || http::HeaderValue::try_from(value.as_str()).is_err()
            {
                return Err((
                    format!("headers.{name}"),
                    "is not a valid HTTP header name and value".to_owned(),
                ));
            }
            if name.eq_ignore_ascii_case("authorization") {
                return Err((format!("headers.{name}"), "put the token in an environment variable and name it in `bearer_token_env`, so the config holds no secret".to_owned()));
            }
        }
        return Ok(UpstreamTransport::Http {
            url,
            headers: section.headers,
            bearer_token_env: section.bearer_token_env,
        });
    }
    if !section.headers.is_empty() || section.bearer_token_env.is_some() {
        return Err((
            "headers".to_owned(),
            "`headers` and `bearer_token_env` are for a `url` upstream".to_owned(),
        ));
    }
    let Some(command) = section.command else {
        return Err((
            "command".to_owned(),
            "missing: the program that starts this MCP server (e.g. `command = \"npx\"`), or the `url` of a remote one"
                .to_owned(),
        ));
    };
    if command.is_empty() {
        return Err(("command".to_owned(), "is empty".to_owned()));
    }
    Ok(UpstreamTransport::Stdio {
        command,
        args: section.args,
        env: section.env,
        cwd: Some(
            section
                .cwd
                .map_or_else(|| base.to_owned(), |cwd| base.join(cwd)),
        ),
    })
}

/// Every `[upstreams.NAME]` table checked (at least one): its name (no separator in it),
/// `own_names` on one at most, and how it is reached; each problem is told to `problem` with its
/// key.
pub(super) fn upstreams(
    sections: std::collections::BTreeMap<String, UpstreamSection>,
    separator: &str,
    base: &Path,
    problem: &mut impl FnMut(&str, String),
) -> Vec<super::super::UpstreamConfig> {
    if sections.is_empty() {
        problem(
            "upstreams",
            "no upstream is configured: add an [upstreams.NAME] table with a `command`".to_owned(),
        );
    }
    let mut upstreams: Vec<super::super::UpstreamConfig> = Vec::new();
    for (name, section) in sections {
        let key = format!("upstreams.{name}");
        if name.is_empty()
            || !name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
        {
            problem(
                &key,
                "an upstream name is made of ASCII letters, digits, `_` and `-`".to_owned(),
            );
        } else if !separator.is_empty() && name.contains(separator) {
            problem(
                &key,
                format!("an upstream name may not contain the separator {separator:?}"),
            );
        }
        let own_names = section.own_names;
        if own_names && let Some(other) = upstreams.iter().find(|up| up.own_names) {
            problem(
                &format!("{key}.own_names"),
                format!(
                    "upstream `{}` already serves its tools under their own names; one upstream at most may",
                    other.name
                ),
            );
        }
        let prefix = if own_names {
            String::new()
        } else {
            format!("{name}{separator}")
        };
        let forwarded = forwarded(&section.forward, &prefix, &key, problem);
        match upstream(base, section) {
            Ok(transport) => upstreams.push(super::super::UpstreamConfig {
                name,
                own_names,
                transport,
                forwarded,
            }),
            Err((field, message)) => problem(&format!("{key}.{field}"), message),
        }
    }
    upstreams
}

/// `forward = [...]`: which of an upstream's requests reach the gateway's clients, each gated as
/// a call named with `prefix` (the upstream's served prefix).
fn forwarded(
    entries: &[String],
    prefix: &str,
    key: &str,
    problem: &mut impl FnMut(&str, String),
) -> super::super::Forwarded {
    use toolgate::mcp::passthrough::{CREATE_MESSAGE, ELICIT};
    let mut forwarded = super::super::Forwarded::default();
    for (index, entry) in entries.iter().enumerate() {
        if entries[..index].contains(entry) {
            problem(
                &format!("{key}.forward[{index}]"),
                format!("{entry:?} is named twice"),
            );
            continue;
        }
        match entry.as_str() {
            "sampling" => forwarded.sampling = Some(format!("{prefix}{CREATE_MESSAGE}")),
            "elicitation" => forwarded.elicitation = Some(format!("{prefix}{ELICIT}")),
            "roots" => problem(
                &format!("{key}.forward[{index}]"),
                "roots are not forwarded: the gateway's clients' roots are not the upstream's to read".to_owned(),
            ),
            other => problem(
                &format!("{key}.forward[{index}]"),
                format!("{other:?} is not a request the gateway forwards; it forwards \"sampling\" and \"elicitation\""),
            ),
        }
    }
    forwarded
}
