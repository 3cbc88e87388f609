//! Layers: one limit id in two layers keeps each layer's window and max.

use super::*;

fn layered(
    first: (&str, &str),
    second: (&str, &str),
) -> (ToolController, ManualClock, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = registry(&runs);
    let top = rule_policy("", first.1, &registry);
    let bottom = rule_policy(RULES, second.1, &registry);
    let layers = Layers::new()
        .layer(first.0, top)
        .unwrap()
        .layer(second.0, bottom)
        .unwrap();
    let clock = ManualClock::new(T0);
    let controller = ToolController::try_new(registry, layers)
        .unwrap()
        .with_clock(clock.clone());
    (controller, clock, runs)
}

#[test]
fn layers_one_limit_id_in_two_layers_keeps_each_layers_window() {
    // Two teams both call their deploy cap "deploys": the project's is 100 a minute, the org's
    // (a layer with limits and no rules) three a day. At most three deploys may run in a day.
    let project = r#"{"id": "deploys", "tool": "deploy__*", "max": 100, "per": "minute",
        "over": "deny", "reason": "project: a hundred a minute"}"#;
    let org = r#"{"id": "deploys", "tool": "deploy__*", "max": 3, "per": "day",
        "over": "deny", "reason": "org: three a day"}"#;
    let (controller, clock, runs) = layered(("project", project), ("org", org));
    for _ in 0..10 {
        for _ in 0..3 {
            let _ = controller.handle(ToolCall::new("c", "deploy__web", json!({})));
        }
        clock.advance(Duration::from_secs(61));
    }
    assert!(
        runs.load(Ordering::SeqCst) <= 3,
        "{} deploys ran within ten minutes under a cap of three a day",
        runs.load(Ordering::SeqCst)
    );
}

#[test]
fn layers_one_limit_id_in_two_layers_lets_each_layer_its_own_max() {
    let cap = r#"{"id": "deploys", "tool": "deploy__*", "max": 3, "per": "hour",
        "over": "deny", "reason": "three an hour"}"#;
    let (controller, _clock, runs) = layered(("org", cap), ("project", cap));
    for _ in 0..5 {
        let _ = controller.handle(ToolCall::new("c", "deploy__web", json!({})));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "a call was counted once per layer in one shared counter"
    );
}
