//! An approval is bound to the call it was asked for. The canonical digest of the arguments,
//! written as a stream, equals an independent reference for hostile values (escapes, unicode,
//! extreme numbers, deep nesting); the approval digest's framing of tool, definition and arguments
//! never lets two calls share a digest; the same meaning spelled otherwise keeps its digest; and a
//! request altered in its store after it was held is refused at answer time, with or without an
//! audit sink, and runs nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use toolgate::ApprovalOutcome;

use crate::common::*;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use toolgate::approvals::{Answered, PendingApprovals};
use toolgate::audit::{AuditEvent, AuditKind, MemoryAuditSink};
use toolgate::*;

fn approve_tampered(audit: Option<Arc<MemoryAuditSink>>) -> (ToolResult, usize) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut controller = ToolController::new(
        registry([counted("apply_patch", patch_schema(), &runs)]),
        policy(&[], &["apply_patch"]),
    )
    // Requests come back with other arguments than were stored.
    .with_approval_store(AlteringStore::new(Alter::OnTake, |request| {
        request.call.arguments = json!({"patch": "rm -rf /"});
    }));
    if let Some(sink) = audit {
        controller = controller.with_audit_sink(sink);
    }
    let Outcome::PendingApproval(request) =
        controller.handle(ToolCall::new("c", "apply_patch", json!({"patch": "+ok"})))
    else {
        panic!("apply_patch asks");
    };
    let result = controller
        .resolve(ApprovalResponse::approve(request.approval_id))
        .unwrap();
    (result, runs.load(Ordering::SeqCst))
}

#[test]
fn tampered_request_is_denied_without_an_audit_sink() {
    let (result, runs) = approve_tampered(None);
    assert!(result.is_error);
    assert!(
        result.content.contains("does not match the digest"),
        "{result:?}"
    );
    assert_eq!(runs, 0);
}

#[test]
fn tampered_request_is_denied_with_an_audit_sink_and_recorded_as_stale() {
    let sink = Arc::new(MemoryAuditSink::new());
    let (result, runs) = approve_tampered(Some(sink.clone()));
    assert!(result.is_error);
    assert!(
        result.content.contains("does not match the digest"),
        "{result:?}"
    );
    assert_eq!(runs, 0);
    let events = sink.events();
    let stale = events.last().unwrap();
    assert_eq!(stale.kind, AuditKind::ApprovalStale);
    assert_eq!(stale.is_error, Some(true));
    assert!(
        stale
            .reason
            .as_deref()
            .is_some_and(|reason| reason.contains("digest")),
        "{stale:?}"
    );
    assert!(
        !events
            .iter()
            .any(|event| event.kind == AuditKind::ExecutionOutcome)
    );
}

/// An independent reference of the documented canonical form: keys in byte order, no whitespace,
/// strings as serde_json escapes them, integral numbers below 2^63 in magnitude as integers, other
/// floats in shortest `{:e}` form.
fn reference_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => {
            if let Some(integer) = number.as_i64() {
                out.push_str(&integer.to_string());
            } else if let Some(integer) = number.as_u64() {
                out.push_str(&integer.to_string());
            } else {
                let float = number.as_f64().expect("a finite float");
                if float.fract() == 0.0 && float.abs() < 9_223_372_036_854_775_808.0 {
                    out.push_str(&(float as i64).to_string());
                } else {
                    out.push_str(&format!("{float:e}"));
                }
            }
        }
        Value::String(text) => out.push_str(&serde_json::to_string(text).expect("a string")),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                reference_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).expect("a key"));
                out.push(':');
                reference_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn canonical_text(value: &Value) -> String {
    let mut out = String::new();
    reference_canonical(value, &mut out);
    out
}

fn hex(bytes: &[u8]) -> String {
    let mut text = String::from("sha256:");
    for byte in bytes {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

fn reference_call_digest(tool: &str, definition: &str, arguments: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    hasher.update(definition.as_bytes());
    hasher.update([0]);
    hasher.update(canonical_text(arguments).as_bytes());
    hex(&hasher.finalize())
}

fn nested(depth: usize) -> Value {
    let mut value = json!({"leaf": "é\u{1}\"", "n": -0.0});
    for level in 0..depth {
        value = if level % 2 == 0 {
            json!({"d": value, "a": level})
        } else {
            json!([level, value])
        };
    }
    value
}

/// Values chosen against the streamed writer: escapes, unicode, surrogate pairs, every control
/// character, signed zero, integral floats, extreme integers, exponents, pieces straddling the
/// 192-byte buffer, long escaped keys, empty keys, and nesting around the 128-level fallback.
fn hostile_values() -> Vec<Value> {
    let parsed = |text: &str| -> Value { serde_json::from_str(text).expect(text) };
    let mut values = vec![
        json!({}),
        json!({"": ""}),
        json!({"": {"": [""]}}),
        parsed(r#"{"s": "\ud83d\ude00 \u00e9 \u2028 \u0000 \u001f \u007f \/"}"#),
        json!({"controls": (0_u32..0x20).filter_map(char::from_u32).collect::<String>()}),
        json!({"k\u{0}ey": 1, "k\"ey": 2, "k\\ey": 3, "k\u{1f}": 4, "é": 5, "😀": 6, "\u{ffff}": 7}),
        json!({"neg_zero": -0.0, "one_float": 1.0, "one": 1, "half": 0.5}),
        parsed(r#"{"a": 1e300, "b": -1e-300, "c": 1.5e-7, "d": 123456789012345678901234567890}"#),
        parsed(r#"{"e": 1E2, "f": 10e-1, "g": 0.1e1, "h": -2.5E+3, "i": 5e-324}"#),
        json!({"max": u64::MAX, "min": i64::MIN, "imax": i64::MAX, "big": (1_u64 << 63)}),
        json!({"floats": [f64::MAX, f64::MIN_POSITIVE, -f64::MAX, 9.007_199_254_740_993e15]}),
        json!({"t": true, "f": false, "n": null}),
    ];
    for length in [
        0, 1, 63, 64, 65, 190, 191, 192, 193, 194, 383, 384, 385, 1000,
    ] {
        values.push(json!({"x": "y".repeat(length)}));
        values.push(json!({"y".repeat(length): length}));
        // Escaped pieces longer than the buffer go straight to the hasher.
        values.push(json!({"esc": "\u{1}".repeat(length), "q": "\"".repeat(length)}));
    }
    values.push(json!(
        (0..5000).map(|i| json!(i * 7 - 3000)).collect::<Vec<_>>()
    ));
    values.push(json!(
        (0..500)
            .map(|i| json!({format!("k{i}"): [i, f64::from(i) / 3.0, "v"]}))
            .collect::<Vec<_>>()
    ));
    let wide: serde_json::Map<String, Value> = (0..300)
        .map(|i| (format!("{:03}", 299 - i), json!(i)))
        .collect();
    values.push(Value::Object(wide));
    for depth in [60, 126, 127, 128, 129, 130, 200, 300] {
        values.push(json!({"deep": nested(depth)}));
    }
    values
}

#[test]
fn canonical_stream_audit_digest_equals_hash_of_canonical_text_for_hostile_values() {
    // The audit subject's argument digest is the streamed hash of the raw arguments, taken before
    // preparation, so even values nested past the recursion bound reach it.
    let runs = runs_by_name();
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = ToolController::new(
        any_tools(&["t"], &runs),
        ToolPolicy::new(["t"], [""; 0]).unwrap(),
    )
    .with_audit_sink(Arc::clone(&sink));
    let values = hostile_values();
    for (index, value) in values.iter().enumerate() {
        let _ = controller.handle(ToolCall::new(format!("c{index}"), "t", value.clone()));
    }
    let received: Vec<AuditEvent> = sink
        .events()
        .into_iter()
        .filter(|event| event.kind == AuditKind::CallReceived)
        .collect();
    assert_eq!(received.len(), values.len());
    for (value, event) in values.iter().zip(&received) {
        // The commitment as documented: SHA-256 over the domain tag, the salt's 16 bytes and the
        // SHA-256 of the canonical text — computed here from the text, not by the library's code.
        let salt = event.salt().unwrap().to_hex();
        let salt: Vec<u8> = (0..16)
            .map(|i| u8::from_str_radix(&salt[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let mut hasher = Sha256::new();
        hasher.update(b"toolgate argument commitment v1\0");
        hasher.update(&salt);
        hasher.update(Sha256::digest(canonical_text(value).as_bytes()));
        let expected = hex(&hasher.finalize()).replacen("sha256:", "salted-sha256:", 1);
        assert_eq!(event.argument_commitment, expected, "{}", event.call_id);
    }
}

#[test]
fn canonical_stream_approval_digest_equals_reference_framing_for_hostile_values() {
    let runs = runs_by_name();
    // Names a registry accepts (invisible and non-ASCII ones are refused when it is built, see
    // `canonical_stream_framing_with_nul_in_tool_names_never_collides`), with framing-like text.
    let names = ["t", "t:sha256:x", "t_sha256_0", "sha256:"];
    let registry = any_tools(&names, &runs);
    let runtime = ToolRuntime::new(registry);
    let pending = PendingApprovals::new();
    let why = Reason::new("probe").unwrap();
    let mut seen = std::collections::HashSet::new();
    for name in names {
        for value in hostile_values()
            .into_iter()
            .filter(|value| value.is_object())
        {
            let Ok(prepared) = runtime.prepare(ToolCall::new("c", name, value.clone())) else {
                // Nested past what preparation accepts; the audit probe covers those.
                continue;
            };
            let definition = prepared.definition().digest().to_owned();
            let request = pending.request(prepared, why.clone()).unwrap();
            assert_eq!(request.definition_digest, definition);
            assert_eq!(
                request.digest,
                reference_call_digest(name, &definition, &value),
                "{name:?}"
            );
            assert!(request.digest_matches());
            // Distinct (tool, arguments) pairs never share a digest here.
            assert!(seen.insert(request.digest.clone()), "{name:?}");
            pending.revoke(request.approval_id).unwrap();
        }
    }
}

/// A stored request rebuilt with other parts: `digest_matches` (the per-thread prefix cache path)
/// must follow the reference for any tool name, definition text and deep arguments, and must
/// refuse every single change.
#[test]
fn canonical_stream_digest_matches_follows_reference_and_refuses_every_change() {
    let runs = runs_by_name();
    let runtime = ToolRuntime::new(any_tools(&["t"], &runs));
    let pending = PendingApprovals::new();
    let request = pending
        .request(
            runtime
                .prepare(ToolCall::new("c", "t", json!({"a": 1})))
                .unwrap(),
            Reason::new("probe").unwrap(),
        )
        .unwrap();
    let base = serde_json::to_value(&request).unwrap();
    let rebuilt = |tool: &str, definition: &str, arguments: &Value, digest: &str| {
        let mut value = base.clone();
        value["call"]["tool_name"] = json!(tool);
        value["call"]["arguments"] = arguments.clone();
        value["definition_digest"] = json!(definition);
        value["digest"] = json!(digest);
        serde_json::from_value::<ApprovalRequest>(value).unwrap()
    };
    let tools = ["t", "t\u{0}", "\u{0}", "a\u{0}b", "é"];
    let definitions = ["sha256:d", "", "sha256:\u{0}x", &request.definition_digest];
    // More (tool, definition) pairs than the per-thread cache holds, asked twice.
    for _round in 0..2 {
        for tool in tools {
            for definition in definitions {
                for arguments in [
                    json!({"a": 1}),
                    json!({"a": 1.0, "b": [nested(140)]}),
                    json!({}),
                ] {
                    let digest = reference_call_digest(tool, definition, &arguments);
                    assert!(rebuilt(tool, definition, &arguments, &digest).digest_matches());
                    // One change at a time: the tool, the definition, an argument value.
                    let other_tool = format!("{tool}x");
                    assert!(
                        !rebuilt(&other_tool, definition, &arguments, &digest).digest_matches()
                    );
                    let other_definition = format!("{definition}0");
                    assert!(
                        !rebuilt(tool, &other_definition, &arguments, &digest).digest_matches()
                    );
                    assert!(!rebuilt(tool, definition, &json!({"a": 2}), &digest).digest_matches());
                    // Only the exact lowercase text matches.
                    let upper = digest.to_uppercase();
                    assert!(!rebuilt(tool, definition, &arguments, &upper).digest_matches());
                }
            }
        }
    }
}

#[test]
fn canonical_stream_same_meaning_same_digest_for_spellings_and_key_orders() {
    let parsed = |text: &str| -> Value { serde_json::from_str(text).expect(text) };
    let same = [
        (r#"{"b": 1, "a": 2}"#, r#"{"a":2,"b":1}"#),
        (r#"{"x": 1.0}"#, r#"{"x": 1}"#),
        (r#"{"x": 1e0}"#, r#"{"x": 10e-1}"#),
        (r#"{"x": -0.0}"#, r#"{"x": 0}"#),
        (r#"{"x": 1.5e2}"#, r#"{"x": 150}"#),
        (r#"{"x": 0.5}"#, r#"{"x": 5e-1}"#),
        (r#"{"x": "\u00e9\/"}"#, r#"{"x": "é/"}"#),
        (r#"{"x": "\ud83d\ude00"}"#, r#"{"x": "😀"}"#),
        (r#"{"\u0061": [ 1 , 2 ]}"#, r#"{"a":[1,2]}"#),
        (r#"{"x": -9007199254740993}"#, r#"{"x": -9007199254740993}"#),
        (
            r#"{"x": 4611686018427387904}"#,
            r#"{"x": 4.611686018427387904e18}"#,
        ),
    ];
    let runs = runs_by_name();
    let runtime = ToolRuntime::new(any_tools(&["t"], &runs));
    let pending = PendingApprovals::new();
    let digest = |text: &str| {
        let request = pending
            .request(
                runtime
                    .prepare(ToolCall::new("c", "t", parsed(text)))
                    .unwrap(),
                Reason::new("probe").unwrap(),
            )
            .unwrap();
        pending.revoke(request.approval_id).unwrap();
        request.digest
    };
    for (a, b) in same {
        assert_eq!(digest(a), digest(b), "{a} vs {b}");
    }
    let different = [
        (r#"{"x": 1}"#, r#"{"x": "1"}"#),
        (r#"{"x": 1}"#, r#"{"x": 1.5}"#),
        (
            r#"{"x": 18446744073709551615}"#,
            r#"{"x": 18446744073709551614}"#,
        ),
        (
            r#"{"x": 18446744073709551615}"#,
            r#"{"x": 1.8446744073709552e19}"#,
        ),
        (r#"{"x": null}"#, r#"{}"#),
        (r#"{"x": [1, 2]}"#, r#"{"x": [2, 1]}"#),
        (r#"{"x": "a\u0000"}"#, r#"{"x": "a"}"#),
        (r#"{"x": {"": 1}}"#, r#"{"x": {" ": 1}}"#),
    ];
    for (a, b) in different {
        assert_ne!(digest(a), digest(b), "{a} vs {b}");
    }
}

/// A tool name holding NUL could shift the framing's separator into another tool's digest: such a
/// name is refused when the registry is built (issue 21: invisible characters), and an argument
/// that spells the other call's framing is escaped, never raw NUL.
#[test]
fn canonical_stream_framing_with_nul_in_tool_names_never_collides() {
    let runs = runs_by_name();
    let first = any_tool("a", &runs);
    let definition = first.digest().to_owned();
    assert!(!definition.contains('\0'));
    assert_eq!(definition.len(), 7 + 64);
    let crafted = format!("a\u{0}{definition}");
    let refused = ToolRegistry::new([any_tool("a", &runs), any_tool(&crafted, &runs)]);
    assert!(
        matches!(
            refused,
            Err(toolgate::registry::RegistryError::InvisibleCharacter {
                index: 1,
                code_point: 0,
                ..
            })
        ),
        "{refused:?}"
    );
    let registry = registry([first, any_tool("a_other", &runs)]);
    let runtime = ToolRuntime::new(registry);
    let pending = PendingApprovals::new();
    let digest_of = |tool: &str, arguments: Value| {
        let request = pending
            .request(
                runtime
                    .prepare(ToolCall::new("c", tool, arguments))
                    .unwrap(),
                Reason::new("probe").unwrap(),
            )
            .unwrap();
        pending.revoke(request.approval_id).unwrap();
        request.digest
    };
    let plain = digest_of("a", json!({}));
    let other = digest_of("a_other", json!({}));
    assert_ne!(plain, other);
    let spelled = digest_of("a", json!({"\u{0}": definition}));
    assert_ne!(plain, spelled);
    assert_ne!(other, spelled);
    // A model naming the crafted tool finds no tool.
    assert!(
        runtime
            .prepare(ToolCall::new("c", &crafted, json!({})))
            .is_err()
    );
}

/// A stored call altered after it was held (arguments or tool) is stale at answer time, on the
/// path that starts from the definition's kept hasher state; the same meaning still matches.
#[test]
fn canonical_stream_answer_time_check_refuses_altered_stored_calls() {
    let runs = runs_by_name();
    let runtime = ToolRuntime::new(any_tools(&["t", "u"], &runs));
    let policy = ToolPolicy::new(Vec::<String>::new(), ["t", "u"]).unwrap();
    // Altered as stored: other arguments, another tool, the same meaning respelled, nothing.
    let alterations: [fn(&mut ApprovalRequest); 4] = [
        |request| request.call.arguments = json!({"n": 2, "s": "x"}),
        |request| request.call.tool_name = "u".to_owned(),
        |request| request.call.arguments = json!({"s": "x", "n": 1.0}),
        |_| {},
    ];
    for (alteration, alter) in alterations.into_iter().enumerate() {
        let store = AlteringStore::new(Alter::OnInsert, alter);
        let pending =
            PendingApprovals::with_store(store, toolgate::approvals::ApprovalLimits::default());
        let prepared = runtime
            .prepare(ToolCall::new("c", "t", json!({"n": 1, "s": "x"})))
            .unwrap();
        let request = pending
            .request(prepared, Reason::new("probe").unwrap())
            .unwrap();
        let Answered::Approved(approval) = pending
            .answer(ApprovalResponse::approve(request.approval_id))
            .unwrap()
        else {
            panic!("approved");
        };
        let outcome = Authorized::by_approval(&runtime, &policy, approval);
        match (alteration, outcome) {
            (0 | 1, ApprovalOutcome::Stale { .. }) | (2 | 3, ApprovalOutcome::Allowed { .. }) => {}
            (alteration, other) => panic!("alteration {alteration}: {other:?}"),
        }
    }
}
