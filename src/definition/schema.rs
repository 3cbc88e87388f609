//! Compiling a tool's schemas once, when the definition is built.

use serde_json::Value;

use super::{DefinitionError, MAX_ARGUMENT_DEPTH, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES};

/// Compiles one of a tool's schemas: bounded in depth and size, offline, linear-time patterns, and
/// bounded in validation cost (see `schema_cost`).
pub(super) fn compile(
    tool_name: &str,
    schema: &Value,
) -> Result<jsonschema::Validator, DefinitionError> {
    let tool = || tool_name.to_owned();
    // Measured before compiling: the compiler recurses over the schema.
    let (depth, nodes) = measure(schema, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES);
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
        .build(schema)
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
    crate::schema_cost::check(schema, MAX_ARGUMENT_DEPTH).map_err(|detail| {
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
