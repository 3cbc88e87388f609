//! Tool definitions: a spec, its compiled validator and its handler.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::ToolSpec;

/// The deepest JSON nesting a tool's `input_schema` may have; deeper schemas are refused when the
/// definition is built.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// The most JSON values (objects, arrays and scalars, counted recursively) a tool's `input_schema`
/// may hold; larger schemas are refused when the definition is built.
pub const MAX_SCHEMA_NODES: usize = 20_000;

/// The deepest JSON nesting accepted in a call's arguments. Deeper arguments are rejected before
/// the schema sees them, so a recursive schema cannot be driven into a stack overflow (G9).
/// `serde_json` already refuses more than 128 levels when parsing text; this bound also covers
/// values built in code.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// The most bytes of handler output passed on to the model unless a definition sets its own
/// limit ([`ToolDefinition::with_max_output_bytes`]); longer output becomes an error result.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;

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
/// use toolgate::{ToolError, ToolHandler};
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
/// # Ok::<(), toolgate::DefinitionError>(())
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

/// A definition's handler: plain or async.
#[derive(Clone)]
pub(crate) enum Handler {
    Blocking(Arc<dyn ToolHandler>),
    Async(Arc<dyn AsyncToolHandler>),
}

/// One way the arguments broke the tool's rules: where, which rule, and what was expected.
///
/// The message never contains the argument's value — values may be secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer (RFC 6901) to the offending place in the arguments; `""` is the whole object.
    pub pointer: String,
    /// The schema keyword that failed (`type`, `required`, …), or `argumentCheck` for the
    /// definition's extra check, or `maxDepth` for over-deep arguments.
    pub keyword: String,
    /// What was expected, with the value masked.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {:?} ({}): {}",
            self.pointer, self.keyword, self.message
        )
    }
}

/// Every violation found in one call's arguments (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentErrors {
    // Invariant: never empty.
    violations: Vec<Violation>,
}

impl ArgumentErrors {
    /// The violations, in the order the validator reported them.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }
}

impl fmt::Display for ArgumentErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.violations.len();
        write!(
            f,
            "{count} violation{}: ",
            if count == 1 { "" } else { "s" }
        )?;
        for (index, violation) in self.violations.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            violation.fmt(f)?;
        }
        Ok(())
    }
}

impl std::error::Error for ArgumentErrors {}

/// Why a [`ToolDefinition`] could not be built. The tool's author is at fault; fix the spec.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefinitionError {
    /// The tool has an empty name; give it the name the model will use.
    #[error("tool name is empty")]
    EmptyName,
    /// `input_schema` is not a JSON object; providers require an object schema.
    #[error("tool {tool:?}: input_schema must be a JSON object")]
    SchemaNotObject {
        /// The tool's name.
        tool: String,
    },
    /// The schema nests deeper than [`MAX_SCHEMA_DEPTH`].
    #[error("tool {tool:?}: input_schema nests deeper than {limit} levels")]
    SchemaTooDeep {
        /// The tool's name.
        tool: String,
        /// The limit that was passed.
        limit: usize,
    },
    /// The schema holds more than [`MAX_SCHEMA_NODES`] values.
    #[error("tool {tool:?}: input_schema holds more than {limit} values")]
    SchemaTooLarge {
        /// The tool's name.
        tool: String,
        /// The limit that was passed.
        limit: usize,
    },
    /// A `$ref` or `$schema` points outside the schema (a URL or a file, or an unknown
    /// meta-schema). toolgate never fetches: inline the referenced schema under `$defs`.
    #[error("tool {tool:?}: input_schema refers outside itself, which is never fetched: {detail}")]
    ExternalReference {
        /// The tool's name.
        tool: String,
        /// What the schema compiler reported.
        detail: String,
    },
    /// The schema is not a valid JSON Schema (a wrong keyword value, or a `pattern` outside the
    /// linear-time regex dialect: no look-around, no back-references).
    #[error("tool {tool:?}: invalid input_schema: {detail}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What the schema compiler reported.
        detail: String,
    },
    /// Validating an argument against the schema could take time exponential in its nesting: one
    /// argument value could be evaluated against subschemas more than 4096 times (for instance
    /// through a recursive `$ref` reached by two `anyOf` branches that both recurse), or the
    /// schema applies to itself without descending into the argument. Make the branches
    /// exclusive by a property outside the recursion, or keep one branch.
    #[error("tool {tool:?}: input_schema is too costly to validate: {detail}")]
    ValidationTooCostly {
        /// The tool's name.
        tool: String,
        /// Where in the schema, and the bound that was passed.
        detail: String,
    },
}

type ArgumentCheck = dyn Fn(&Value) -> Result<(), String> + Send + Sync;

/// A tool: its [`ToolSpec`], the validator compiled from the spec's schema, an optional extra
/// argument check, and its [`ToolHandler`].
///
/// The schema is compiled once, here; a call never compiles a schema. Compilation never touches
/// the network or the filesystem, and `pattern`s use a linear-time regex engine (G9).
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::{ToolDefinition, ToolError, ToolSpec};
///
/// let spec = ToolSpec::new(
///     "calculator",
///     "Add exactly two integers named a and b.",
///     json!({
///         "type": "object",
///         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///         "required": ["a", "b"],
///         "additionalProperties": false
///     }),
/// );
/// let calculator = ToolDefinition::new(spec, |args: &Value| -> Result<String, ToolError> {
///     Ok((args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)).to_string())
/// })?;
/// assert!(calculator.validate(&json!({"a": 40, "b": 2})).is_ok());
/// assert!(calculator.validate(&json!({"a": "40"})).is_err());
/// # Ok::<(), toolgate::DefinitionError>(())
/// ```
pub struct ToolDefinition {
    spec: ToolSpec,
    // Invariant: the digest of `spec`'s name, description and schema (see `digest`).
    digest: Arc<str>,
    validator: jsonschema::Validator,
    argument_check: Option<Box<ArgumentCheck>>,
    max_output_bytes: usize,
    handler: Handler,
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("spec", &self.spec)
            .field("argument_check", &self.argument_check.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolDefinition {
    /// Compiles the spec's schema and joins it with the handler.
    ///
    /// # Errors
    ///
    /// [`DefinitionError`] if the name is empty, the schema is not an object, is deeper than
    /// [`MAX_SCHEMA_DEPTH`] or larger than [`MAX_SCHEMA_NODES`], refers to anything outside
    /// itself, or is not a valid schema.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::{DefinitionError, ToolDefinition, ToolError, ToolSpec};
    ///
    /// let remote = ToolSpec::new("t", "", json!({"$ref": "https://example.com/s.json"}));
    /// let error = ToolDefinition::new(remote, |_: &Value| -> Result<String, ToolError> { Ok(String::new()) })
    ///     .unwrap_err();
    /// assert!(matches!(error, DefinitionError::ExternalReference { .. }));
    /// ```
    pub fn new(
        spec: ToolSpec,
        handler: impl ToolHandler + 'static,
    ) -> Result<Self, DefinitionError> {
        Self::with_shared_handler(spec, Arc::new(handler))
    }

    /// Compiles the spec's schema and joins it with an async handler. The runtime's
    /// `execute_async` awaits it; the blocking `execute` drives it to completion on the calling
    /// thread (so a handler that needs a particular runtime's reactor must go through
    /// `execute_async` / `handle_async` / `resolve_async` inside that runtime).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn new_async(
        spec: ToolSpec,
        handler: impl AsyncToolHandler + 'static,
    ) -> Result<Self, DefinitionError> {
        Self::build(spec, Handler::Async(Arc::new(handler)))
    }

    /// Like [`new`](Self::new), for a handler already shared behind an `Arc`.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::{json, Value};
    /// use toolgate::{ToolDefinition, ToolError, ToolHandler, ToolSpec};
    ///
    /// let handler: Arc<dyn ToolHandler> =
    ///     Arc::new(|_: &Value| -> Result<String, ToolError> { Ok("ok".into()) });
    /// let spec = ToolSpec::new("noop", "Does nothing.", json!({"type": "object"}));
    /// let noop = ToolDefinition::with_shared_handler(spec, handler)?;
    /// assert_eq!(noop.spec().name, "noop");
    /// # Ok::<(), toolgate::DefinitionError>(())
    /// ```
    pub fn with_shared_handler(
        spec: ToolSpec,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<Self, DefinitionError> {
        Self::build(spec, Handler::Blocking(handler))
    }

    /// The one place a definition is assembled: the schema compiled, the spec digested.
    fn build(spec: ToolSpec, handler: Handler) -> Result<Self, DefinitionError> {
        let validator = compile_schema(&spec)?;
        Ok(Self {
            digest: spec_digest(&spec),
            spec,
            validator,
            argument_check: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            handler,
        })
    }

    /// The same tool, passing on at most `limit` bytes of output: a longer result becomes an error
    /// result saying so (the model's context, and whatever stores transcripts, stay bounded).
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    ///
    /// let spec = ToolSpec::new("cat", "Print a file.", json!({"type": "object"}));
    /// let cat = ToolDefinition::new(spec, |_: &Value| -> Result<String, ToolError> { Ok(String::new()) })?
    ///     .with_max_output_bytes(64 * 1024);
    /// assert_eq!(cat.max_output_bytes(), 64 * 1024);
    /// # Ok::<(), toolgate::DefinitionError>(())
    /// ```
    #[must_use]
    pub fn with_max_output_bytes(mut self, limit: usize) -> Self {
        self.max_output_bytes = limit;
        self
    }

    /// The most bytes of output this tool passes on.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    /// A tool over a Rust argument type: the schema is generated from `T` (feature `schemars`),
    /// arguments are validated against it as for any tool, then deserialized into `T` for the
    /// handler. A deserialization failure (a schema looser than the type) is an error result that
    /// does not quote the arguments.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), for the generated schema.
    ///
    /// # Examples
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use toolgate::{ToolDefinition, ToolError};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    ///
    /// let calculator = ToolDefinition::typed("calculator", "Add a and b.", |args: Add| {
    ///     args.a.checked_add(args.b).map(|sum| sum.to_string()).ok_or_else(|| ToolError::new("overflow"))
    /// })?;
    /// assert_eq!(calculator.spec().input_schema["required"], serde_json::json!(["a", "b"]));
    /// # Ok::<(), toolgate::DefinitionError>(())
    /// ```
    #[cfg(feature = "schemars")]
    pub fn typed<T, F>(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Result<Self, DefinitionError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
        F: Fn(T) -> Result<String, ToolError> + Send + Sync + 'static,
    {
        let name = name.into();
        let schema = schemars::schema_for!(T).to_value();
        let tool = name.clone();
        let typed = move |arguments: &Value| -> Result<String, ToolError> {
            match T::deserialize(arguments) {
                Ok(arguments) => handler(arguments),
                Err(_) => Err(ToolError::new(format!(
                    "invalid arguments for {tool}: they satisfy the schema but not the tool's argument type"
                ))),
            }
        };
        Self::new(ToolSpec::new(name, description, schema), typed)
    }

    /// Adds a check the schema cannot express (the original design's `validate_arguments`). It
    /// runs after the schema passed; an `Err(message)` rejects the call with that message.
    ///
    /// The message is shown to the model: describe the rule, do not quote the value.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    ///
    /// let spec = ToolSpec::new("divide", "a / b", json!({"type": "object"}));
    /// let divide = ToolDefinition::new(spec, |_: &Value| -> Result<String, ToolError> { Ok("1".into()) })?
    ///     .with_argument_check(|args| match args["b"].as_i64() {
    ///         Some(0) => Err("b must not be zero".to_owned()),
    ///         _ => Ok(()),
    ///     });
    /// assert!(divide.validate(&json!({"a": 1, "b": 0})).is_err());
    /// # Ok::<(), toolgate::DefinitionError>(())
    /// ```
    #[must_use]
    pub fn with_argument_check(
        mut self,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.argument_check = Some(Box::new(check));
        self
    }

    /// What the model is shown about this tool.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// `sha256:` over the canonical form of the spec (name, description, input schema): two
    /// definitions with the same digest show the model the same tool and validate the same way.
    /// An approval records it; if it differs when the approval is answered, the approval is stale.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Checks arguments against the compiled schema, then the extra check, without running
    /// anything. The error lists every schema violation with its JSON Pointer and keyword and
    /// never quotes an argument value.
    ///
    /// # Errors
    ///
    /// [`ArgumentErrors`] when the arguments are invalid.
    pub fn validate(&self, arguments: &Value) -> Result<(), ArgumentErrors> {
        if exceeds_depth(arguments, MAX_ARGUMENT_DEPTH) {
            return Err(ArgumentErrors {
                violations: vec![Violation {
                    pointer: String::new(),
                    keyword: "maxDepth".to_owned(),
                    message: format!("arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels"),
                }],
            });
        }
        // Fast path: `is_valid` stops at the first failure and allocates nothing; the full
        // listing is built only when there is something to list.
        if !self.validator.is_valid(arguments) {
            let violations = self
                .validator
                .iter_errors(arguments)
                .map(|error| masked_violation(&error))
                .collect::<Vec<_>>();
            if !violations.is_empty() {
                return Err(ArgumentErrors { violations });
            }
        }
        if let Some(check) = &self.argument_check {
            check(arguments).map_err(|message| ArgumentErrors {
                violations: vec![Violation {
                    pointer: String::new(),
                    keyword: "argumentCheck".to_owned(),
                    message,
                }],
            })?;
        }
        Ok(())
    }

    pub(crate) fn handler(&self) -> &Handler {
        &self.handler
    }

    /// Whether the handler is async.
    pub fn is_async(&self) -> bool {
        matches!(self.handler, Handler::Async(_))
    }
}

fn spec_digest(spec: &ToolSpec) -> Arc<str> {
    let canonical = serde_json::json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    });
    Arc::from(crate::canonical::digest(&canonical))
}

fn masked_violation(error: &jsonschema::ValidationError<'_>) -> Violation {
    let keyword = error.kind().keyword().to_owned();
    let message = match error.kind() {
        // The masked message of `propertyNames` quotes the offending key, which is model input.
        jsonschema::error::ValidationErrorKind::PropertyNames { .. } => {
            "a property name does not satisfy the propertyNames schema".to_owned()
        }
        _ => error.masked_with("value").to_string(),
    };
    Violation {
        pointer: error.instance_path().as_str().to_owned(),
        keyword,
        message,
    }
}

fn compile_schema(spec: &ToolSpec) -> Result<jsonschema::Validator, DefinitionError> {
    let tool = || spec.name.clone();
    if spec.name.is_empty() {
        return Err(DefinitionError::EmptyName);
    }
    if !spec.input_schema.is_object() {
        return Err(DefinitionError::SchemaNotObject { tool: tool() });
    }
    // Measured before compiling: the compiler recurses over the schema.
    let (depth, nodes) = measure(&spec.input_schema, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES);
    if depth > MAX_SCHEMA_DEPTH {
        return Err(DefinitionError::SchemaTooDeep {
            tool: tool(),
            limit: MAX_SCHEMA_DEPTH,
        });
    }
    if nodes > MAX_SCHEMA_NODES {
        return Err(DefinitionError::SchemaTooLarge {
            tool: tool(),
            limit: MAX_SCHEMA_NODES,
        });
    }
    let validator = jsonschema::options()
        .offline()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(&spec.input_schema)
        .map_err(|error| {
            let detail = error.to_string();
            match error.kind() {
                jsonschema::error::ValidationErrorKind::Referencing(_) => {
                    DefinitionError::ExternalReference {
                        tool: tool(),
                        detail,
                    }
                }
                _ => DefinitionError::InvalidSchema {
                    tool: tool(),
                    detail,
                },
            }
        })?;
    // After compiling, so the analysis only sees schemas whose references resolve.
    crate::schema_cost::check(&spec.input_schema).map_err(|detail| {
        DefinitionError::ValidationTooCostly {
            tool: tool(),
            detail,
        }
    })?;
    Ok(validator)
}

/// Depth and node count of a JSON value, walked without recursion and stopping as soon as either
/// limit is passed (so the cost is bounded by the limits, not by the value).
fn measure(value: &Value, max_depth: usize, max_nodes: usize) -> (usize, usize) {
    let mut stack = vec![(value, 1_usize)];
    let (mut deepest, mut nodes) = (0, 0);
    while let Some((value, depth)) = stack.pop() {
        nodes += 1;
        deepest = deepest.max(depth);
        if deepest > max_depth || nodes > max_nodes {
            break;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|item| (item, depth + 1))),
            _ => {}
        }
    }
    (deepest, nodes)
}

/// Whether `value` nests more than `limit` arrays or objects deep (counted as `serde_json`'s
/// parser counts them). Recursive, but never deeper than `limit + 1` frames, and allocation-free:
/// it runs on every call.
pub(crate) fn exceeds_depth(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => {
            limit == 0 || items.iter().any(|item| exceeds_depth(item, limit - 1))
        }
        Value::Object(map) => limit == 0 || map.values().any(|item| exceeds_depth(item, limit - 1)),
        _ => false,
    }
}

/// Drops a value without recursion, so a value nested far deeper than the stack allows (one a
/// program built in code; parsed JSON is limited to 128 levels) cannot overflow it when freed.
pub(crate) fn drop_deep(value: Value) {
    // Shallow values, nearly all of them, are dropped the ordinary way.
    if !exceeds_depth(&value, MAX_ARGUMENT_DEPTH) {
        return;
    }
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, item)| item)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn noop(_: &Value) -> Result<String, ToolError> {
        Ok(String::new())
    }

    fn definition(schema: Value) -> Result<ToolDefinition, DefinitionError> {
        ToolDefinition::new(ToolSpec::new("t", "test tool", schema), noop)
    }

    /// `depth` arrays nested around a number.
    fn nested(depth: usize) -> Value {
        let mut value = json!(0);
        for _ in 0..depth {
            value = json!([value]);
        }
        value
    }

    #[test]
    fn empty_name_is_refused() {
        let error = ToolDefinition::new(ToolSpec::new("", "", json!({})), noop).unwrap_err();
        assert_eq!(error, DefinitionError::EmptyName);
    }

    #[test]
    fn non_object_schema_is_refused() {
        assert!(matches!(
            definition(json!(true)),
            Err(DefinitionError::SchemaNotObject { .. })
        ));
    }

    #[test]
    fn invalid_schema_is_refused_with_the_tool_named() {
        let error = definition(json!({"type": "objectx"})).unwrap_err();
        assert!(matches!(error, DefinitionError::InvalidSchema { .. }));
        assert!(error.to_string().contains("tool \"t\""), "{error}");
    }

    #[test]
    fn remote_file_and_relative_refs_are_refused_at_build_time() {
        for reference in [
            "https://example.com/schema.json",
            "file:///etc/passwd",
            "other.json",
        ] {
            let error = definition(json!({"$ref": reference})).unwrap_err();
            assert!(
                matches!(error, DefinitionError::ExternalReference { .. }),
                "{reference}: {error}"
            );
        }
    }

    #[test]
    fn unknown_meta_schema_is_refused() {
        let error = definition(json!({"$schema": "https://example.com/meta", "type": "object"}))
            .unwrap_err();
        assert!(
            matches!(error, DefinitionError::ExternalReference { .. }),
            "{error}"
        );
    }

    #[test]
    fn local_refs_compile() {
        let schema = json!({
            "$defs": {"n": {"type": "integer"}},
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/n"}}
        });
        let tool = definition(schema).unwrap();
        assert!(tool.validate(&json!({"a": 1})).is_ok());
        assert!(tool.validate(&json!({"a": "x"})).is_err());
    }

    #[test]
    fn backtracking_only_patterns_are_refused() {
        // Look-around needs a backtracking engine, which could run in exponential time.
        let error =
            definition(json!({"type": "object", "properties": {"s": {"pattern": "(?=a)b"}}}))
                .unwrap_err();
        assert!(
            matches!(error, DefinitionError::InvalidSchema { .. }),
            "{error}"
        );
    }

    #[test]
    fn catastrophic_pattern_runs_in_linear_time() {
        // `(a+)+$` takes exponential time in a backtracking engine on "aaa…!". The linear-time
        // engine answers at once; were it ever swapped back, this test would not finish.
        let tool =
            definition(json!({"type": "object", "properties": {"s": {"pattern": "^(a+)+$"}}}))
                .unwrap();
        let hostile = format!("{}!", "a".repeat(100_000));
        let errors = tool.validate(&json!({"s": hostile})).unwrap_err();
        assert_eq!(errors.violations()[0].keyword, "pattern");
    }

    #[test]
    fn schema_depth_and_size_limits() {
        let deep =
            json!({"type": "object", "properties": {"x": {"const": nested(MAX_SCHEMA_DEPTH)}}});
        assert!(matches!(
            definition(deep),
            Err(DefinitionError::SchemaTooDeep { .. })
        ));
        let wide = json!({"type": "object", "enum": vec![0; MAX_SCHEMA_NODES]});
        assert!(matches!(
            definition(wide),
            Err(DefinitionError::SchemaTooLarge { .. })
        ));
        let fits = json!({"type": "object", "enum": vec![0; MAX_SCHEMA_NODES - 10]});
        assert!(definition(fits).is_ok());
    }

    #[test]
    fn violations_name_pointer_and_keyword_and_mask_values() {
        let tool = definition(json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "p": {"pattern": "^x", "maxLength": 3},
                "e": {"enum": [1, 2]},
                "n": {"propertyNames": {"pattern": "^z"}}
            },
            "required": ["a", "b"]
        }))
        .unwrap();
        let errors = tool
            .validate(&json!({"a": "SECRET1", "p": "SECRET2", "e": "SECRET3", "n": {"SECRET4": 1}}))
            .unwrap_err();
        let listing = errors.to_string();
        assert!(!listing.contains("SECRET"), "{listing}");
        let found: Vec<(&str, &str)> = errors
            .violations()
            .iter()
            .map(|v| (v.pointer.as_str(), v.keyword.as_str()))
            .collect();
        for expected in [
            ("", "required"),
            ("/a", "type"),
            ("/p", "pattern"),
            ("/p", "maxLength"),
            ("/e", "enum"),
            ("/n", "propertyNames"),
        ] {
            assert!(
                found.contains(&expected),
                "{expected:?} missing from {found:?}"
            );
        }
        assert!(listing.starts_with("6 violations: "), "{listing}");
    }

    #[test]
    fn argument_check_runs_after_the_schema() {
        let tool = definition(json!({"type": "object", "required": ["b"]}))
            .unwrap()
            .with_argument_check(|args| {
                if args["b"] == json!(0) {
                    Err("b must not be zero".to_owned())
                } else {
                    Ok(())
                }
            });
        let errors = tool.validate(&json!({"b": 0})).unwrap_err();
        assert_eq!(errors.violations()[0].keyword, "argumentCheck");
        assert_eq!(errors.violations()[0].message, "b must not be zero");
        // The schema failure is reported alone: the extra check never sees unvalidated input.
        let errors = tool.validate(&json!({})).unwrap_err();
        assert_eq!(errors.violations()[0].keyword, "required");
        assert!(tool.validate(&json!({"b": 1})).is_ok());
    }

    #[test]
    fn over_deep_arguments_are_rejected_before_validation() {
        let recursive = definition(json!({
            "$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/node"}}
        }))
        .unwrap();
        let deep = json!({"tree": nested(MAX_ARGUMENT_DEPTH)});
        let errors = recursive.validate(&deep).unwrap_err();
        assert_eq!(errors.violations()[0].keyword, "maxDepth");
        let shallow = json!({"tree": [[[]]]});
        assert!(recursive.validate(&shallow).is_ok());
    }

    #[test]
    fn exceeds_depth_counts_levels() {
        assert!(!exceeds_depth(&nested(3), 3));
        assert!(exceeds_depth(&nested(4), 3));
        assert!(!exceeds_depth(&json!({"a": 1, "b": [1, 2]}), 2));
    }

    #[test]
    fn drop_deep_frees_values_too_deep_for_recursion() {
        let mut value = json!(null);
        for _ in 0..200_000 {
            value = Value::Array(vec![value]);
        }
        drop_deep(value);
    }
}
