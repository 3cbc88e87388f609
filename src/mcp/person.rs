//! The person's request on a `tools/call`: a `_meta` key the host sets, outside the arguments the
//! model writes, recorded for the provenance rules (see [`crate::provenance`]).

use rmcp::model::RequestMetaObject;
use serde_json::Value;

use crate::ToolController;
use crate::contract::Principal;

/// The `_meta` key of a `tools/call` request holding what the person asked, as the person wrote
/// it (a string, or a list of strings): the host sets it from its own input box — never from the
/// model's output — and the values it carries count as named by the person for the principal
/// the request is authenticated as (see [`ToolController::record_person_request`]). The upstream
/// never sees it.
pub const PERSON_REQUEST_META: &str = "dev.toolgate/personRequest";

/// The most text one request may carry under [`PERSON_REQUEST_META`].
pub const MAX_PERSON_REQUEST_BYTES: usize = 64 * 1024;

/// Records the person's request `meta` carries, if any; the refusal to answer with otherwise.
pub(crate) fn record(
    controller: &ToolController,
    metas: [Option<&RequestMetaObject>; 2],
    principal: Option<&Principal>,
) -> Result<(), String> {
    let mut values = metas
        .into_iter()
        .flatten()
        .filter_map(|meta| meta.0.0.get(PERSON_REQUEST_META));
    let Some(value) = values.next() else {
        return Ok(());
    };
    if values.next().is_some_and(|other| other != value) {
        return Err(format!(
            "refused: two different _meta[{PERSON_REQUEST_META:?}] in one request; nothing ran"
        ));
    }
    let texts: Vec<&str> = match value {
        Value::String(text) => vec![text],
        Value::Array(items) => items
            .iter()
            .map(Value::as_str)
            .collect::<Option<_>>()
            .ok_or_else(refusal_of_shape)?,
        _ => return Err(refusal_of_shape()),
    };
    if texts.iter().map(|text| text.len()).sum::<usize>() > MAX_PERSON_REQUEST_BYTES {
        return Err(format!(
            "refused: _meta[{PERSON_REQUEST_META:?}] holds more than {MAX_PERSON_REQUEST_BYTES} bytes; nothing ran"
        ));
    }
    for text in texts {
        controller
            .record_person_request(principal, text)
            .map_err(|error| {
                format!("not run: the person's request could not be recorded ({error})")
            })?;
    }
    Ok(())
}

fn refusal_of_shape() -> String {
    format!(
        "refused: _meta[{PERSON_REQUEST_META:?}] must be a string or a list of strings (what the person asked); nothing ran"
    )
}
