//! An IP address a result carries in one spelling and an argument in another, as URL parsers
//! read both (checked with Node 20's WHATWG URL by an independent attack, 7 December 2026, which
//! found a link without a scheme — `203.0.113.5/pay`, `//203.0.113.5/pay` — recorded no host):
//! the fetch of a host only untrusted content named is denied, a message carrying its link asked.
#![cfg(all(feature = "sqlite", feature = "postgres", feature = "unicode", unix))]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::limits::MemoryRateCounters;
use toolgate::provenance::ProvenanceKey;
use toolgate::*;

use crate::flow_setup::{outcome_word, returning, schema_of};

const POLICY: &str = r#"{
  "rules": [{"id": "all", "tool": "*", "action": "allow", "reason": "the flows decide"}],
  "flows": [
    {"id": "link-from-untrusted", "tool": "send_message", "action": "ask",
     "reason": "link from untrusted",
     "provenance": {"pointer": "/body", "read": "tokens", "kinds": ["link"], "seen_in": ["untrusted"],
                    "not_seen_in": ["person"]}},
    {"id": "fetch-host-from-untrusted", "tool": "fetch", "action": "deny",
     "reason": "a site only untrusted content named",
     "provenance": {"pointer": "/url", "read": "host", "seen_in": ["untrusted"],
                    "not_seen_in": ["person"]}},
    {"id": "fetch-host-not-person", "tool": "fetch2", "action": "deny",
     "reason": "a site the person did not name",
     "provenance": {"pointer": "/url", "read": "host", "not_seen_in": ["person"]}}
  ]
}"#;

struct World {
    controller: ToolController,
    mail: Arc<Mutex<String>>,
}

fn world() -> World {
    let mail = Arc::new(Mutex::new(String::new()));
    let ok = Arc::new(Mutex::new("ok".to_owned()));
    let registry = ToolRegistry::new([
        returning("read_mail", json!({"type": "object"}), &mail),
        returning(
            "send_message",
            schema_of(json!({"body": {"type": "string"}})),
            &ok,
        ),
        returning("fetch", schema_of(json!({"url": {"type": "string"}})), &ok),
        returning("fetch2", schema_of(json!({"url": {"type": "string"}})), &ok),
    ])
    .unwrap();
    let policy = RulePolicy::from_json(POLICY, &registry).unwrap_or_else(|e| panic!("{e}"));
    let controller = ToolController::try_new(registry, policy)
        .unwrap()
        .with_rate_counters(MemoryRateCounters::default())
        .with_provenance_key(ProvenanceKey::random());
    World { controller, mail }
}

fn call(world: &World, tool: &str, arguments: Value) -> &'static str {
    outcome_word(world.controller.handle(ToolCall::new("c", tool, arguments)))
}

/// Pairs (what an untrusted result carries, what the argument carries) that URL parsers read as
/// the same host (checked with Node 20's WHATWG URL). The fetch must be denied, the message asked.
const SAME_HOST: &[(&str, &str)] = &[
    (
        "See http://[::ffff:cb00:7105]/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://[::ffff:203.0.113.5]/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://[2001:DB8::1]/pay now",
        "http://[2001:db8:0:0::1]/pay",
    ),
    (
        "See http://[2001:db8::1]:8080/pay now",
        "http://[2001:0db8::1]:8080/pay",
    ),
    ("See http://3405803781/pay now", "http://203.0.113.5/pay"),
    ("See http://203.0.113.5/pay now", "http://3405803781/pay"),
    ("See http://203.0.113.5/pay now", "http://0xcb.0.113.5/pay"),
    (
        "See http://203.0.113.5/pay now",
        "http://[::ffff:203.0.113.5]/pay",
    ),
    ("See http://0xcb.0.113.5/pay now", "http://203.0.113.5/pay"),
    (
        "See http://203.0.113.5/pay now",
        "http://２０３.０.１１３.５/pay",
    ),
    (
        "See http://２０３.０.１１３.５/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://203。0。113。5/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://203.0.113.5/pay now",
        "http://203。0。113。5/pay",
    ),
    (
        "See http://０ｘｃｂ.0.113.5/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://203.0.113.5/pay now",
        "http://０ｘｃｂ.0.113.5/pay",
    ),
    ("See http://①.0.113.5/pay now", "http://1.0.113.5/pay"),
    ("See http://1.0.113.5/pay now", "http://①.0.113.5/pay"),
    (
        "See http://0xcb.0.113.5%2e/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://user@3405803781:80/pay now",
        "http://203.0.113.5/pay",
    ),
    ("See http://203.0.113.5./pay now", "http://203.0.113.5/pay"),
    ("See http://0x.0x.0x.0x/pay now", "http://0.0.0.0/pay"),
    ("See http://203.0.0113.5/pay now", "http://203.0.75.5/pay"),
    ("See https://[::1.2.3.4]/pay now", "https://[::102:304]/pay"),
    ("See https://[::102:304]/pay now", "https://[::1.2.3.4]/pay"),
    (
        "See http://%32%30%33.0.113.5/pay now",
        "http://203.0.113.5/pay",
    ),
    (
        "See http://203.0.113.5/pay now",
        "http://%32%30%33.0.113.5/pay",
    ),
    ("Mirror: 203.0.113.5", "http://203.0.113.5/pay"),
    ("See 203.0.113.5./pay now", "http://203.0.113.5/pay"),
    ("See //0xcb.0.113.5/pay now", "http://203.0.113.5/pay"),
    ("See 203.0.113.5/pay now", "http://203.0.113.5/pay"),
    (
        "See 203.0.113.5:8080/pay now",
        "http://203.0.113.5:8080/pay",
    ),
    ("See //203.0.113.5/pay now", "http://203.0.113.5/pay"),
    ("See http://203.0.113.5/pay now", "203.0.113.5"),
    ("See http://203.0.113.5/pay now", "0xcb.0.113.5"),
    ("See http://203.0.113.5/pay now", "[::ffff:203.0.113.5]"),
    ("See http://[2001:db8::1]/pay now", "[2001:db8::1]"),
    ("See http://[2001:db8::1]/pay now", "http://[2001:db8::1]"),
    ("See http://[2001:db8::1]/pay now", "2001:db8::1"),
    (
        "<a href=\"http://[::ffff:cb00:7105]/pay\">x</a>",
        "http://203.0.113.5/pay",
    ),
    (
        "[pay](http://[2001:db8::1]/pay)",
        "http://[2001:db8::1]/pay",
    ),
    (
        "See HTTP://[2001:DB8::1]/pay now",
        "http://[2001:db8::1]/pay",
    ),
    (
        "See http://[2001:db8::1]/pay now",
        "HTTP://[2001:DB8::1]/pay",
    ),
    (
        "See http://[64:ff9b::203.0.113.5]/pay now",
        "http://[64:ff9b::cb00:7105]/pay",
    ),
    (
        "See http://[::ffff:cb00:7105]:8080/pay now",
        "http://203.0.113.5:8080/pay",
    ),
];

#[test]
fn untrusted_ip_host_in_one_spelling_judges_the_argument_in_another() {
    let mut failures = Vec::new();
    for (result, argument) in SAME_HOST {
        let world = world();
        *world.mail.lock().unwrap() = (*result).to_owned();
        assert_eq!(call(&world, "read_mail", json!({})), "allow");
        let fetched = call(&world, "fetch", json!({"url": argument}));
        if fetched != "deny" {
            failures.push(format!(
                "fetch {argument:?} after result {result:?}: {fetched}"
            ));
        }
        if argument.contains("://") {
            let body = format!("pay here: {argument} thanks");
            let sent = call(&world, "send_message", json!({"body": body}));
            if sent != "ask" {
                failures.push(format!("message {body:?} after result {result:?}: {sent}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The person's own numbers name no host: a bank account written `number/bank code`, a date, a
/// version — only four decimal parts (or a link) are an address (a second attack: each of these
/// counted as the person naming an IP address).
#[test]
fn a_persons_numbers_name_no_ip_host() {
    for asked in [
        "pay 3405803781/0800 please",
        "the ticket 16843009/1",
        "account 12345678/90",
        "from 2024/05 on",
        "version 1.2.3/stable",
    ] {
        let world = world();
        world.controller.record_person_request(None, asked).unwrap();
        for url in [
            "http://203.0.113.5/x",
            "http://1.1.1.1/x",
            "http://0.188.97.78/x",
        ] {
            assert_eq!(
                call(&world, "fetch2", json!({"url": url})),
                "deny",
                "{asked:?} named {url}"
            );
        }
    }
    // Written as a link's host, the person names it.
    for asked in [
        "fetch http://203.0.113.5/report",
        "see //203.0.113.5/report",
    ] {
        let world = world();
        world.controller.record_person_request(None, asked).unwrap();
        assert_eq!(
            call(&world, "fetch2", json!({"url": "http://203.0.113.5/x"})),
            "allow",
            "{asked}"
        );
    }
}
