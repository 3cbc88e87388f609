//! `check --config FILE`: load everything, serve nothing.

use std::path::Path;
use std::process::ExitCode;

use crate::assemble;

/// Loads the config, starts and lists the upstreams, loads the policy layers against their
/// tools (every example in them decided as written), opens the audit sink and approval store —
/// then stops. Exit 0 printing what would be served and warnings for rules that can never decide
/// a call and layers that add nothing, or 1 naming every problem — an upstream that did not
/// start or list, or a tool held back (what `serve` would serve degraded), after the summary.
pub async fn check(config_path: &Path) -> ExitCode {
    let Some(config) = super::config_or_report(config_path) else {
        return ExitCode::FAILURE;
    };
    let Some(pins) = super::pins_or_report(&config) else {
        return ExitCode::FAILURE;
    };
    let Some(started) = super::start_degraded_or_report(&config, &pins).await else {
        return ExitCode::FAILURE;
    };
    let (controller, stack) = match assemble::controller(&config, &started) {
        Ok(built) => built,
        Err(problems) => {
            super::report(problems);
            return ExitCode::FAILURE;
        }
    };
    // A checkpoint key that does not load fails the check before anything is said to be ok.
    let signer = match config.checkpoints.as_ref().map(crate::checkpoints::signer) {
        Some(Err(problem)) => {
            super::report([format!("{}: {problem}", config.file.display())]);
            return ExitCode::FAILURE;
        }
        signer => signer.and_then(Result::ok),
    };
    println!("{}: ok", config.file.display());
    for (upstream, listed) in &started.counts {
        let served = started
            .served
            .iter()
            .filter(|served| &served.upstream == upstream)
            .count();
        println!("  upstream {upstream}: {served} of {listed} tools served");
    }
    for (upstream, tools) in &started.first_seen {
        println!(
            "  upstream {upstream}: not pinned yet; its {} tools will be pinned when first served",
            tools.len()
        );
    }
    for left in &started.left {
        println!(
            "  left out: {} of upstream {}: {}",
            left.name, left.upstream, left.why
        );
    }
    let (gates, tools): (Vec<_>, Vec<_>) = controller
        .listed_specs()
        .into_iter()
        .partition(|spec| toolgate::mcp::passthrough::is_gate(&spec.name));
    println!(
        "  {} tools listed to clients (the others are denied whatever their arguments); {} gates of resources, prompts or upstream requests some call could pass",
        tools.len(),
        gates.len()
    );
    // What a description tells the model beside what the tool does: warnings, not failures.
    for warning in crate::catalog::description_warnings(&started.served) {
        println!("  warning: {warning}");
    }
    for layer in &stack.states {
        println!(
            "  policy layer {}: digest {}",
            layer.path.display(),
            layer.digest
        );
    }
    if let (Some(settings), Some(signer)) = (&config.checkpoints, &signer) {
        println!(
            "  signed checkpoints of the audit log: key {}, written to {} every {} s",
            signer.name(),
            settings.file.display(),
            settings.every.as_secs()
        );
    }
    // A set that holds no tool serves an empty list: most likely a typo in its patterns.
    for set in &config.tool_sets {
        let patterns = set.patterns();
        if !tools
            .iter()
            .chain(&gates)
            .any(|spec| patterns.hold(&spec.name))
        {
            println!(
                "  warning: tool_sets.{}: its tools ({}) match no tool served; its endpoint {} lists none",
                set.name,
                set.tools.join(", "),
                set.path()
            );
        }
    }
    // `serve` would serve the rest, degraded; for a check that is a problem to fix — and so is
    // an analysis that could not run: `ok` never stands for a check that was skipped.
    let mut held_back = started.held_back();
    match super::policy::spec_registry(controller.specs()) {
        Ok(registry) => {
            for line in super::policy::layer_report(&config.policy_layers, &registry) {
                println!("{line}");
            }
        }
        Err(problem) => held_back.push(format!("the policy could not be analysed: {problem}")),
    }
    if held_back.is_empty() {
        ExitCode::SUCCESS
    } else {
        super::report(held_back);
        ExitCode::FAILURE
    }
}
