//! Tool definitions: a spec, its compiled validator and its handler.

mod blocks;
mod depth;
mod depth_bound;
mod handler;
mod output;
mod schema;
#[cfg(test)]
mod tests;
mod tool_output;
#[cfg(feature = "schemars")]
mod typed;
#[cfg(feature = "schemars")]
mod unions;
mod violations;

pub(crate) use blocks::text_of;
pub(crate) use depth::{drop_deep, exceeds_depth};

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::contract::ToolSpec;

pub use handler::{AsyncToolHandler, BoxFuture, ToolError, ToolHandler};
pub(crate) use handler::{Handler, block_on};
pub use tool_output::ToolOutput;
use violations::DeclaredNames;
pub use violations::{ArgumentErrors, Violation};

/// The deepest JSON nesting a tool's `input_schema` may have; deeper schemas are refused when the
/// definition is built.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// The most JSON values (objects, arrays and scalars, counted recursively) a tool's `input_schema`
/// may hold; larger schemas are refused when the definition is built.
pub const MAX_SCHEMA_NODES: usize = 20_000;

/// The deepest JSON nesting accepted in a call's arguments. Deeper arguments are rejected, and a
/// schema that could recurse into them never sees them, so validation cannot be driven into a
/// stack overflow (G9).
/// `serde_json` already refuses more than 128 levels when parsing text; this bound also covers
/// values built in code.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// The most bytes of handler output passed on to the model unless a definition sets its own
/// limit ([`ToolDefinition::with_max_output_bytes`]); longer output becomes an error result.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;

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
    /// A typed tool's argument type holds a union whose variants no tag tells apart (an
    /// `#[serde(untagged)]` enum): a rule on one variant's field would not judge a call that
    /// takes another variant, though the handler may read the same thing from it (a path as a
    /// plain string where another variant has `{"path": …}`). Tag the enum (`#[serde(tag =
    /// "…")]`, or serde's default external tag), or write the schema yourself with
    /// [`ToolDefinition::new`] and rules for every variant.
    #[error(
        "tool {tool:?}: the argument type has a union no tag tells apart at {place} (an untagged enum): rules on one variant's fields would not judge the others; tag the enum"
    )]
    UntaggedUnion {
        /// The tool's name.
        tool: String,
        /// Where in the generated schema, as a JSON Pointer (`/$defs/Target/anyOf`).
        place: String,
    },
    /// The output schema and the handler do not go together: a structured handler needs an
    /// `output_schema` (an object schema), and a tool that declares one needs a structured
    /// handler ([`ToolDefinition::structured`]).
    #[error("tool {tool:?}: {detail}")]
    OutputSchema {
        /// The tool's name.
        tool: String,
        /// What does not fit.
        detail: String,
    },
}

type ArgumentCheck = dyn Fn(&Value) -> Result<(), String> + Send + Sync;

/// Rewrites validated arguments into the form the handler receives (a typed tool's read-back);
/// an error rejects the call.
type Normalizer = dyn Fn(&Value, &DeclaredNames) -> Result<Value, ArgumentErrors> + Send + Sync;

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
/// # Ok::<(), toolgate::definition::DefinitionError>(())
/// ```
pub struct ToolDefinition {
    spec: ToolSpec,
    // Invariant: the digest of `spec`'s name, description and schemas (see `digest`).
    digest: Arc<str>,
    // Invariant: `canonical::call_prefix(&spec.name, &digest)`, kept so that an approval digest of
    // this tool's calls absorbs only the arguments.
    call_prefix: sha2::Sha256,
    validator: jsonschema::Validator,
    // Invariant: `Some` exactly when `spec.output_schema` is, and then the handler is structured.
    output_validator: Option<jsonschema::Validator>,
    // Invariant: the names `spec.input_schema` declares; the only keys shown in a violation.
    declared: DeclaredNames,
    argument_check: Option<Box<ArgumentCheck>>,
    // Set only by `typed`: `None` keeps the untyped path to one check.
    normalizer: Option<Box<Normalizer>>,
    // Invariant: true only if `depth_bound::accepted_depth` bounds the input schema.
    validates_first: bool,
    max_output_bytes: usize,
    handler: Handler,
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("spec", &self.spec)
            .field("argument_check", &self.argument_check.is_some())
            .field("normalizes", &self.normalizer.is_some())
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
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    /// use toolgate::definition::DefinitionError;
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
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    /// use toolgate::definition::ToolHandler;
    ///
    /// let handler: Arc<dyn ToolHandler> =
    ///     Arc::new(|_: &Value| -> Result<String, ToolError> { Ok("ok".into()) });
    /// let spec = ToolSpec::new("noop", "Does nothing.", json!({"type": "object"}));
    /// let noop = ToolDefinition::with_shared_handler(spec, handler)?;
    /// assert_eq!(noop.spec().name, "noop");
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
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
        let output_validator = output::compile(&spec, &handler)?;
        let digest = spec_digest(&spec);
        Ok(Self {
            output_validator,
            call_prefix: crate::canonical::call_prefix(&spec.name, &digest),
            digest,
            declared: DeclaredNames::collect(&spec.input_schema),
            validates_first: depth_bound::accepted_depth(&spec.input_schema, MAX_ARGUMENT_DEPTH)
                .is_some(),
            spec,
            validator,
            argument_check: None,
            normalizer: None,
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
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
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

    /// Adds a check the schema cannot express (the original design's `validate_arguments`). It
    /// runs after the schema passed; an `Err(message)` rejects the call with that message.
    ///
    /// The message is shown to the model (cut to [`ArgumentErrors::MAX_MESSAGE_BYTES`]): describe
    /// the rule, do not quote the value. For a [`typed`](Self::typed) tool the check sees the
    /// normalized arguments, as the handler does.
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
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
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

    /// The hasher after this tool's name and definition digest: where an approval digest of one
    /// of its calls starts (`canonical::call_digest`).
    pub(crate) fn call_prefix(&self) -> &sha2::Sha256 {
        &self.call_prefix
    }

    /// Checks arguments against the compiled schema, then — for a [`typed`](Self::typed) tool —
    /// reads them back through the Rust type and checks the result again, then runs the extra
    /// check, without running anything. `Ok` here is exactly when [`ToolRuntime::prepare`]
    /// accepts the arguments.
    ///
    /// The error lists the first [`ArgumentErrors::MAX_LISTED`] violations, each with its JSON
    /// Pointer and keyword, and counts the rest; it never quotes an argument value, nor a property
    /// name the schema does not declare.
    ///
    /// [`ToolRuntime::prepare`]: crate::ToolRuntime::prepare
    ///
    /// # Errors
    ///
    /// [`ArgumentErrors`] when the arguments are invalid.
    pub fn validate(&self, arguments: &Value) -> Result<(), ArgumentErrors> {
        self.check(arguments).map(drop)
    }

    /// [`validate`](Self::validate), also giving back the normalized arguments of a typed tool
    /// (`None`: the arguments are used as sent).
    #[inline(always)]
    pub(crate) fn check(&self, arguments: &Value) -> Result<Option<Value>, ArgumentErrors> {
        self.check_schema(arguments)?;
        let Some(normalize) = &self.normalizer else {
            self.run_argument_check(arguments)?;
            return Ok(None);
        };
        let normalized = normalize(arguments, &self.declared)?;
        // Defaults were added: the value the policy and the handler get must satisfy the schema
        // too.
        self.check_schema(&normalized)?;
        self.run_argument_check(&normalized)?;
        Ok(Some(normalized))
    }

    /// Arguments nested past [`MAX_ARGUMENT_DEPTH`] are refused as too deep, whatever else is
    /// wrong with them; others are validated. For most schemas the depth walk comes first, so a
    /// recursive schema never sees a deep value (G9). A schema whose accepted values are all
    /// shallow, and whose validation descends a bounded depth, is asked first (saving the walk on
    /// every valid call); only a refused call is walked then, to give the same answer.
    #[inline(always)]
    fn check_schema(&self, arguments: &Value) -> Result<(), ArgumentErrors> {
        if !self.validates_first && exceeds_depth(arguments, MAX_ARGUMENT_DEPTH) {
            return Err(depth_bound::too_deep());
        }
        // Fast path: `is_valid` stops at the first failure and allocates nothing.
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        // Walked before the violations are listed: listing copies parts of the value.
        if self.validates_first && exceeds_depth(arguments, MAX_ARGUMENT_DEPTH) {
            return Err(depth_bound::too_deep());
        }
        Err(ArgumentErrors::listed(
            &self.validator,
            arguments,
            &self.declared,
        ))
    }

    fn run_argument_check(&self, arguments: &Value) -> Result<(), ArgumentErrors> {
        match &self.argument_check {
            Some(check) => check(arguments)
                .map_err(|message| ArgumentErrors::one(String::new(), "argumentCheck", &message)),
            None => Ok(()),
        }
    }

    pub(crate) fn handler(&self) -> &Handler {
        &self.handler
    }

    /// Whether the handler is async.
    pub fn is_async(&self) -> bool {
        matches!(
            self.handler,
            Handler::Async(_) | Handler::AsyncStructured(_) | Handler::AsyncBlocks(_)
        )
    }
}

fn spec_digest(spec: &ToolSpec) -> Arc<str> {
    let mut canonical = serde_json::json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": spec.input_schema,
    });
    // Only when declared, so the digests of tools without one are unchanged.
    if let Some(output_schema) = &spec.output_schema {
        canonical["output_schema"] = output_schema.clone();
    }
    Arc::from(crate::canonical::digest(&canonical))
}

fn compile_schema(spec: &ToolSpec) -> Result<jsonschema::Validator, DefinitionError> {
    if spec.name.is_empty() {
        return Err(DefinitionError::EmptyName);
    }
    if !spec.input_schema.is_object() {
        return Err(DefinitionError::SchemaNotObject {
            tool: spec.name.clone(),
        });
    }
    schema::compile(&spec.name, &spec.input_schema)
}
