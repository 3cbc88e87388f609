//! Structured output: a handler that returns a JSON value, checked against the tool's output
//! schema before anything is passed on.

use std::sync::Arc;

use serde_json::Value;

use super::handler::Handler;
use super::{
    ArgumentErrors, DefinitionError, MAX_ARGUMENT_DEPTH, ToolDefinition, ToolError, exceeds_depth,
};
use crate::contract::{ToolResult, ToolSpec};

/// The output validator a definition needs: one for a structured handler (whose spec must declare
/// an object output schema), none otherwise (whose spec must declare none).
pub(super) fn compile(
    spec: &ToolSpec,
    handler: &Handler,
) -> Result<Option<jsonschema::Validator>, DefinitionError> {
    let misfit = |detail: &str| DefinitionError::OutputSchema {
        tool: spec.name.clone(),
        detail: detail.to_owned(),
    };
    match (&spec.output_schema, handler) {
        (None, Handler::Structured(_) | Handler::AsyncStructured(_)) => Err(misfit(
            "a structured handler needs an output_schema (ToolSpec::with_output_schema)",
        )),
        (Some(_), Handler::Blocking(_) | Handler::Async(_)) => Err(misfit(
            "an output_schema needs a structured handler (ToolDefinition::structured)",
        )),
        (Some(schema), Handler::Structured(_) | Handler::AsyncStructured(_))
            if !schema.is_object() =>
        {
            Err(misfit("output_schema must be a JSON object"))
        }
        (Some(schema), Handler::Structured(_) | Handler::AsyncStructured(_)) => {
            super::schema::compile(&spec.name, schema).map(Some)
        }
        (Some(schema), Handler::AsyncBlocks(_)) if !schema.is_object() => {
            Err(misfit("output_schema must be a JSON object"))
        }
        (Some(schema), Handler::AsyncBlocks(_)) => {
            super::schema::compile(&spec.name, schema).map(Some)
        }
        (None, _) => Ok(None),
    }
}

impl ToolDefinition {
    /// A tool whose handler returns structured output: a JSON value that must satisfy the spec's
    /// [`output_schema`](ToolSpec::output_schema). The result carries the value
    /// ([`ToolResult::structured`]) and its compact JSON text; providers that know structured
    /// results (MCP `structuredContent`) send the value, the others the text. An output that does
    /// not satisfy the schema is never passed on: the result is an error naming how many
    /// violations there were (no value quoted).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), for both schemas; [`DefinitionError::OutputSchema`] if the spec has
    /// no output schema or it is not an object.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    ///
    /// let spec = ToolSpec::new("add", "Add a and b.", json!({"type": "object"}))
    ///     .with_output_schema(json!({
    ///         "type": "object",
    ///         "properties": {"sum": {"type": "integer"}},
    ///         "required": ["sum"]
    ///     }));
    /// let add = ToolDefinition::structured(spec, |args: &Value| -> Result<Value, ToolError> {
    ///     Ok(json!({"sum": args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)}))
    /// })?;
    /// assert!(add.spec().output_schema.is_some());
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
    /// ```
    pub fn structured(
        spec: ToolSpec,
        handler: impl Fn(&Value) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> Result<Self, DefinitionError> {
        Self::build(spec, Handler::Structured(Arc::new(handler)))
    }

    /// [`structured`](Self::structured) with an async handler (a call forwarded over the network,
    /// say): it receives the validated arguments by value, and its value is checked against the
    /// output schema the same way before anything is passed on.
    ///
    /// # Errors
    ///
    /// As [`structured`](Self::structured).
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolgate::{ToolDefinition, ToolError, ToolSpec};
    ///
    /// let spec = ToolSpec::new("now", "The time.", json!({"type": "object"}))
    ///     .with_output_schema(json!({"type": "object", "required": ["ms"]}));
    /// let now = ToolDefinition::structured_async(spec, |_: Value| async move {
    ///     Ok::<_, ToolError>(json!({"ms": 0}))
    /// })?;
    /// assert!(now.is_async());
    /// # Ok::<(), toolgate::definition::DefinitionError>(())
    /// ```
    pub fn structured_async<F, Fut>(spec: ToolSpec, handler: F) -> Result<Self, DefinitionError>
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        let handler: Arc<super::handler::AsyncStructuredHandler> = Arc::new(
            move |arguments: Value| -> super::handler::BoxFuture<'static, _> {
                Box::pin(handler(arguments))
            },
        );
        Self::build(spec, Handler::AsyncStructured(handler))
    }

    /// The result for structured output: the value if it satisfies the output schema, else an
    /// error result that quotes nothing of it.
    pub(crate) fn structured_result(&self, call_id: String, value: Value) -> ToolResult {
        let Some(validator) = &self.output_validator else {
            // Unreachable by the invariant; refusing is the safe answer.
            return ToolResult::error(call_id, "the tool's output has no schema to check it");
        };
        if exceeds_depth(&value, MAX_ARGUMENT_DEPTH) {
            return ToolResult::error(
                call_id,
                format!(
                    "the tool's output nests deeper than {MAX_ARGUMENT_DEPTH} levels; the tool ran, and its output was not passed on"
                ),
            );
        }
        if validator.is_valid(&value) {
            return ToolResult::structured(call_id, value);
        }
        let violations = count_violations(validator, &value);
        ToolResult::error(
            call_id,
            format!(
                "the tool's output does not satisfy its output schema ({violations} violation(s)); the tool ran, and its output was not passed on"
            ),
        )
    }
}

/// How many ways `value` breaks the output schema. Only the count is told (nothing of the output
/// is quoted), so the violations are counted, not listed; counting stops where the argument
/// listings stop.
pub(super) fn count_violations(validator: &jsonschema::Validator, value: &Value) -> usize {
    let limit = ArgumentErrors::MAX_LISTED + ArgumentErrors::MAX_COUNTED + 1;
    validator.iter_errors(value).take(limit).count().max(1)
}
