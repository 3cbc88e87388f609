//! What a tool runs: the handler traits and the failure a handler reports.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use serde_json::Value;

/// A failure the handler reports: it becomes `ToolResult { is_error: true }` with the call's id.
///
/// Use it for expected failures the model can react to ("file not found"); let defects panic.
///
/// # Examples
///
/// ```
/// let error = toolgate::ToolError::new("file not found");
/// assert_eq!(error.to_string(), "file not found");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// A failure described by `message`, shown to the model as the result's content.
    ///
    /// # Examples
    ///
    /// ```
    /// let error = toolgate::ToolError::new("no such file");
    /// assert_eq!(error.message(), "no such file");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message the model will see.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(toolgate::ToolError::from("busy").message(), "busy");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

/// The code that acts on the world once a call is validated and authorized.
///
/// It receives arguments that already satisfied the tool's schema and extra check. It is
/// implemented for every `Fn(&Value) -> Result<String, ToolError> + Send + Sync` closure.
///
/// A returned [`ToolError`] becomes an error result the model sees; a panic is a defect and
/// reaches the caller of `execute` / `handle` / `resolve` unchanged (G8).
///
/// # Examples
///
/// ```
/// use serde_json::Value;
/// use toolgate::{ToolError};
/// use toolgate::definition::ToolHandler;
///
/// struct Echo;
/// impl ToolHandler for Echo {
///     fn call(&self, arguments: &Value) -> Result<String, ToolError> {
///         Ok(arguments.to_string())
///     }
/// }
/// assert_eq!(Echo.call(&serde_json::json!(1))?, "1");
/// # Ok::<(), ToolError>(())
/// ```
pub trait ToolHandler: Send + Sync {
    /// Runs the tool on validated arguments.
    ///
    /// # Errors
    ///
    /// An expected failure the model should be told about.
    fn call(&self, arguments: &Value) -> Result<String, ToolError>;
}

impl<F> ToolHandler for F
where
    F: Fn(&Value) -> Result<String, ToolError> + Send + Sync,
{
    fn call(&self, arguments: &Value) -> Result<String, ToolError> {
        self(arguments)
    }
}

/// A boxed, `Send` future, as async handlers return it.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A handler whose work is asynchronous (network, disk, a subprocess).
///
/// It receives the validated arguments by value — moved out of the authorized call, never
/// copied — and returns a `Send` future, so it runs on any executor: toolgate ties itself to no
/// async runtime. It is implemented for every
/// `Fn(Value) -> impl Future<Output = Result<String, ToolError>> + Send + 'static` closure.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::{ToolDefinition, ToolError, ToolSpec};
///
/// let spec = ToolSpec::new("fetch", "Fetch a URL.", json!({"type": "object"}));
/// let fetch = ToolDefinition::new_async(spec, |args: Value| async move {
///     // e.g. `client.get(args["url"].as_str()?).send().await`
///     Ok::<_, ToolError>(format!("fetched {}", args["url"]))
/// })?;
/// # Ok::<(), toolgate::definition::DefinitionError>(())
/// ```
pub trait AsyncToolHandler: Send + Sync {
    /// Starts the tool on validated arguments.
    fn call(&self, arguments: Value) -> BoxFuture<'static, Result<String, ToolError>>;
}

impl<F, Fut> AsyncToolHandler for F
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    fn call(&self, arguments: Value) -> BoxFuture<'static, Result<String, ToolError>> {
        Box::pin(self(arguments))
    }
}

/// A handler returning structured output (a JSON value), see
/// [`ToolDefinition::structured`](crate::ToolDefinition::structured).
pub(crate) type StructuredHandler = dyn Fn(&Value) -> Result<Value, ToolError> + Send + Sync;

/// An async handler returning structured output, see
/// [`ToolDefinition::structured_async`](crate::ToolDefinition::structured_async).
pub(crate) type AsyncStructuredHandler =
    dyn Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// An async handler answering in content blocks, see
/// [`ToolDefinition::blocks_async`](crate::ToolDefinition::blocks_async).
pub(crate) type AsyncBlocksHandler =
    dyn Fn(Value) -> BoxFuture<'static, Result<super::ToolOutput, ToolError>> + Send + Sync;

/// A definition's handler: plain, async, returning structured output (blocking or async), or
/// answering in content blocks (async).
#[derive(Clone)]
pub(crate) enum Handler {
    Blocking(Arc<dyn ToolHandler>),
    Async(Arc<dyn AsyncToolHandler>),
    Structured(Arc<StructuredHandler>),
    AsyncStructured(Arc<AsyncStructuredHandler>),
    AsyncBlocks(Arc<AsyncBlocksHandler>),
}

/// Drives a future to completion on the current thread, parking between polls. Enough for a
/// handler that does not need a particular runtime's reactor; safe code only, no dependency.
///
/// Polled once with a waker that does nothing — a future that is ready at once pays for no thread
/// handle — then, if it waits, with a waker that unparks this thread. (A future checks readiness
/// on every poll, so no wake-up is lost between the two wakers.)
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let mut future = std::pin::pin!(future);
    if let Poll::Ready(output) = future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        return output;
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(output) => return output,
            Poll::Pending => std::thread::park(),
        }
    }
}
