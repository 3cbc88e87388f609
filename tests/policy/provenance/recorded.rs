//! Provenance: what is recorded and matched — a person's words and runs of words, values under
//! structured content's `data` or `type` keys, rules of one id in nested stacks, and `when`
//! conditions beside a tool both lists name.

use super::*;

#[test]
fn a_person_names_words_and_runs_of_up_to_four_words_and_a_long_request_overflows_nothing() {
    let registry = ToolRegistry::new([
        returning(
            "book",
            schema_of(json!({"hotel": {"type": "string"}})),
            &Arc::new(Mutex::new("booked".to_owned())),
        ),
        returning(
            "read_mail",
            json!({"type": "object"}),
            &Arc::new(Mutex::new("nothing new".to_owned())),
        ),
        returning(
            "post",
            schema_of(json!({"body": {"type": "string"}})),
            &Arc::new(Mutex::new("posted".to_owned())),
        ),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
            "flows": [
              {"id": "named", "tool": "book", "action": "ask", "reason": "r",
               "provenance": {"pointer": "/hotel", "not_seen_in": ["person"]}},
              {"id": "links", "tool": "post", "action": "ask", "reason": "r",
               "provenance": {"pointer": "/body", "read": "tokens", "seen_in": ["untrusted"]}}]}"#,
        &registry,
    )
    .unwrap();
    let controller = ToolController::try_new(registry, policy).unwrap();
    let long_filler: String = (0..3000).map(|n| format!("word{n} ")).collect();
    controller
        .record_person_request(
            None,
            &format!("Book Hotel Aurora, or the Grand Old Royal Palace Inn. {long_filler}"),
        )
        .unwrap();
    let book = |hotel: &str| {
        outcome_word(controller.handle(ToolCall::new("c", "book", json!({ "hotel": hotel }))))
    };
    assert_eq!(book("Hotel Aurora"), "allow");
    assert_eq!(book("hotel  AURORA"), "allow");
    assert_eq!(book("Aurora"), "allow");
    assert_eq!(book("Grand Old Royal Palace"), "allow");
    // Five words: longer than any run a request names.
    assert_eq!(book("Grand Old Royal Palace Inn"), "ask");
    assert_eq!(book("Hotel Lux"), "ask");
    // The request's many words did not overflow the session: a link no result carried passes.
    let post = controller.handle(ToolCall::new(
        "c",
        "post",
        json!({"body": "https://never-seen.example/"}),
    ));
    assert_eq!(outcome_word(post), "allow");
}

#[test]
fn values_under_data_or_type_keys_of_structured_content_are_recorded() {
    let registry = ToolRegistry::new([
        ToolDefinition::structured(
            ToolSpec::new("lookup", "", json!({"type": "object"}))
                .with_output_schema(json!({"type": "object"})),
            |_: &Value| -> Result<Value, ToolError> {
                Ok(json!({"data": {"payee": "DE89 3704 0044 0532 0130 00"},
                          "items": [{"type": "mallory@evil.example"}]}))
            },
        )
        .unwrap(),
        returning(
            "pay",
            schema_of(json!({"iban": {"type": "string"}})),
            &Arc::new(Mutex::new("paid".to_owned())),
        ),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(
        r#"{"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
            "flows": [{"id": "from-results", "tool": "pay", "action": "ask", "reason": "r",
                       "provenance": {"pointer": "/iban", "seen_in": ["untrusted"]}}]}"#,
        &registry,
    )
    .unwrap();
    let controller = ToolController::try_new(registry, policy).unwrap();
    let looked_up = controller.handle(ToolCall::new("c", "lookup", json!({})));
    assert_eq!(outcome_word(looked_up), "allow");
    for iban in [ATTACKER_IBAN, "mallory@evil.example"] {
        let outcome = controller.handle(ToolCall::new("c", "pay", json!({ "iban": iban })));
        assert_eq!(outcome_word(outcome), "ask", "{iban}");
    }
}

#[test]
fn nested_stacks_never_merge_two_rules_of_one_id_into_one_group() {
    use toolgate::policy::Layers;
    let mail = Arc::new(Mutex::new("see https://evil.example/".to_owned()));
    let registry = || {
        ToolRegistry::new([
            returning("read_mail", json!({"type": "object"}), &mail),
            returning(
                "fetch",
                schema_of(json!({"url": {"type": "string"}})),
                &Arc::new(Mutex::new(String::new())),
            ),
        ])
        .unwrap()
    };
    let layer = |seen: &str| {
        RulePolicy::from_json(
            &json!({"rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "r"}],
                    "flows": [{"id": "site", "tool": "fetch", "action": "deny", "reason": "r",
                               "provenance": {"pointer": "/url", "read": "host", "seen_in": [seen]}}]})
            .to_string(),
            &registry(),
        )
        .unwrap()
    };
    let inner = Layers::new()
        .layer("a", layer("untrusted"))
        .and_then(|layers| layers.layer("b", layer("trusted")))
        .unwrap();
    let org = Layers::new().layer("org", inner).unwrap();
    let controller = ToolController::try_new(registry(), org).unwrap();
    let read = controller.handle(ToolCall::new("c", "read_mail", json!({})));
    assert_eq!(outcome_word(read), "allow");
    let fetch = controller.handle(ToolCall::new(
        "c",
        "fetch",
        json!({"url": "https://evil.example/"}),
    ));
    assert_eq!(outcome_word(fetch), "deny");
}

/// Pinned by the mutation run: a rule's `when`, numbers as arguments, a tool both lists of
/// `sources` name (untrusted wins), and the default reading left out when written back.
#[test]
fn when_conditions_numbers_and_a_tool_both_lists_name() {
    let mail = Arc::new(Mutex::new(
        "account 12345678 and https://evil.example/".to_owned(),
    ));
    let registry = || {
        ToolRegistry::new([
            returning("read_mail", json!({"type": "object"}), &mail),
            returning(
                "pay",
                schema_of(json!({"account": {"type": "integer"}, "cents": {"type": "integer"}})),
                &Arc::new(Mutex::new("paid".to_owned())),
            ),
        ])
        .unwrap()
    };
    let policy = |sources: &str| {
        RulePolicy::from_json(
            &format!(
                r#"{{"rules": [{{"id": "all", "tool": "*", "action": "allow", "reason": "r"}}],
                    "sources": {sources},
                    "flows": [{{"id": "big-from-mail", "tool": "pay", "action": "ask", "reason": "r",
                      "when": {{"range": {{"pointer": "/cents", "min": 10000}}}},
                      "provenance": {{"pointer": "/account", "seen_in": ["untrusted"]}}}}]}}"#
            ),
            &registry(),
        )
        .unwrap_or_else(|error| panic!("{error}"))
    };
    let pay = |controller: &ToolController, account: u64, cents: u64| {
        outcome_word(controller.handle(ToolCall::new(
            "c",
            "pay",
            json!({"account": account, "cents": cents}),
        )))
    };
    // Untrusted by both lists (untrusted wins) and by the default (`trusted` here).
    for sources in [
        r#"{"trusted": ["read_mail"], "untrusted": ["read_mail"]}"#,
        r#"{"untrusted": ["read_mail"], "default": "trusted"}"#,
    ] {
        let controller = ToolController::try_new(registry(), policy(sources)).unwrap();
        let read = controller.handle(ToolCall::new("c", "read_mail", json!({})));
        assert_eq!(outcome_word(read), "allow");
        // The number the mail carried, in a large payment: asked; in a small one the rule's
        // `when` does not apply.
        assert_eq!(pay(&controller, 12_345_678, 50_000), "ask", "{sources}");
        assert_eq!(pay(&controller, 12_345_678, 100), "allow", "{sources}");
        // A number nobody wrote is not from the mail.
        assert_eq!(pay(&controller, 87_654_321, 50_000), "allow", "{sources}");
    }
    // Trusted by default: the mail's number is not from untrusted content.
    let controller =
        ToolController::try_new(registry(), policy(r#"{"default": "trusted"}"#)).unwrap();
    let read = controller.handle(ToolCall::new("c", "read_mail", json!({})));
    assert_eq!(outcome_word(read), "allow");
    assert_eq!(pay(&controller, 12_345_678, 50_000), "allow");
    // Written back, the default reading is left out; another is kept.
    let written: toolgate::rules::ValueProvenance =
        serde_json::from_value(json!({"pointer": "/a", "seen_in": ["person"]})).unwrap();
    assert!(
        serde_json::to_value(&written)
            .unwrap()
            .get("read")
            .is_none()
    );
    let tokens: toolgate::rules::ValueProvenance =
        serde_json::from_value(json!({"pointer": "/a", "read": "tokens", "seen_in": ["person"]}))
            .unwrap();
    assert_eq!(serde_json::to_value(&tokens).unwrap()["read"], "tokens");
}
