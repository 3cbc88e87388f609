//! `tools --config FILE`: what the upstreams offer, as a policy author needs it.

use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::fields::fields;

/// Starts the upstreams and prints every tool as JSON on stdout: the upstream, the name it is
/// served under, its description, and its argument fields (JSON Pointer, type, required).
pub async fn tools(config_path: &Path) -> ExitCode {
    let Some(config) = super::config_or_report(config_path) else {
        return ExitCode::FAILURE;
    };
    let Some(pins) = super::pins_or_report(&config) else {
        return ExitCode::FAILURE;
    };
    let Some(started) = super::start_or_report(&config, &pins).await else {
        return ExitCode::FAILURE;
    };
    let mut upstreams: Vec<Value> = Vec::new();
    for upstream in &config.upstreams {
        let tools: Vec<Value> = started
            .served
            .iter()
            .filter(|served| served.upstream == upstream.name)
            .map(|served| {
                let spec = &served.spec;
                json!({
                    "served_as": spec.name,
                    "upstream_name": served.tool.name,
                    "description": spec.description,
                    "fields": fields(&spec.input_schema),
                })
            })
            .collect();
        let left_out: Vec<Value> = started
            .left
            .iter()
            .filter(|left| left.upstream == upstream.name)
            .map(|left| json!({"name": left.name, "why": left.why}))
            .collect();
        upstreams.push(json!({
            "upstream": upstream.name,
            "tools": tools,
            "left_out": left_out,
        }));
    }
    let text = serde_json::to_string_pretty(&json!({ "upstreams": upstreams }))
        .expect("JSON values serialize");
    println!("{text}");
    ExitCode::SUCCESS
}
