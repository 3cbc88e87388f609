//! An adversarial review of the performance changes: the streamed canonical digest and the
//! approval digest framing, the per-registry `ToolPolicy` table, the word-at-a-time name hash,
//! and the rule index from two rules per action. Each test names the class it attacks; each one
//! here holds (the probes that broke are described in the review report, not kept as failures).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{Alter, AlteringStore, registry};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use toolgate::approvals::{Answered, PendingApprovals};
use toolgate::audit::{AuditEvent, AuditKind, MemoryAuditSink};
use toolgate::definition::BoxFuture;
use toolgate::limits::RateSlot;
use toolgate::*;

// ---------------------------------------------------------------------------------------------
// Shared helpers.

/// A tool taking any object, counting its runs in `runs` under its name.
fn any_tool(name: &str, runs: &Arc<Mutex<BTreeMap<String, usize>>>) -> ToolDefinition {
    let runs = Arc::clone(runs);
    let owned = name.to_owned();
    ToolDefinition::new(
        ToolSpec::new(name, "probe", json!({"type": "object"})),
        move |_: &Value| -> Result<String, ToolError> {
            *runs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(owned.clone())
                .or_default() += 1;
            Ok("ran".to_owned())
        },
    )
    .expect("schema compiles")
}

fn counter() -> Arc<Mutex<BTreeMap<String, usize>>> {
    Arc::new(Mutex::new(BTreeMap::new()))
}

fn runs_of(runs: &Arc<Mutex<BTreeMap<String, usize>>>, name: &str) -> usize {
    runs.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(name)
        .copied()
        .unwrap_or(0)
}

fn tools(names: &[&str], runs: &Arc<Mutex<BTreeMap<String, usize>>>) -> ToolRegistry {
    registry(names.iter().map(|name| any_tool(name, runs)))
}

/// What a call came to, comparable across controllers.
fn summary(outcome: &Outcome) -> (String, String, bool) {
    match outcome {
        Outcome::Completed(result) => (
            "completed".to_owned(),
            result.content.clone(),
            result.is_error,
        ),
        Outcome::PendingApproval(request) => (
            "pending".to_owned(),
            request.reason.as_str().to_owned(),
            false,
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Class 1: canonical digests, streamed.

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
    let runs = counter();
    let sink = Arc::new(MemoryAuditSink::new());
    let controller = ToolController::new(
        tools(&["t"], &runs),
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
    let runs = counter();
    // Names a registry accepts (invisible and non-ASCII ones are refused when it is built, see
    // `canonical_stream_framing_with_nul_in_tool_names_never_collides`), with framing-like text.
    let names = ["t", "t:sha256:x", "t_sha256_0", "sha256:"];
    let registry = tools(&names, &runs);
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
    let runs = counter();
    let runtime = ToolRuntime::new(tools(&["t"], &runs));
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
    let runs = counter();
    let runtime = ToolRuntime::new(tools(&["t"], &runs));
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
    let runs = counter();
    let first = any_tool("a", &runs);
    let definition = first.digest().to_owned();
    assert!(!definition.contains('\0'));
    assert_eq!(definition.len(), 7 + 64);
    let crafted = format!("a\u{0}{definition}");
    let refused = ToolRegistry::new([any_tool("a", &runs), any_tool(&crafted, &runs)]);
    assert!(
        matches!(
            refused,
            Err(toolgate::RegistryError::InvisibleCharacter {
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
    let runs = counter();
    let runtime = ToolRuntime::new(tools(&["t", "u"], &runs));
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

// ---------------------------------------------------------------------------------------------
// Class 2: the per-registry ToolPolicy table.

/// The parts of an audit event that do not depend on time or ids.
fn comparable(events: &[AuditEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{:?}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{}",
                e.kind,
                e.call_id,
                e.tool,
                e.action,
                e.reason,
                e.rule_id,
                e.policy_digest,
                e.is_error,
                // Salted afresh on each run: only its presence compares.
                e.argument_commitment.starts_with("salted-sha256:")
            )
        })
        .collect()
}

const NAMES: [&str; 7] = ["d", "allowed", "c", "asked", "a", "allowed2", "nul"];

fn name_policy() -> ToolPolicy {
    // Names the registry lacks, too: they must not shift the table.
    ToolPolicy::new(["allowed", "allowed2", "missing"], ["asked", "gone", "nul"]).unwrap()
}

/// Table decisions (with and without a sink) against the general path (the same ToolPolicy behind
/// a closure): same results, same audit trail, same as `decide_for`.
#[test]
fn policy_table_decides_as_decide_for_and_as_the_general_path() {
    let policy = name_policy();
    let general = {
        let policy = policy.clone();
        move |call: &PreparedToolCall| policy.decide_for(call.tool_name())
    };
    let runs_table = counter();
    let runs_general = counter();
    let sink_table = Arc::new(MemoryAuditSink::new());
    let sink_general = Arc::new(MemoryAuditSink::new());
    let table = ToolController::new(tools(&NAMES, &runs_table), policy.clone());
    let table_audited = ToolController::new(tools(&NAMES, &runs_table), Arc::new(policy.clone()))
        .with_audit_sink(Arc::clone(&sink_table));
    let general_audited = ToolController::new(tools(&NAMES, &runs_general), general)
        .with_audit_sink(Arc::clone(&sink_general));
    for round in 0..3 {
        for name in NAMES.iter().chain(&["missing", "gone", "ALLOWED"]) {
            let call = || ToolCall::new(format!("c{round}{name}"), *name, json!({"x": round}));
            let a = summary(&table.handle(call()));
            let b = summary(&table_audited.handle(call()));
            let c = summary(&general_audited.handle(call()));
            assert_eq!(a, b, "{name:?}");
            assert_eq!(b, c, "{name:?}");
            let expected = policy.decide_for(name);
            let kind = match expected.action {
                _ if !NAMES.contains(name) => "completed",
                PolicyAction::Allow | PolicyAction::Deny => "completed",
                _ => "pending",
            };
            assert_eq!(a.0, kind, "{name:?}");
            if NAMES.contains(name) && expected.action == PolicyAction::Deny {
                assert!(a.1.contains(expected.reason.as_str()), "{name:?}: {}", a.1);
            }
        }
    }
    assert_eq!(
        comparable(&sink_table.events()),
        comparable(&sink_general.events())
    );
    // Each allowed tool ran in both the table controllers, nothing else ran.
    for name in NAMES {
        let expected = if policy.decide_for(name).action == PolicyAction::Allow {
            6
        } else {
            0
        };
        assert_eq!(runs_of(&runs_table, name), expected, "{name:?}");
        assert_eq!(runs_of(&runs_general, name) * 2, expected, "{name:?}");
    }
}

/// The async check is asked on fallback decisions only — a ToolPolicy's default deny is one —
/// on the table path exactly as on the general path, with and without a sink.
#[test]
fn policy_table_asks_the_async_check_on_default_deny_only() {
    for audited in [false, true] {
        for table in [true, false] {
            let asked = Arc::new(Mutex::new(Vec::<String>::new()));
            let check = {
                let asked = Arc::clone(&asked);
                move |call: &PreparedToolCall| -> BoxFuture<'static, PolicyDecision> {
                    asked.lock().unwrap().push(call.tool_name().to_owned());
                    Box::pin(async { PolicyDecision::allow(Reason::from_static("check allows")) })
                }
            };
            let runs = counter();
            let policy = name_policy();
            let controller = if table {
                ToolController::new(tools(&NAMES, &runs), policy)
            } else {
                let general = move |call: &PreparedToolCall| policy.decide_for(call.tool_name());
                ToolController::new(tools(&NAMES, &runs), general)
            };
            let mut controller =
                controller.with_async_check(check, std::time::Duration::from_secs(5));
            if audited {
                controller = controller.with_audit_sink(MemoryAuditSink::new());
            }
            for name in NAMES {
                let _ = controller.handle(ToolCall::new("c", name, json!({})));
            }
            let mut asked = asked.lock().unwrap().clone();
            asked.sort();
            assert_eq!(asked, ["a", "c", "d"], "audited {audited}, table {table}");
            // The check allowed the default-denied tools: they ran.
            assert_eq!(runs_of(&runs, "d"), 1);
            assert_eq!(runs_of(&runs, "asked"), 0);
        }
    }
}

/// A user policy that holds a ToolPolicy but decides otherwise.
struct Overrides {
    inner: ToolPolicy,
    slots: bool,
}

impl Policy for Overrides {
    fn decide(&self, call: &PreparedToolCall) -> PolicyDecision {
        match self.inner.decide_for(call.tool_name()).action {
            PolicyAction::Allow if !self.slots => {
                PolicyDecision::deny(Reason::from_static("the wrapper denies what it allows"))
            }
            _ => self.inner.decide_for(call.tool_name()),
        }
    }

    fn rate_slots(&self, _: &PreparedToolCall) -> Result<Vec<RateSlot>, PolicyDecision> {
        if self.slots {
            let reason = Reason::from_static("one call per session");
            Ok(vec![RateSlot::new(
                "one",
                None,
                1,
                PolicyAction::Deny,
                reason,
            )])
        } else {
            Ok(Vec::new())
        }
    }
}

/// Every policy other than a ToolPolicy (or an Arc of one) is asked: wrappers, layers, shadows,
/// closures, trait objects — the table never answers for them.
#[test]
fn policy_table_never_answers_for_wrappers_layers_shadows_or_user_types() {
    let allow_a = || ToolPolicy::new(["a"], ["b"]).unwrap();
    let deny_a = |call: &PreparedToolCall| {
        if call.tool_name() == "a" {
            PolicyDecision::deny(Reason::from_static("layer denies a"))
        } else {
            PolicyDecision::allow(Reason::from_static("layer allows"))
        }
    };
    let candidates: Vec<(&str, Arc<dyn Policy>)> = vec![
        (
            "wrapper",
            Arc::new(Overrides {
                inner: allow_a(),
                slots: false,
            }),
        ),
        (
            "dyn wrapper",
            Arc::new(Arc::new(Overrides {
                inner: allow_a(),
                slots: false,
            }) as Arc<dyn Policy>),
        ),
        (
            "layers",
            Arc::new(
                Layers::new()
                    .layer("tools", allow_a())
                    .unwrap()
                    .layer("deny", deny_a)
                    .unwrap(),
            ),
        ),
        (
            "shadow",
            Arc::new(Shadow::new(
                Overrides {
                    inner: allow_a(),
                    slots: false,
                },
                allow_a(),
            )),
        ),
        ("closure", Arc::new(deny_a)),
    ];
    for (label, policy) in candidates {
        for audited in [false, true] {
            let runs = counter();
            let mut controller =
                ToolController::new(tools(&["b", "a"], &runs), Arc::clone(&policy));
            if audited {
                controller = controller.with_audit_sink(MemoryAuditSink::new());
            }
            let outcome = summary(&controller.handle(ToolCall::new("c", "a", json!({}))));
            assert!(outcome.2, "{label}: {outcome:?}");
            assert_eq!(runs_of(&runs, "a"), 0, "{label}");
        }
    }
    // A wrapper that decides as its ToolPolicy but names a rate limit is counted.
    for audited in [false, true] {
        let runs = counter();
        let mut controller = ToolController::new(
            tools(&["b", "a"], &runs),
            Overrides {
                inner: allow_a(),
                slots: true,
            },
        );
        if audited {
            controller = controller.with_audit_sink(MemoryAuditSink::new());
        }
        let first = summary(&controller.handle(ToolCall::new("c", "a", json!({}))));
        let second = summary(&controller.handle(ToolCall::new("c", "a", json!({}))));
        assert!(!first.2);
        assert!(second.2 && second.1.contains("rate limit"), "{second:?}");
        assert_eq!(runs_of(&runs, "a"), 1);
    }
}

/// A policy that does not fit the registry is not put in force: every call is denied, a
/// ToolPolicy replacement later gets a table that fits.
#[test]
fn policy_table_unfit_policy_denies_then_a_fitting_one_takes_over() {
    let runs = counter();
    let registry_with = || {
        registry([ToolDefinition::new(
            ToolSpec::new(
                "read",
                "",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            |_: &Value| -> Result<String, ToolError> { Ok("ran".into()) },
        )
        .unwrap()])
    };
    let rules = RulePolicy::from_json(
        r#"{"rules": [{"id": "r", "tool": "read", "action": "allow", "reason": "ok",
            "when": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}]}"#,
        &registry_with(),
    )
    .unwrap();
    let controller = ToolController::new(tools(&["read", "other"], &runs), rules);
    for name in ["read", "other"] {
        let outcome =
            summary(&controller.handle(ToolCall::new("c", name, json!({"path": "/work/a"}))));
        assert!(outcome.2, "{name}: {outcome:?}");
    }
    controller
        .replace_policy(ToolPolicy::new(["other"], [""; 0]).unwrap())
        .unwrap();
    let other = summary(&controller.handle(ToolCall::new("c", "other", json!({}))));
    let read = summary(&controller.handle(ToolCall::new("c", "read", json!({}))));
    assert!(!other.2 && read.2, "{other:?} {read:?}");
    assert_eq!(runs_of(&runs, "other"), 1);
    assert_eq!(runs_of(&runs, "read"), 0);
}

/// Registries with the same tools in other positions, swapped in while other threads call: a
/// call prepared under one registry is never decided by another registry's table (a denied tool
/// at an allowed tool's position would run).
#[test]
fn policy_table_replacements_racing_handle_never_mix_registries() {
    let runs = counter();
    let orders: [&[&str]; 4] = [&["a", "b"], &["b", "a"], &["b", "x", "a"], &["a"]];
    let registries = || orders.map(|names| tools(names, &runs));
    let controller = Arc::new(ToolController::new(
        tools(orders[0], &runs),
        ToolPolicy::new(["a"], [""; 0]).unwrap(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let allowed_ok = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..2)
        .map(|thread| {
            let controller = Arc::clone(&controller);
            let stop = Arc::clone(&stop);
            let allowed_ok = Arc::clone(&allowed_ok);
            std::thread::spawn(move || {
                let mut calls = 0;
                while !stop.load(Ordering::Relaxed) || calls < 200 {
                    for name in ["b", "x", "a"] {
                        let outcome = controller.handle(ToolCall::new("c", name, json!({})));
                        if name == "a" && !summary(&outcome).2 {
                            allowed_ok.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    calls += 1;
                    if thread == 1 && calls % 50 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for round in 0..300 {
        let mut next = registries();
        let which = round % orders.len();
        let registry = std::mem::replace(&mut next[which], ToolRegistry::new([]).unwrap());
        match round % 4 {
            0 => controller.replace_registry(registry).unwrap(),
            1 => controller
                .replace(registry, ToolPolicy::new(["a"], [""; 0]).unwrap())
                .unwrap(),
            2 => {
                controller.replace_registry(registry).unwrap();
                controller
                    .replace_policy(Arc::new(ToolPolicy::new(["a"], [""; 0]).unwrap()))
                    .unwrap();
            }
            _ => {
                controller.replace_registry(registry).unwrap();
                controller
                    .try_replace_policy(|_| {
                        Ok::<_, PolicyMismatch>(ToolPolicy::new(["a"], [""; 0]).unwrap())
                    })
                    .unwrap();
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.join().unwrap();
    }
    assert_eq!(runs_of(&runs, "b"), 0);
    assert_eq!(runs_of(&runs, "x"), 0);
    assert_eq!(runs_of(&runs, "a"), allowed_ok.load(Ordering::Relaxed));
    assert!(runs_of(&runs, "a") > 0);
}

/// Two controllers on one thread with the same tools in other positions: each decides from its
/// own table, also when controllers come and go (their thread caches are keyed by controller).
#[test]
fn policy_table_two_controllers_on_one_thread_keep_their_own_tables() {
    let runs = counter();
    for _ in 0..20 {
        let first = ToolController::new(
            tools(&["a", "b"], &runs),
            ToolPolicy::new(["a"], [""; 0]).unwrap(),
        );
        let second = ToolController::new(
            tools(&["b", "a"], &runs),
            ToolPolicy::new(["b"], [""; 0]).unwrap(),
        );
        for _ in 0..3 {
            assert!(summary(&first.handle(ToolCall::new("c", "b", json!({})))).2);
            assert!(summary(&second.handle(ToolCall::new("c", "a", json!({})))).2);
            assert!(!summary(&first.handle(ToolCall::new("c", "a", json!({})))).2);
            assert!(!summary(&second.handle(ToolCall::new("c", "b", json!({})))).2);
        }
    }
    assert_eq!(runs_of(&runs, "a"), 60);
    assert_eq!(runs_of(&runs, "b"), 60);
}

/// A call held under the table is answered under the policy in force then (the general path).
#[test]
fn policy_table_answers_are_decided_again_by_the_policy_in_force() {
    let runs = counter();
    let controller = ToolController::new(
        tools(&["a", "b"], &runs),
        ToolPolicy::new(["a"], ["b"]).unwrap(),
    );
    let Outcome::PendingApproval(first) = controller.handle(ToolCall::new("c1", "b", json!({})))
    else {
        panic!("b is asked");
    };
    let Outcome::PendingApproval(second) = controller.handle(ToolCall::new("c2", "b", json!({})))
    else {
        panic!("b is asked");
    };
    assert!(
        !controller
            .resolve(ApprovalResponse::approve(first.approval_id))
            .unwrap()
            .is_error
    );
    controller
        .replace_policy(ToolPolicy::new(["a"], [""; 0]).unwrap())
        .unwrap();
    assert!(
        controller
            .resolve(ApprovalResponse::approve(second.approval_id))
            .unwrap()
            .is_error
    );
    assert_eq!(runs_of(&runs, "b"), 1);
}

// ---------------------------------------------------------------------------------------------
// Class 3: names hashed a word at a time.

/// The crate's name hash, rebuilt here (a multiply-rotate over little-endian words, then the
/// `0xff` that `str`'s `Hash` writes), to craft names whose hashes collide outright.
fn word_hash_state(bytes: &[u8]) -> u64 {
    const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut state = 0_u64;
    for word in bytes.chunks_exact(8) {
        let word = u64::from_le_bytes(word.try_into().unwrap());
        state = (state.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
    state
}

/// `count` distinct 16-byte names of printable ASCII (what a registry accepts) on which the word
/// hash has one state after both words: every later byte hashes alike, so they all collide.
fn colliding_names(count: usize) -> Vec<String> {
    const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
    let target = 0x2020_2020_2020_2020_u64;
    let printable = |word: u64| word.to_le_bytes().iter().all(|b| (0x21..=0x7e).contains(b));
    let mut names = Vec::with_capacity(count);
    let mut candidate = 0_u64;
    while names.len() < count {
        candidate += 1;
        // A printable first word from the counter (base 94 from `!`).
        let mut first = 0_u64;
        let mut digits = candidate;
        for byte in 0..8 {
            first |= (0x21 + digits % 94) << (8 * byte);
            digits /= 94;
        }
        let second = (first.wrapping_mul(SEED)).rotate_left(5) ^ target;
        if !printable(second) {
            continue;
        }
        let mut bytes = first.to_le_bytes().to_vec();
        bytes.extend_from_slice(&second.to_le_bytes());
        let name = String::from_utf8(bytes).expect("ASCII");
        names.push(name);
    }
    names
}

#[test]
fn names_crafted_full_hash_collisions_resolve_exactly() {
    let names = colliding_names(400);
    let state = word_hash_state(names[0].as_bytes());
    assert!(names.iter().all(|n| word_hash_state(n.as_bytes()) == state));
    let runs = counter();
    let allowed: Vec<&String> = names.iter().step_by(2).collect();
    let asked: Vec<&String> = names.iter().skip(1).step_by(4).collect();
    let policy = ToolPolicy::new(
        allowed.iter().map(|n| n.as_str()),
        asked.iter().map(|n| n.as_str()),
    )
    .unwrap();
    let registry = registry(names.iter().map(|n| any_tool(n, &runs)));
    for (index, name) in names.iter().enumerate() {
        assert_eq!(registry.resolve(name).unwrap().spec().name, *name);
        let expected = match index % 4 {
            0 | 2 => PolicyAction::Allow,
            1 => PolicyAction::Ask,
            _ => PolicyAction::Deny,
        };
        assert_eq!(policy.decide_for(name).action, expected, "{index}");
    }
    // Colliding names the configuration does not hold: unknown, denied.
    for name in colliding_names(420).iter().skip(400) {
        assert!(registry.resolve(name).is_none());
        assert_eq!(policy.decide_for(name).action, PolicyAction::Deny);
    }
    let controller = ToolController::new(registry, policy);
    for (index, name) in names.iter().enumerate().take(40) {
        let outcome = controller.handle(ToolCall::new("c", name.as_str(), json!({})));
        match index % 4 {
            0 | 2 => assert!(!summary(&outcome).2),
            1 => assert!(matches!(outcome, Outcome::PendingApproval(_))),
            _ => assert!(summary(&outcome).2),
        }
        assert_eq!(runs_of(&runs, name), usize::from(index % 2 == 0), "{index}");
    }
}

#[test]
fn names_near_collisions_by_length_prefix_nul_and_unicode_resolve_exactly() {
    let mut names: Vec<String> = Vec::new();
    for length in [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 25] {
        let base: String = "abcdefghijklmnopqrstuvwxyz"
            .chars()
            .cycle()
            .take(length)
            .collect();
        names.push(base.clone());
        names.push(format!("{base}\u{0}"));
        names.push(format!("\u{0}{base}"));
        names.push(base.to_uppercase());
        let mut last = base.clone().into_bytes();
        let end = last.len() - 1;
        last[end] ^= 1;
        names.push(String::from_utf8(last).unwrap());
        names.push(format!("{base}é"));
        names.push(format!("{}\u{ff}", &base[..length - 1]));
    }
    names.extend(
        [
            "\u{0}",
            "\u{0}\u{0}",
            "\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}",
            "😀",
            "é",
            "e\u{301}",
        ]
        .map(str::to_owned),
    );
    names.sort();
    names.dedup();
    let runs = counter();
    let allowed: Vec<&str> = names.iter().map(String::as_str).step_by(2).collect();
    let policy = ToolPolicy::new(allowed.clone(), [""; 0]).unwrap();
    // The policy's name table takes every name; a registry refuses the look-alikes (invisible
    // characters, case twins, non-ASCII without the `unicode` feature): it holds the rest, and a
    // refused name looked up there finds nothing, near as it is.
    assert!(ToolRegistry::new(names.iter().map(|n| any_tool(n, &runs))).is_err());
    let (registered, refused): (Vec<&String>, Vec<&String>) = names
        .iter()
        .partition(|n| n.bytes().all(|b| b.is_ascii_graphic()) && n.to_lowercase() == **n);
    assert!(
        registered.len() >= 28 && refused.len() >= 40,
        "{} {}",
        registered.len(),
        refused.len()
    );
    let registry = registry(registered.iter().map(|n| any_tool(n, &runs)));
    for name in &registered {
        assert_eq!(
            registry.resolve(name).unwrap().spec().name,
            **name,
            "{name:?}"
        );
    }
    for name in &refused {
        assert!(registry.resolve(name).is_none(), "{name:?}");
    }
    for (index, name) in names.iter().enumerate() {
        assert_eq!(
            policy.decide_for(name).action == PolicyAction::Allow,
            index % 2 == 0,
            "{name:?}"
        );
    }
    for absent in [
        "",
        "abcdefgh\u{0}\u{0}",
        "ABCDEFGHi",
        "abcdefghijklmnopq\u{0}\u{0}",
    ] {
        assert!(registry.resolve(absent).is_none(), "{absent:?}");
    }
}

#[test]
fn names_ten_thousand_similar_tools_each_resolve_and_decide_exactly() {
    let names: Vec<String> = (0..10_000).map(|i| format!("srv__tool_{i:05}")).collect();
    let runs = counter();
    let allowed: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.ends_with('7'))
        .collect();
    let controller = ToolController::new(
        registry(names.iter().map(|n| any_tool(n, &runs))),
        ToolPolicy::new(allowed, [""; 0]).unwrap(),
    );
    let started = std::time::Instant::now();
    for name in &names {
        let outcome = controller.handle(ToolCall::new("c", name.as_str(), json!({})));
        assert_eq!(!summary(&outcome).2, name.ends_with('7'), "{name}");
    }
    eprintln!("10,000 similar names handled in {:?}", started.elapsed());
    assert_eq!(runs.lock().unwrap().len(), 1000);
    assert!(runs.lock().unwrap().values().all(|&count| count == 1));
    for absent in ["srv__tool_10000", "srv__tool_0000", "srv__tool_00000\u{0}"] {
        let outcome = controller.handle(ToolCall::new("c", absent, json!({})));
        assert!(
            summary(&outcome).1.starts_with("unknown tool"),
            "{absent:?}"
        );
    }
}

/// Crafted collisions in a configured name set cost time, never a wrong answer; the figures are
/// printed for the review (`--nocapture`).
#[test]
fn names_crafted_collisions_in_a_name_set_cost_time_only() {
    let count = 5_000;
    let colliding = colliding_names(count);
    let plain: Vec<String> = (0..count).map(|i| format!("plain_name_{i:06}")).collect();
    for (label, names) in [("colliding", &colliding), ("plain", &plain)] {
        let started = std::time::Instant::now();
        let policy = ToolPolicy::new(names.iter().map(String::as_str), [""; 0]).unwrap();
        let built = started.elapsed();
        let started = std::time::Instant::now();
        for name in names {
            assert_eq!(policy.decide_for(name).action, PolicyAction::Allow);
        }
        eprintln!(
            "{label}: {count} names built in {built:?}, each looked up in {:?}",
            started.elapsed() / count as u32
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Class 4: the rule index from two rules per action.

fn rule_tools() -> ToolRegistry {
    registry([ToolDefinition::new(
        ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "argv": {"type": "array", "items": {"type": "string"}},
                "path": {"type": "string"},
                "url": {"type": "string"},
                "n": {"type": "number"}
            }}),
        ),
        |_: &Value| -> Result<String, ToolError> { Ok(String::new()) },
    )
    .unwrap()])
}

/// The decision a linear scan makes, from the explanation's per-rule traces (each rule judged on
/// its own): the first action in precedence with a rule that applied; of its rules, the first
/// that held, else the first that applied undetermined.
fn linear_expectation(policy: &RulePolicy, arguments: &Value) -> (PolicyAction, Option<String>) {
    let explanation = policy.explain_arguments("t", arguments);
    for action in [PolicyAction::Deny, PolicyAction::Ask, PolicyAction::Allow] {
        let applied: Vec<_> = explanation
            .rules
            .iter()
            .filter(|rule| rule.action == action && rule.applied)
            .collect();
        let chosen = applied
            .iter()
            .find(|rule| rule.determined)
            .or_else(|| applied.first());
        if let Some(rule) = chosen {
            return (action, Some(rule.rule_id.to_string()));
        }
    }
    (PolicyAction::Deny, None)
}

const CONDITIONS: &[&str] = &[
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["GIT", "push"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["/usr/bin/git", "push"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["sudo"]}}"#,
    r#"{"command_prefix": {"pointer": "/command", "prefix": ["git-lfs"]}}"#,
    r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}"#,
    r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["env"]}}"#,
    r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["Rm", "-rf"]}}"#,
    r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#,
    r#"{"path_within": {"pointer": "/path", "roots": ["/etc", "/Root/Secret"]}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/etc/*"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/Work/**/*.pem"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "*.pem"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/tmp/a?b"}}"#,
    r#"{"path_glob": {"pointer": "/path", "pattern": "/W?rk/x"}}"#,
    r#"{"one_of": {"pointer": "/url", "values": ["a.example", "b.example"]}}"#,
    r#"{"equals": {"pointer": "/url", "value": "a.example"}}"#,
    r#"{"one_of": {"pointer": "/url", "values": ["1", 1]}}"#,
    r#"{"range": {"pointer": "/n", "min": 0, "max": 10}}"#,
    r#"{"all": [{"path_within": {"pointer": "/path", "roots": ["/work"]}}, {"not": {"path_glob": {"pointer": "/path", "pattern": "*.pem"}}}]}"#,
    r#"{"all": [{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}, {"command_option": {"pointer": "/command", "options": ["-r", "--recursive"]}}]}"#,
    r#"{"all": [{"range": {"pointer": "/n", "min": 1}}, {"one_of": {"pointer": "/url", "values": ["a.example"]}}, {"path_within": {"pointer": "/path", "roots": ["/etc"]}}]}"#,
    r#"{"any": [{"path_within": {"pointer": "/path", "roots": ["/etc"]}}, {"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}]}"#,
    r#"{"not": {"path_within": {"pointer": "/path", "roots": ["/work"]}}}"#,
    r#"{"not": {"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}}"#,
    r#"{"all": [{"not": {"one_of": {"pointer": "/url", "values": ["a.example"]}}}, {"command_prefix": {"pointer": "/command", "prefix": ["git"]}}]}"#,
];

fn argument_pool() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "command",
            vec![
                json!("git push"),
                json!("git status --short"),
                json!("git status; git push"),
                json!("env git push"),
                json!("sudo GIT push"),
                json!("/usr/bin/git push"),
                json!("git-push origin"),
                json!("git -C . push"),
                json!("GIT_DIR=x git push"),
                json!("git\u{0}push"),
                json!("git\tpush"),
                json!("git\npush"),
                json!("rm -rf /"),
                json!("RM -r x"),
                json!("echo git push"),
                json!("git-lfs push"),
                json!("=git push"),
                json!("gít push"),
                json!(""),
                json!(42),
                json!(["git", "push"]),
            ],
        ),
        (
            "argv",
            vec![
                json!(["git", "push"]),
                json!(["env", "git", "push"]),
                json!(["git push"]),
                json!(["Git", "Push"]),
                json!(["rm", "-rf", "/"]),
                json!(["RM", "-rf"]),
                json!(["/bin/rm", "-rf"]),
                json!([1, "git"]),
                json!(["git", 1]),
                json!("git push"),
                json!([]),
                json!(["git\u{a0}push"]),
                json!(["git-push"]),
            ],
        ),
        (
            "path",
            vec![
                json!("/work/a"),
                json!("/WORK/a"),
                json!("/Work/k.pem"),
                json!("/work/deep/k.pem"),
                json!("/etc/passwd"),
                json!("/ETC/passwd"),
                json!("etc/passwd"),
                json!("../etc/passwd"),
                json!("/work/../etc/passwd"),
                json!("//etc/passwd"),
                json!("/root/secret/x"),
                json!("/sécret"),
                json!("/work/a\u{0}"),
                json!("C:\\x"),
                json!("~/x"),
                json!("/tmp/a*b"),
                json!("/tmp/aXb"),
                json!("/Wark/x"),
                json!("/wOrk/x"),
                json!("/"),
                json!("/etc./passwd"),
                json!(7),
                json!(null),
            ],
        ),
        (
            "url",
            vec![
                json!("a.example"),
                json!("A.EXAMPLE"),
                json!("1"),
                json!(1),
                json!(1.0),
                json!(["a.example"]),
            ],
        ),
        (
            "n",
            vec![
                json!(5),
                json!(-1),
                json!("5"),
                json!(1e300),
                json!(18446744073709551615_u64),
            ],
        ),
    ]
}

/// A small deterministic generator, so every failure names a reproducible case.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % bound
    }
}

/// Random small policies (2 to 7 rules per action, where the index is now built) with the path
/// settings varied, over hostile argument values: the indexed decision (action and rule named)
/// is the linear scan's.
#[test]
fn rule_index_small_policies_decide_as_a_linear_scan() {
    let registry = rule_tools();
    let pool = argument_pool();
    let mut random = Lcg(0x5eed);
    let mut loaded = 0;
    let mut decided = 0;
    for case in 0..400 {
        let mut rules = Vec::new();
        let mut used: Vec<&str> = Vec::new();
        for action in ["deny", "ask", "allow"] {
            let count = 2 + random.next(6);
            for _ in 0..count {
                // Distinct conditions: a repeated one is refused at load.
                let condition = loop {
                    let candidate = CONDITIONS[random.next(CONDITIONS.len())];
                    if !used.contains(&candidate) {
                        used.push(candidate);
                        break candidate;
                    }
                };
                rules.push(format!(
                    r#"{{"id": "r{:02}", "tool": "t", "action": "{action}", "reason": "probe", "when": {condition}}}"#,
                    rules.len()
                ));
            }
        }
        let paths = match case % 4 {
            0 => r#"{}"#,
            1 => r#"{"working_directory": "/work"}"#,
            2 => r#"{"case_insensitive": true}"#,
            _ => r#"{"working_directory": "/Work", "case_insensitive": true}"#,
        };
        let text = format!(r#"{{"paths": {paths}, "rules": [{}]}}"#, rules.join(","));
        let policy = RulePolicy::from_json(&text, &registry)
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        loaded += 1;
        for _ in 0..60 {
            let mut arguments = serde_json::Map::new();
            for (field, values) in &pool {
                let pick = random.next(values.len() + 1);
                if let Some(value) = values.get(pick) {
                    arguments.insert((*field).to_owned(), value.clone());
                }
            }
            let arguments = Value::Object(arguments);
            let decision = policy.decide_arguments("t", &arguments);
            let got = (decision.action, decision.rule_id.map(|id| id.to_string()));
            assert_eq!(
                got,
                linear_expectation(&policy, &arguments),
                "case {case}: {arguments}\n{text}"
            );
            decided += 1;
        }
    }
    assert_eq!(loaded, 400);
    assert_eq!(decided, 400 * 60);
}

fn small_policy(paths: &str, rules: &[(&str, &str)]) -> RulePolicy {
    let rules: Vec<String> = rules
        .iter()
        .enumerate()
        .map(|(index, (action, condition))| {
            format!(
                r#"{{"id": "r{index}", "tool": "t", "action": "{action}", "reason": "probe", "when": {condition}}}"#
            )
        })
        .collect();
    let text = format!(r#"{{"paths": {paths}, "rules": [{}]}}"#, rules.join(","));
    RulePolicy::from_json(&text, &rule_tools()).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

fn action_of(policy: &RulePolicy, arguments: Value) -> PolicyAction {
    policy.decide_arguments("t", &arguments).action
}

/// Two deny rules on commands, one allow: every spelling that may reach `git push` is denied
/// (undetermined values included), only a plain `git status` is allowed.
#[test]
fn rule_index_two_command_denies_hold_for_every_spelling() {
    let policy = small_policy(
        "{}",
        &[
            (
                "deny",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}"#,
            ),
            (
                "deny",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}"#,
            ),
            (
                "allow",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["git", "status"]}}"#,
            ),
            (
                "allow",
                r#"{"command_prefix": {"pointer": "/command", "prefix": ["ls"]}}"#,
            ),
        ],
    );
    for denied in [
        "git push",
        "env git push",
        "sudo GIT push",
        "/usr/bin/git push --force",
        "git-push origin",
        "git -C . push",
        "GIT_DIR=x git push",
        "git status; git push",
        "git status && rm -rf /",
        "git\u{0}push",
        "nice -n 5 git push",
        "RM -rf /",
        "/bin/rm x",
        "ls $(rm -rf /)",
        "ls `git push`",
    ] {
        assert_eq!(
            action_of(&policy, json!({"command": denied})),
            PolicyAction::Deny,
            "{denied:?}"
        );
    }
    for wrong_type in [
        json!(1),
        json!(["git", "push"]),
        json!(null),
        json!({"a": "git push"}),
    ] {
        let action = action_of(&policy, json!({"command": wrong_type.clone()}));
        assert_eq!(action, PolicyAction::Deny, "{wrong_type}");
    }
    assert_eq!(
        action_of(&policy, json!({"command": "git status -s"})),
        PolicyAction::Allow
    );
    assert_eq!(
        action_of(&policy, json!({"command": "ls -la"})),
        PolicyAction::Allow
    );
}

/// Argv forms: tokens holding whitespace, wrong types and wrappers keep the denies.
#[test]
fn rule_index_two_argv_denies_hold_for_split_tokens_wrappers_and_wrong_types() {
    let policy = small_policy(
        "{}",
        &[
            (
                "deny",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}"#,
            ),
            (
                "deny",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["rm"]}}"#,
            ),
            (
                "allow",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["git", "status"]}}"#,
            ),
            (
                "allow",
                r#"{"argv_prefix": {"pointer": "/argv", "prefix": ["ls"]}}"#,
            ),
        ],
    );
    for denied in [
        json!(["git push"]),
        json!(["env", "git", "push"]),
        json!(["sudo", "-u", "x", "GIT", "push"]),
        json!(["git", "-c", "alias.x=push", "x"]),
        json!(["git\tpush"]),
        json!(["/bin/rm", "-rf", "/"]),
        json!(["git", 1, "push"]),
        json!([null]),
        json!("git push"),
        json!(7),
    ] {
        assert_eq!(
            action_of(&policy, json!({"argv": denied.clone()})),
            PolicyAction::Deny,
            "{denied}"
        );
    }
    assert_eq!(
        action_of(&policy, json!({"argv": ["git", "status"]})),
        PolicyAction::Allow
    );
    assert_eq!(
        action_of(&policy, json!({"argv": ["ls", "-l"]})),
        PolicyAction::Allow
    );
}

/// Case-insensitive paths with two deny rules: every ASCII case of a denied root is denied, every
/// spelling that cannot be judged is denied, the workspace is allowed.
#[test]
fn rule_index_two_path_denies_hold_case_insensitively() {
    let policy = small_policy(
        r#"{"working_directory": "/Work", "case_insensitive": true}"#,
        &[
            (
                "deny",
                r#"{"path_within": {"pointer": "/path", "roots": ["/Etc", "/root"]}}"#,
            ),
            (
                "deny",
                r#"{"path_glob": {"pointer": "/path", "pattern": "/Work/Secrets/*"}}"#,
            ),
            (
                "allow",
                r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#,
            ),
            (
                "allow",
                r#"{"path_within": {"pointer": "/path", "roots": ["/tmp"]}}"#,
            ),
        ],
    );
    for denied in [
        "/etc/passwd",
        "/ETC/passwd",
        "/eTc/x",
        "/ROOT/.ssh/id",
        "/work/secrets/k",
        "/WORK/SECRETS/k",
        "secrets/k",
        "SECRETS/k",
        "../etc/passwd",
        "/work/../ETC/passwd",
        "//etc/passwd",
        "/étc/x",
        "/work/secrets./k",
        "/etc\u{0}",
        "/work/SECRE~1/k",
        "C:\\etc",
        "~/x",
        "$HOME/x",
    ] {
        assert_eq!(
            action_of(&policy, json!({"path": denied})),
            PolicyAction::Deny,
            "{denied:?}"
        );
    }
    for allowed in ["/work/a", "/WORK/a", "a", "/TMP/x"] {
        assert_eq!(
            action_of(&policy, json!({"path": allowed})),
            PolicyAction::Allow,
            "{allowed:?}"
        );
    }
    assert_eq!(action_of(&policy, json!({"path": 1})), PolicyAction::Deny);
}

/// `all` / `any` / `not` mixes over two deny rules: an indexed leaf that is false leaves its `all`
/// false; an unindexed rule is always evaluated; undetermined values still deny.
#[test]
fn rule_index_two_denies_with_all_any_not_mixes() {
    let policy = small_policy(
        r#"{"working_directory": "/work"}"#,
        &[
            (
                "deny",
                r#"{"all": [{"command_prefix": {"pointer": "/command", "prefix": ["rm"]}}, {"path_within": {"pointer": "/path", "roots": ["/work"]}}]}"#,
            ),
            (
                "deny",
                r#"{"any": [{"one_of": {"pointer": "/url", "values": ["evil.example"]}}, {"not": {"path_within": {"pointer": "/path", "roots": ["/work", "/tmp"]}}}]}"#,
            ),
            (
                "ask",
                r#"{"all": [{"path_glob": {"pointer": "/path", "pattern": "*.pem"}}, {"range": {"pointer": "/n", "max": 10}}]}"#,
            ),
            (
                "ask",
                r#"{"not": {"one_of": {"pointer": "/url", "values": ["a.example", "b.example"]}}}"#,
            ),
            (
                "allow",
                r#"{"path_within": {"pointer": "/path", "roots": ["/work"]}}"#,
            ),
            (
                "allow",
                r#"{"one_of": {"pointer": "/url", "values": ["a.example"]}}"#,
            ),
        ],
    );
    let cases = [
        (
            json!({"command": "rm x", "path": "/work/a"}),
            PolicyAction::Deny,
        ),
        (
            json!({"command": "rm x; ls", "path": "/work/a"}),
            PolicyAction::Deny,
        ),
        (
            json!({"command": "ls", "path": "/work/a", "url": "a.example"}),
            PolicyAction::Allow,
        ),
        (
            json!({"command": "ls", "path": "/etc/a", "url": "a.example"}),
            PolicyAction::Deny,
        ),
        (
            json!({"path": "/work/a", "url": "evil.example"}),
            PolicyAction::Deny,
        ),
        (json!({"path": "/work/a", "url": 5}), PolicyAction::Ask),
        (
            json!({"path": "/work/k.pem", "n": 3, "url": "a.example"}),
            PolicyAction::Ask,
        ),
        (
            json!({"path": "/work/k.pem", "n": 30, "url": "a.example"}),
            PolicyAction::Allow,
        ),
        (
            json!({"path": "/work/k.pem", "n": "3", "url": "a.example"}),
            PolicyAction::Ask,
        ),
        (
            json!({"path": "/tmp/a", "url": "a.example"}),
            PolicyAction::Allow,
        ),
        (
            json!({"path": "/tmp/a", "url": "A.EXAMPLE"}),
            PolicyAction::Ask,
        ),
        (
            json!({"path": "a\u{0}", "url": "a.example"}),
            PolicyAction::Deny,
        ),
        (
            json!({"path": "/work/a", "command": ["rm", "x"], "url": "a.example"}),
            PolicyAction::Deny,
        ),
        (json!({"url": "b.example"}), PolicyAction::Deny),
    ];
    for (arguments, expected) in cases {
        assert_eq!(
            action_of(&policy, arguments.clone()),
            expected,
            "{arguments}"
        );
        assert_eq!(
            linear_expectation(&policy, &arguments).0,
            expected,
            "{arguments}"
        );
    }
}
