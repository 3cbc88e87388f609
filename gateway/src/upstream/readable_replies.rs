//! A remote upstream's replies that the SDK's HTTP client cannot read as one message: the call
//! they answer ends with an error saying the upstream answered, the same as a stdio upstream's
//! ([`toolgate::mcp::frames`]). Unchanged, the client reports a JSON body it cannot parse as a
//! send failure ("could not be sent the call; nothing ran" — false, and an invitation to run the
//! call again) and an SSE event it cannot parse as the stream's end ("stopped before answering").

use futures::StreamExt as _;
use futures::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use toolgate::mcp::frames::{MALFORMED_REPLY_CODE, malformed_reply_error};

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

/// The error answering request `id` whose reply could not be read.
fn unreadable(id: RequestId) -> ServerJsonRpcMessage {
    let message = "the upstream's reply could not be read as one message and was dropped: its body is not a JSON-RPC message the gateway's MCP SDK can read";
    serde_json::from_value(serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": MALFORMED_REPLY_CODE, "message": message},
    }))
    .expect("a JSON-RPC error")
}
