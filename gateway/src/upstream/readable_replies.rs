//! A remote upstream's replies that the SDK's HTTP client cannot read as one message: the call
//! they answer ends with an error saying the upstream answered, the same as a stdio upstream's
//! ([`toolgate::mcp::frames`]). Unchanged, the client reports a JSON body it cannot parse as a
//! send failure ("could not be sent the call; nothing ran" — false, and an invitation to run the
//! call again) and an SSE event it cannot parse as the stream's end ("stopped before answering").
//! An HTTP error status answering a request is the same: the upstream received the call, and a
//! server error (or any status but the ones that say it was refused unread: 401, 403, a lost
//! session's 404, 429) may come after it ran — "nothing ran" invited running it twice (an
//! independent attack: an upstream that ran the call and answered HTTP 500).

use futures::StreamExt as _;
use futures::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use toolgate::mcp::frames::{LOST_REPLY_CODE, MALFORMED_REPLY_CODE, malformed_reply_error};

/// The start of the SDK's error for a JSON body it could not parse (rmcp 3.11's
/// `json_rpc_parse_error_message`; a test pins it), as against its error for an HTTP status.
const UNPARSED_JSON: &str = "could not parse JSON response as ServerJsonRpcMessage";

/// `answer` to `message`, with an unreadable reply to a request made an error for its id.
pub fn readable<E: std::error::Error + Send + Sync + 'static>(
    message_id: Option<RequestId>,
    answer: Result<StreamableHttpPostResponse, StreamableHttpError<E>>,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<E>> {
    match (answer, message_id) {
        (Err(StreamableHttpError::UnexpectedServerResponse(why)), Some(id))
            if why.starts_with(UNPARSED_JSON) =>
        {
            Ok(StreamableHttpPostResponse::Json(unreadable(id), None))
        }
        // A server error without a JSON-RPC answer (the SDK's metadata of it).
        (Err(StreamableHttpError::HttpStatus(status)), Some(id)) if status.status >= 500 => {
            Ok(StreamableHttpPostResponse::Json(
                answered_with_status(id, &status.status.to_string()),
                None,
            ))
        }
        // Another status the SDK does not read as a refusal unread (`HTTP 400: …`).
        (Err(StreamableHttpError::UnexpectedServerResponse(why)), Some(id))
            if why.starts_with("HTTP ") =>
        {
            let status: String = why["HTTP ".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            Ok(StreamableHttpPostResponse::Json(
                answered_with_status(id, &status),
                None,
            ))
        }
        (Ok(StreamableHttpPostResponse::Sse(events, session)), _) => Ok(
            StreamableHttpPostResponse::Sse(readable_events(events), session),
        ),
        (answer, _) => answer,
    }
}

/// The id of `message` when it is a request (it awaits a reply).
pub fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

/// [`readable`] for the reqwest client, and a request whose connection failed once it could
/// have been sent (anything but a failure to connect: reset, closed, timed out, a body cut
/// short) answered with an error saying whether the call took effect is unknown
/// ([`LOST_REPLY_CODE`]). The SDK reports those
/// as a send failure ("nothing ran"), though the upstream may have run the call (a second
/// attack: an upstream that recorded the call, then closed the connection).
pub fn readable_over_reqwest(
    message_id: Option<RequestId>,
    answer: Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>,
) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
    match (answer, message_id) {
        (Err(StreamableHttpError::Client(error)), Some(id)) if !error.is_connect() => {
            let how = if error.is_timeout() {
                "timed out"
            } else if error.is_body() || error.is_decode() {
                "was cut short"
            } else {
                "failed"
            };
            let message = format!(
                "the upstream's connection {how} after the call could have reached it (no reply was read)"
            );
            Ok(StreamableHttpPostResponse::Json(
                error_for(id, LOST_REPLY_CODE, &message),
                None,
            ))
        }
        (answer, message_id) => readable(message_id, answer),
    }
}

/// `events`, each whose data is a reply the SDK cannot read replaced by an error for its id.
pub fn readable_events(
    events: BoxStream<'static, Result<Sse, SseError>>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    events
        .map(|event| {
            event.map(|mut event| {
                if let Some(error) = event
                    .data
                    .as_deref()
                    .and_then(|data| malformed_reply_error(data.as_bytes()))
                {
                    event.data = Some(error);
                }
                event
            })
        })
        .boxed()
}

/// The error answering request `id` with an HTTP error `status` and no JSON-RPC answer: the call
/// reached the upstream, and may have run.
fn answered_with_status(id: RequestId, status: &str) -> ServerJsonRpcMessage {
    malformed(
        id,
        &format!(
            "the upstream's reply was the HTTP status {status} without a JSON-RPC answer (nothing of its body is passed on)"
        ),
    )
}

/// The error answering request `id` whose reply was no answer, saying `message`: the call may
/// have taken effect.
fn malformed(id: RequestId, message: &str) -> ServerJsonRpcMessage {
    error_for(id, MALFORMED_REPLY_CODE, message)
}

/// The JSON-RPC error `code` answering request `id`, saying `message`.
fn error_for(id: RequestId, code: i32, message: &str) -> ServerJsonRpcMessage {
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    }))
    .expect("a JSON-RPC error")
}

/// The error answering request `id` whose reply could not be read.
fn unreadable(id: RequestId) -> ServerJsonRpcMessage {
    malformed(
        id,
        "the upstream's reply could not be read as one message and was dropped: its body is not a JSON-RPC message the gateway's MCP SDK can read",
    )
}
