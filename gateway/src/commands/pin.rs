//! `pin --config FILE`: accept the upstreams' tool definitions as they are now.

use std::path::Path;
use std::process::ExitCode;

use crate::pins::{Pins, Verdict};

/// Starts the upstreams, pins every tool they list now (each upstream's set replaced whole), and
/// prints, per tool, whether it was new, changed or unchanged. A running gateway serves the
/// accepted tools on its next list change or restart.
pub async fn pin(config_path: &Path) -> ExitCode {
    let Some(config) = super::config_or_report(config_path) else {
        return ExitCode::FAILURE;
    };
    let Some(mut pins) = super::pins_or_report(&config) else {
        return ExitCode::FAILURE;
    };
    // Everything the upstreams offer now, judged by nothing: this is the accepting.
    let Some(started) = super::start_or_report(&config, &Pins::off()).await else {
        return ExitCode::FAILURE;
    };
    // Accepting a definition accepts what its description tells the model: said first.
    for warning in crate::catalog::description_warnings(&started.served) {
        println!("  warning: {warning}");
    }
    for upstream in &config.upstreams {
        let tools: Vec<(rmcp::model::Tool, String)> = started
            .served
            .iter()
            .filter(|served| served.upstream == upstream.name)
            .map(|served| (served.tool.clone(), served.digest.clone()))
            .collect();
        for (tool, digest) in &tools {
            let tool = &tool.name;
            let what = match pins.judge(&upstream.name, tool, digest) {
                Verdict::Pinned => continue,
                Verdict::FirstSeen | Verdict::New => "new".to_owned(),
                Verdict::Changed { pinned } => format!("changed ({pinned} → {digest})"),
            };
            println!("  upstream {}: {tool}: {what}, pinned", upstream.name);
        }
        println!("upstream {}: {} tools pinned", upstream.name, tools.len());
        pins.pin(&upstream.name, tools);
    }
    match pins.save() {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            super::report([problem]);
            ExitCode::FAILURE
        }
    }
}
