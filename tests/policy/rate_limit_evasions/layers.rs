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

#[test]
fn layers_named_apart_but_counted_as_one_share_their_limits_across_controllers() {
    // Two instances of one deployment sharing a counters' store: each names its layer by the
    // path it mounts the file at (the gateway's layer name), and counts it under the layer's
    // place in their common configuration. Named by its path alone, each ran its own cap.
    let cap = r#"{"id": "deploys", "tool": "deploy__*", "max": 3, "per": "hour",
        "over": "deny", "reason": "three an hour"}"#;
    let runs = Arc::new(AtomicUsize::new(0));
    let store: Arc<dyn toolgate::limits::RateCounters> =
        Arc::new(toolgate::limits::MemoryRateCounters::default());
    let instance = |path: &str| {
        let registry = registry(&runs);
        let policy = rule_policy(RULES, cap, &registry);
        let layers = Layers::new()
            .layer_counted_as(path, "policy.layers[0]", policy)
            .unwrap();
        ToolController::try_new(registry, layers)
            .unwrap()
            .with_clock(ManualClock::new(T0))
            .with_rate_counters(Arc::clone(&store))
    };
    let instances = [instance("/srv/a/policy.json"), instance("./policy.json")];
    for at in 0..6 {
        let _ = instances[at % 2].handle(ToolCall::new("c", "deploy__web", json!({})));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "each instance ran its own cap"
    );
    // One stack never counts two layers as one: a second layer with those counters is refused.
    let registry = registry(&runs);
    assert!(matches!(
        Layers::new()
            .layer_counted_as("org.json", "policy.layers[0]", ToolPolicy::default())
            .unwrap()
            .layer_counted_as("project.json", "policy.layers[0]", ToolPolicy::default()),
        Err(toolgate::policy::LayerError::BadName { name }) if name == "policy.layers[0]"
    ));
    // Nor two layers one name, whatever their counters; nor an empty name or counters.
    for (first, second) in [
        (
            ("org.json", "policy.layers[0]"),
            ("org.json", "policy.layers[1]"),
        ),
        (("org.json", "policy.layers[0]"), (" ", "policy.layers[1]")),
        (("org.json", "policy.layers[0]"), ("team.json", "")),
    ] {
        assert!(
            matches!(
                Layers::new()
                    .layer_counted_as(first.0, first.1, ToolPolicy::default())
                    .unwrap()
                    .layer_counted_as(second.0, second.1, ToolPolicy::default()),
                Err(toolgate::policy::LayerError::BadName { .. })
            ),
            "{second:?}"
        );
    }
    // A name may be another layer's counters, and the reverse: they are apart.
    assert!(
        Layers::new()
            .layer_counted_as("a", "b", rule_policy(RULES, cap, &registry))
            .unwrap()
            .layer_counted_as("b", "a", ToolPolicy::default())
            .is_ok()
    );
}
