//! `tools/call` arguments with a duplicate key, refused before the SDK resolves them.
//!
//! JSON parsers disagree on a duplicate key (the first or the last wins), so a policy could judge
//! one value while something else that reads the raw message sees another. The provider readers
//! refuse such text ([`providers`](crate::providers)); here the MCP SDK parses each message
//! itself, keeping the last value, before toolgate sees it. So the input is read line by line
//! first: a `tools/call` request holding a duplicate key anywhere is passed on with its
//! arguments replaced by a marker, and [`McpServer`](super::McpServer) answers it with an error
//! result naming the problem; nothing runs. Every other line passes through unchanged.

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The argument key a refused call carries instead of its arguments. A client that sends it
/// itself only has its own call refused.
pub(crate) const DUPLICATE_KEYS_MARKER: &str = "\u{0}toolgate: the arguments hold a duplicate key";

/// The error text for a refused call.
pub(crate) const DUPLICATE_KEYS_REFUSAL: &str = "refused: the request holds a duplicate key in one object, which parsers read differently; send each key once. Nothing ran";

/// Lines longer than this pass through unchecked: the SDK discards them unread (its limit is
/// 16 MiB).
const MAX_CHECKED_LINE: usize = 16 * 1024 * 1024;

/// The bytes between the pipe the filter writes and the SDK reads.
const PIPE_BYTES: usize = 64 * 1024;

/// `input` as the SDK should read it: every `tools/call` request with a duplicate key marked.
/// Runs a task on the current tokio runtime until `input` ends or the reader is dropped.
pub(crate) fn strict_input<R>(input: R) -> DuplexStream
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let (mut to_sdk, from_filter) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            // `take` bounds what one line may buffer; a longer line goes on in pieces.
            let read = (&mut input)
                .take(MAX_CHECKED_LINE as u64 + 1)
                .read_until(b'\n', &mut line)
                .await;
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let out = if line.len() > MAX_CHECKED_LINE {
                None
            } else {
                marked(&line)
            };
            let written = match out {
                Some(replacement) => to_sdk.write_all(&replacement).await,
                None => to_sdk.write_all(&line).await,
            };
            if written.is_err() {
                break;
            }
        }
        let _ = to_sdk.shutdown().await;
    });
    from_filter
}

/// Refuses a message body holding a duplicate key in any object — for transports other than
/// [`McpServer::serve_io`](super::McpServer::serve_io), which checks each line itself (an HTTP
/// server checks each POST body before the SDK parses it, and answers a refused one without
/// passing it on). Text that is not JSON passes (see [`check_request_body`] to refuse it too).
///
/// # Errors
///
/// What is wrong and where (`duplicate key in one object at line 1 column 12`), never the text.
///
/// # Examples
///
/// ```
/// use toolgate::mcp::check_duplicate_keys;
/// assert!(check_duplicate_keys(br#"{"a":1,"b":2}"#).is_ok());
/// assert!(check_duplicate_keys(br#"{"params":{"arguments":{"p":"/tmp","p":"/etc"}}}"#).is_err());
/// assert!(check_duplicate_keys(b"not json").is_ok());
/// ```
pub fn check_duplicate_keys(body: &[u8]) -> Result<(), String> {
    match check_request_body(body) {
        Err(BodyProblem::DuplicateKey(problem)) => Err(problem),
        _ => Ok(()),
    }
}

/// What is wrong with a request body an HTTP server is about to hand the SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyProblem {
    /// It is not one JSON value (not UTF-8, a syntax error, text after the value): a JSON-RPC
    /// parse error (`-32700`). Where, never the text.
    NotJson(String),
    /// An object in it holds a key twice. Where, never the text.
    DuplicateKey(String),
}

/// Checks a request body in one pass: one JSON value (a leading byte-order mark and surrounding
/// white space allowed, as the SDK allows them), no object holding a key twice.
///
/// # Errors
///
/// [`BodyProblem`], saying where.
///
/// # Examples
///
/// ```
/// use toolgate::mcp::{BodyProblem, check_request_body};
/// assert!(check_request_body(br#"{"a":1}"#).is_ok());
/// assert!(matches!(check_request_body(br#"{"a":1"#), Err(BodyProblem::NotJson(_))));
/// assert!(matches!(check_request_body(br#"{"a":1,"a":2}"#), Err(BodyProblem::DuplicateKey(_))));
/// ```
pub fn check_request_body(body: &[u8]) -> Result<(), BodyProblem> {
    let Ok(text) = std::str::from_utf8(body) else {
        return Err(BodyProblem::NotJson(
            "not valid JSON: not UTF-8 text".to_owned(),
        ));
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text).trim();
    match crate::providers::check_unique_keys(text) {
        Ok(()) => Ok(()),
        // Read whole, as a reader keeping the last of two keys would: only what such a reader
        // takes is a duplicate key. (Skimmed, a lone surrogate escape, a number past a double's
        // range and nesting past 128 levels passed, and were refused as duplicate keys: an
        // independent attack.) serde's message names the problem and where, never a value.
        Err(problem) => match serde_json::from_str::<Value>(text) {
            Err(error) => Err(BodyProblem::NotJson(format!("not valid JSON: {error}"))),
            Ok(_) => Err(BodyProblem::DuplicateKey(problem)),
        },
    }
}

/// The line with its call marked, if it is a `tools/call` request holding a duplicate key;
/// `None` to pass it on as it is.
fn marked(line: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line).ok()?;
    // The SDK drops a leading byte-order mark before it parses; so must this.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Read as the SDK reads it (the method's text may be escaped, `tools\/call`): only a call is
    // parsed twice.
    let mut message: Value = serde_json::from_str(text).ok()?;
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    if crate::providers::strict_parse(text.trim_end()).is_ok() {
        return None;
    }
    let params = message.get_mut("params")?.as_object_mut()?;
    params.insert(
        "arguments".to_owned(),
        Value::Object(Map::from_iter([(
            DUPLICATE_KEYS_MARKER.to_owned(),
            json!(true),
        )])),
    );
    let mut out = serde_json::to_vec(&message).ok()?;
    out.push(b'\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_body_is_one_json_value_with_each_key_once() {
        assert_eq!(check_request_body(b"\xef\xbb\xbf {\"a\":1}\n"), Ok(()));
        for body in [&b""[..], b"{\"a\":1", b"{\"a\":1} x", b"\xff{}", b"[1,]"] {
            assert!(
                matches!(check_request_body(body), Err(BodyProblem::NotJson(_))),
                "{body:?}"
            );
        }
        let Err(BodyProblem::DuplicateKey(problem)) =
            check_request_body(br#"{"params":{"arguments":{"secret":1,"secret":2}}}"#)
        else {
            panic!("a duplicate key")
        };
        assert!(!problem.contains("secret"), "{problem}");
        // Not JSON a reader takes, whatever else: not a duplicate key (they were said to be).
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        for (body, says) in [
            (r#"{"msg":"\udcff"}"#, "lone"),
            (r#"{"msg":1e400}"#, "number out of range"),
            (deep.as_str(), "recursion limit"),
        ] {
            let Err(BodyProblem::NotJson(problem)) = check_request_body(body.as_bytes()) else {
                panic!("{body}: not refused as not JSON");
            };
            assert!(
                problem.starts_with("not valid JSON: ") && problem.contains(says),
                "{problem}"
            );
            assert!(!problem.contains("msg"), "{problem}");
        }
        assert!(
            check_duplicate_keys(b"{\"a\":1").is_ok(),
            "not JSON is not a duplicate"
        );
    }

    #[test]
    fn only_calls_with_a_duplicate_key_are_marked() {
        let call = |arguments: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"t","arguments":{arguments}}}}}"#
            )
        };
        for duplicated in [
            call(r#"{"path":"/tmp/a","path":"/etc/shadow"}"#),
            call(r#"{"o":{"k":1,"k":2}}"#),
            call(r#"{"list":[{"a":1,"a":1}]}"#),
        ] {
            let out = marked(duplicated.as_bytes()).expect("marked");
            let message: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(message["id"], 7);
            assert_eq!(message["params"]["name"], "t");
            assert_eq!(
                message["params"]["arguments"],
                json!({ DUPLICATE_KEYS_MARKER: true })
            );
        }
        assert_eq!(marked(call(r#"{"path":"/tmp/a"}"#).as_bytes()), None);
        // A duplicate elsewhere in a call (its params) is marked too; other methods pass.
        let in_params =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#;
        assert!(marked(in_params.as_bytes()).is_some());
        let other = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1,"x":2},"m":"tools/call"}"#;
        assert_eq!(marked(other.as_bytes()), None);
        assert_eq!(marked(b"not json tools/call"), None);
        // The method spelled with escapes, a byte-order mark, CRLF: the same call, marked.
        for spelled in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools\/call","params":{"name":"t","arguments":{"a":1,"a":2}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":7,"method":"\u0074ools/call","params":{"name":"t","arguments":{"a":1,"a":2}}}"#.to_owned(),
            format!("\u{feff}{}", call(r#"{"a":1,"a":2}"#)),
            format!("{}\r\n", call(r#"{"a":1,"a":2}"#)),
        ] {
            assert!(marked(spelled.as_bytes()).is_some(), "{spelled:?}");
        }
    }
}
