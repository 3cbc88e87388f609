//! The upstream's stdout, bounded: every newline-delimited message passes through whole up to a
//! size; a larger one is dropped as it streams by (never buffered) and, if it answers a request,
//! replaced by a JSON-RPC error for that request id, so the call waiting for it ends at once
//! instead of hanging (the SDK would drop it silently past its own 16 MiB line limit). So is a
//! reply the SDK cannot read as one message — a string holding a lone UTF-16 surrogate escape
//! (`"\udcff"`, which Python's `json` writes for an undecodable file name and JavaScript for a
//! string cut inside an emoji, and which Rust's JSON reader refuses), or a result and an error
//! at once: the SDK would drop it without a word, and the call would wait out its time bound.

use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

/// The JSON-RPC error code an oversized reply is replaced with (implementation-defined range): a
/// request that gets it was received and answered by the upstream — a call it ran.
pub const OVERSIZED_REPLY_CODE: i32 = -32_090;

/// The JSON-RPC error code a reply the SDK cannot read as one message is replaced with: the
/// upstream received the request and answered it — a call it ran.
pub const MALFORMED_REPLY_CODE: i32 = -32_091;

/// The code of the error a transport answers a request with when its connection was lost after
/// the request could have reached the server (reset, closed, timed out, a reply cut short): the
/// call stopped before answering, and whether it took effect is unknown
/// ([`CallFailure::NoAnswer`](super::CallFailure::NoAnswer)) — never "not sent".
pub const LOST_REPLY_CODE: i32 = -32_092;

/// Copies newline-delimited messages from `from` to `to` until `from` ends or `to` is closed; a
/// message over `max` bytes is dropped (a reply: replaced by an error with
/// [`OVERSIZED_REPLY_CODE`] for its id). Memory stays within `max` plus a 64 KiB buffer.
pub async fn pump(from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, max: usize) {
    let mut reader = BufReader::with_capacity(64 * 1024, from);
    let mut frame: Vec<u8> = Vec::new();
    let mut scan = TopLevel::default();
    let mut oversized = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => return,
            Ok(chunk) => chunk,
        };
        let (part, ends) = match chunk.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&chunk[..=at], true),
            None => (chunk, false),
        };
        let taken = part.len();
        if !oversized && frame.len() + taken > max.saturating_add(1) {
            oversized = true;
            frame.iter().for_each(|&byte| scan.feed(byte));
            frame = Vec::new();
        }
        if oversized {
            part.iter().for_each(|&byte| scan.feed(byte));
        } else {
            frame.extend_from_slice(part);
        }
        reader.consume(taken);
        if !ends {
            continue;
        }
        let written = if oversized {
            match std::mem::take(&mut scan).reply_id() {
                Some(id) => to.write_all(oversized_error(&id, max).as_bytes()).await,
                None => Ok(()),
            }
        } else if let Some((id, why)) = malformed_reply(&frame) {
            to.write_all(malformed_error(&id, why).as_bytes()).await
        } else {
            to.write_all(&frame).await
        };
        if written.is_err() || to.flush().await.is_err() {
            return;
        }
        frame.clear();
        oversized = false;
    }
}

fn oversized_error(id: &str, max: usize) -> String {
    let message = format!("the upstream's reply was larger than {max} bytes and was dropped");
    error_line(id, OVERSIZED_REPLY_CODE, &message)
}

/// The JSON-RPC error with `code` and `message` answering the request `id` (its JSON text), as
/// one line ending in a newline.
fn error_line(id: &str, code: i32, message: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": serde_json::from_str::<serde_json::Value>(id).unwrap_or_default(),
            "error": {"code": code, "message": message},
        })
    )
}

/// The JSON-RPC error (one line, no newline) that takes the place of `message` when it is a reply
/// the SDK cannot read as one message (see the module's description), with
/// [`MALFORMED_REPLY_CODE`] and the reply's id; `None` for any other message. For readers of
/// other framings (an SSE event's data) than this module's newline-delimited one.
pub fn malformed_reply_error(message: &[u8]) -> Option<String> {
    malformed_reply(message).map(|(id, why)| malformed_error(&id, why).trim_end().to_owned())
}

/// The id of `frame` and what is wrong with it, when it is a reply the SDK cannot read as one
/// message. Looked at closely only where one pass over its bytes finds a reason to (a surrogate
/// escape; both `"result"` and `"error"`).
fn malformed_reply(frame: &[u8]) -> Option<(String, &'static str)> {
    let (mut surrogate, mut result, mut error) = (false, false, false);
    for (at, &byte) in frame.iter().enumerate() {
        let rest = &frame[at..];
        match byte {
            b'\\' => {
                surrogate |= rest.len() >= 4
                    && rest[1] == b'u'
                    && rest[2].eq_ignore_ascii_case(&b'd')
                    && matches!(rest[3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f');
            }
            b'"' => {
                result |= rest.starts_with(b"\"result\"");
                error |= rest.starts_with(b"\"error\"");
            }
            _ => {}
        }
    }
    if !(surrogate || result && error) {
        return None;
    }
    let mut scan = TopLevel::default();
    frame.iter().for_each(|&byte| scan.feed(byte));
    let both = scan.has_result && scan.has_error;
    let id = scan.reply_id()?;
    if both {
        return Some((id, "it holds a result and an error at once"));
    }
    // A surrogate escape is fine in a pair (an emoji); alone, the reader refuses the message
    // (read as values: skipping a string, as `IgnoredAny` does, decodes no escape).
    match serde_json::from_slice::<serde_json::Value>(frame) {
        Ok(_) => None,
        Err(_) => Some((
            id,
            "a string in it holds a lone UTF-16 surrogate escape, which is not text",
        )),
    }
}

fn malformed_error(id: &str, why: &str) -> String {
    let message =
        format!("the upstream's reply could not be read as one message and was dropped: {why}");
    error_line(id, MALFORMED_REPLY_CODE, &message)
}

/// Finds the top-level `"id"` of a JSON object streamed byte by byte, in constant memory, and
/// whether it has a top-level `"method"` (then it is a request or notification, not a reply).
#[derive(Debug, Default)]
struct TopLevel {
    depth: u32,
    in_string: bool,
    escaped: bool,
    expect_key: bool,
    reading_key: bool,
    key: Vec<u8>,
    value_is_id: bool,
    capturing_id: bool,
    id: Vec<u8>,
    id_done: bool,
    has_method: bool,
    has_result: bool,
    has_error: bool,
}

/// An id longer than this is not one the gateway sent (it sends integers).
const MAX_ID_BYTES: usize = 256;

impl TopLevel {
    fn feed(&mut self, byte: u8) {
        if self.in_string {
            let closes = byte == b'"' && !self.escaped;
            if self.reading_key && self.key.len() <= 8 && !closes {
                self.key.push(byte);
            }
            if self.capturing_id {
                self.capture(byte);
            }
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.has_method |= self.key == b"method";
                    self.has_result |= self.key == b"result";
                    self.has_error |= self.key == b"error";
                } else if self.capturing_id {
                    self.finish_id();
                }
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.reading_key = true;
                    self.key.clear();
                } else if self.depth == 1 && self.value_is_id {
                    self.capturing_id = true;
                    self.capture(byte);
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.expect_key = self.depth == 1 && byte == b'{';
                // An object or array is no id.
                self.value_is_id &= self.depth == 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.finish_id();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => {
                self.value_is_id = self.key == b"id";
                self.expect_key = false;
            }
            b',' if self.depth == 1 => {
                self.finish_id();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' | b'\n' if self.capturing_id => self.finish_id(),
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if self.depth == 1 && self.value_is_id => {
                self.capturing_id = true;
                self.capture(byte);
            }
            _ => {}
        }
    }

    fn capture(&mut self, byte: u8) {
        if !self.id_done && self.id.len() <= MAX_ID_BYTES {
            self.id.push(byte);
        }
    }

    fn finish_id(&mut self) {
        if self.capturing_id {
            self.capturing_id = false;
            self.value_is_id = false;
            self.id_done = true;
        }
    }

    /// The id, as JSON text, if this was a reply with a number or string id.
    fn reply_id(self) -> Option<String> {
        if self.has_method || !self.id_done || self.id.len() > MAX_ID_BYTES {
            return None;
        }
        let text = String::from_utf8(self.id).ok()?;
        match serde_json::from_str::<serde_json::Value>(&text).ok()? {
            serde_json::Value::Number(_) | serde_json::Value::String(_) => Some(text),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(text: &str) -> Option<String> {
        let mut scan = TopLevel::default();
        text.bytes().for_each(|byte| scan.feed(byte));
        scan.reply_id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id_of(r#"{"result":{"id":1,"x":[{"id":2}]},"id":12}"#).as_deref(),
            Some("12")
        );
        assert_eq!(
            id_of(r#"{ "id" : "a\"b" , "result": "}"}"#).as_deref(),
            Some(r#""a\"b""#)
        );
        assert_eq!(
            id_of(r#"{"result":"\"id\":5","id":-3}"#).as_deref(),
            Some("-3")
        );
    }

    #[test]
    fn requests_notifications_and_odd_ids_get_no_reply() {
        assert_eq!(id_of(r#"{"id":1,"method":"sampling/createMessage"}"#), None);
        assert_eq!(id_of(r#"{"method":"x","id":1}"#), None);
        assert_eq!(id_of(r#"{"id":{"a":1},"result":{}}"#), None);
        assert_eq!(id_of(r#"{"id":[1],"result":{}}"#), None);
        assert_eq!(id_of(r#"{"id":null,"result":{}}"#), None);
        assert_eq!(id_of(r#"{"result":{"id":1}}"#), None);
        assert_eq!(id_of(r#"["id",1]"#), None);
        let long = format!(r#"{{"id":"{}","result":1}}"#, "x".repeat(300));
        assert_eq!(id_of(&long), None);
    }

    #[tokio::test]
    async fn small_messages_pass_whole_and_a_large_reply_becomes_an_error_for_its_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"result\":{{\"text\":\"{}\"}},\"id\":4}}\n",
            "y".repeat(200_000)
        );
        let input = format!("{{\"id\":1,\"result\":{{}}}}\n{big}{{\"id\":5,\"result\":2}}\n");
        let mut output = Vec::new();
        pump(input.as_bytes(), &mut output, 1024).await;
        let lines: Vec<serde_json::Value> = String::from_utf8(output)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("json"))
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0], serde_json::json!({"id": 1, "result": {}}));
        assert_eq!(lines[1]["id"], 4);
        assert_eq!(lines[1]["error"]["code"], OVERSIZED_REPLY_CODE);
        assert_eq!(lines[2], serde_json::json!({"id": 5, "result": 2}));
    }

    /// Each line through the pump with a generous bound, as JSON values.
    async fn pumped(input: &str) -> Vec<serde_json::Value> {
        let mut output = Vec::new();
        pump(input.as_bytes(), &mut output, 1 << 20).await;
        String::from_utf8(output)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("every line passed on is JSON"))
            .collect()
    }

    #[tokio::test]
    async fn a_reply_with_a_lone_surrogate_escape_becomes_an_error_for_its_id() {
        // What Python's `json.dumps` writes for a file name it could not decode, in any case.
        for escape in [r"\udcff", r"\uDCFF", r"\ud83d"] {
            let input = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"a{escape}b\"}}]}}}}\n"
            );
            let lines = pumped(&input).await;
            assert_eq!(lines.len(), 1, "{escape}: {lines:?}");
            assert_eq!(lines[0]["id"], 9);
            assert_eq!(lines[0]["error"]["code"], MALFORMED_REPLY_CODE);
            let message = lines[0]["error"]["message"].as_str().unwrap();
            assert!(message.contains("lone UTF-16 surrogate"), "{message}");
            assert!(
                !message.contains("a\\"),
                "the reply's text is not quoted: {message}"
            );
        }
    }

    #[tokio::test]
    async fn a_surrogate_pair_and_a_request_with_a_lone_one_pass_unchanged() {
        let pair = "{\"id\":1,\"result\":{\"text\":\"\\ud83d\\ude00\"}}\n";
        let mut output = Vec::new();
        pump(pair.as_bytes(), &mut output, 1 << 20).await;
        assert_eq!(
            output,
            pair.as_bytes(),
            "an emoji spelled as a pair is text"
        );
        // A request or notification answers nothing: no call waits for it, it goes on as sent.
        let request = "{\"id\":2,\"method\":\"x\",\"params\":{\"t\":\"\\udcff\"}}\n";
        let mut output = Vec::new();
        pump(request.as_bytes(), &mut output, 1 << 20).await;
        assert_eq!(output, request.as_bytes());
    }

    #[tokio::test]
    async fn a_reply_with_a_result_and_an_error_becomes_an_error_for_its_id() {
        let lines = pumped(
            "{\"jsonrpc\":\"2.0\",\"id\":\"c-3\",\"result\":{\"content\":[]},\"error\":{\"code\":1,\"message\":\"m\"}}\n",
        )
        .await;
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["id"], "c-3");
        assert_eq!(lines[0]["error"]["code"], MALFORMED_REPLY_CODE);
        // The words inside a result are not its keys.
        let inner = "{\"id\":4,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"structuredContent\":{\"error\":1,\"result\":2}}}\n";
        let mut output = Vec::new();
        pump(inner.as_bytes(), &mut output, 1 << 20).await;
        assert_eq!(output, inner.as_bytes());
    }

    #[tokio::test]
    async fn a_message_exactly_at_the_bound_passes_and_one_byte_more_does_not() {
        let at = |len: usize| {
            let body = format!("{{\"id\":1,\"result\":\"{}\"}}", "z".repeat(len - 20));
            assert_eq!(body.len(), len);
            format!("{body}\n")
        };
        let mut output = Vec::new();
        pump(at(1024).as_bytes(), &mut output, 1024).await;
        assert_eq!(output, at(1024).as_bytes());
        let mut output = Vec::new();
        pump(at(1025).as_bytes(), &mut output, 1024).await;
        assert!(String::from_utf8_lossy(&output).contains("larger than 1024 bytes"));
    }
}
