//! The HTTP client of a remote upstream, passing the trace on: a `tools/call` whose `_meta`
//! carries a `traceparent` (the gateway sets it when tracing, see `traces`) is sent with the same
//! value as its W3C `traceparent` header, for upstreams and proxies that read the header. Every
//! other request, and every bound the SDK's client enforces, is as the SDK's client sends it; a
//! reply the client cannot read is made an error for its call ([`readable_replies`]).

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use toolgate::mcp::TRACE_PARENT_META;

use super::readable_replies;

/// The SDK's reqwest client, adding the `traceparent` header a traced call carries.
#[derive(Clone, Debug)]
pub struct TracedClient(pub reqwest::Client);

/// The `traceparent` a `tools/call` message carries in its `_meta`, if any.
fn traceparent_of(message: &ClientJsonRpcMessage) -> Option<HeaderValue> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let value = call
        .params
        .meta
        .as_ref()?
        .0
        .0
        .get(TRACE_PARENT_META)?
        .as_str()?;
    HeaderValue::from_str(value).ok()
}

fn with_traceparent(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    if let Some(value) = traceparent_of(message) {
        headers.insert(HeaderName::from_static("traceparent"), value);
    }
    headers
}

impl StreamableHttpClient for TracedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_traceparent(&message, custom_headers);
        let id = readable_replies::request_id(&message);
        let answer = self
            .0
            .post_message(uri, message, session_id, auth_header, headers)
            .await;
        readable_replies::readable_over_reqwest(id, answer)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_traceparent(&message, custom_headers);
        let id = readable_replies::request_id(&message);
        let answer = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await;
        readable_replies::readable_over_reqwest(id, answer)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_traceparent(&message, custom_headers);
        let id = readable_replies::request_id(&message);
        let answer = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
            .await;
        readable_replies::readable_over_reqwest(id, answer)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
            .map(readable_replies::readable_events)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map(readable_replies::readable_events)
    }
}
