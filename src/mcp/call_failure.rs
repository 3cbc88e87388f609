//! Why a call sent to an upstream got no result, sorted by what it means for the caller: whether
//! the call can have run. The library's [`Upstream`](super::Upstream) and the gateway word the
//! message each their own way from one classification.

use rmcp::service::ServiceError;

use super::frames::{LOST_REPLY_CODE, MALFORMED_REPLY_CODE, OVERSIZED_REPLY_CODE};

/// Why an upstream call ended without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallFailure {
    /// The upstream ran the call, but its reply was larger than the bound and was dropped as it
    /// streamed by; `detail` is the bounded reader's message.
    Oversized {
        /// What the reader said (the size and the bound).
        detail: String,
    },
    /// The upstream answered, but with a reply that is not one readable message (a lone
    /// surrogate escape in a string, a result and an error at once): the call may have taken
    /// effect, and nothing of the answer was passed on; `detail` says what was wrong.
    Malformed {
        /// What the reader said.
        detail: String,
    },
    /// The upstream answered with a JSON-RPC error.
    Refused {
        /// The JSON-RPC error code.
        code: i32,
        /// Its message, as sent (cut it before showing it).
        message: String,
    },
    /// The call could not be sent (the session closed): nothing ran.
    NotSent,
    /// The upstream answered with something the SDK cannot read as a tool result (a content
    /// block type it does not know, a malformed field): the call may have taken effect, and
    /// nothing of the answer can be passed on.
    Unreadable,
    /// The session ended before an answer: whether the call took effect is unknown.
    NoAnswer,
}

impl CallFailure {
    /// The failure `error` means.
    ///
    /// # Examples
    ///
    /// ```
    /// use toolgate::mcp::CallFailure;
    /// use toolgate::mcp::rmcp::{ErrorData, service::ServiceError};
    ///
    /// let error = ServiceError::McpError(ErrorData::invalid_params("no such path", None));
    /// assert!(matches!(CallFailure::of(error), CallFailure::Refused { code: -32602, .. }));
    /// ```
    pub fn of(error: ServiceError) -> Self {
        match error {
            ServiceError::McpError(error) if error.code.0 == OVERSIZED_REPLY_CODE => {
                Self::Oversized {
                    detail: error.message.into_owned(),
                }
            }
            ServiceError::McpError(error) if error.code.0 == LOST_REPLY_CODE => Self::NoAnswer,
            ServiceError::McpError(error) if error.code.0 == MALFORMED_REPLY_CODE => {
                Self::Malformed {
                    detail: error.message.into_owned(),
                }
            }
            ServiceError::McpError(error) => Self::Refused {
                code: error.code.0,
                message: error.message.into_owned(),
            },
            ServiceError::TransportSend(_) => Self::NotSent,
            ServiceError::UnexpectedResponse => Self::Unreadable,
            _ => Self::NoAnswer,
        }
    }
}

/// `message` cut to `max` characters, marked `…` when cut.
pub(crate) fn cut(message: &str, max: usize) -> String {
    match message.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message.to_owned(),
    }
}
