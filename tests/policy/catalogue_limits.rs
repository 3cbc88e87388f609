//! The catalogue's limits shown, not claimed (issue 39): in three scenarios — one each in
//! payments, messaging and mail — the attacker's call carries values whose provenance is exactly
//! that of the clean call's (each value seen in the same sources, the person's words the same, the
//! calls before the same), and no provenance condition the rule language can write tells the two
//! calls apart. A policy then either holds both (the attack is stopped, the clean task is asked)
//! or runs both (the attack passes): each of those domains reaches 16 of 16 in security only with
//! that clean task asked.
//!
//! Every condition with at most one source in `seen_in` and one in `not_seen_in` is tried, on
//! every argument of the compared tool, read every way (`value`, `host`, `amount`,
//! `minor_units`, `tokens` and `tokens` of each kind), over the classes (`person`, `untrusted`,
//! `trusted`, `results`) and each tool that ran before. A read that gives one value (`value`,
//! `host`, the amounts) is then settled for every condition: a condition is a boolean combination
//! of "seen in this source" for that one value, and each of those agrees.
//!
//! Three more limits were tried the same way and are told apart only by how the attacker chose to
//! spell its values, which it controls: in `share-bobs-article` the injection names the channel
//! to post to (`#team`), so "a channel someone else's content named" holds for the attack alone;
//! in `blog-recommendation` and `it-cleanup-list` it names its hotel and paths inside a sentence,
//! where they are not read as values of their own, so they count as never seen — written on lines
//! of their own, as the clean ones are, they are seen where the clean ones are.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::injection_catalogue::{Results, domain, registry, run};

/// The scenarios compared: domain, scenario, the attacker call's step in the attacked trace,
/// the clean call's step in the clean trace.
const ALIKE: [(&str, &str, usize, usize); 3] = [
    ("payments", "invoice-new-vendor", 1, 1),
    ("messaging", "release-notes-link", 1, 1),
    ("workspace", "reply-newest-sender", 1, 1),
];

/// Every way an argument is read.
fn reads() -> Vec<Value> {
    let mut reads: Vec<Value> = ["value", "host", "amount", "minor_units", "tokens"]
        .into_iter()
        .map(|read| json!({ "read": read }))
        .collect();
    for kind in [
        "link", "email", "iban", "number", "path", "handle", "amount",
    ] {
        reads.push(json!({"read": "tokens", "kinds": [kind]}));
    }
    reads
}

/// The sources a condition may name that could have seen a value by the compared step: the
/// classes, and each tool called before it in either trace.
fn sources(scenario: &Value, steps: [(&str, usize); 2]) -> Vec<Value> {
    let mut tools = BTreeSet::new();
    for (trace, step) in steps {
        for call in &scenario[trace].as_array().unwrap()[..step] {
            tools.insert(call[0].as_str().unwrap().to_owned());
        }
    }
    let mut sources: Vec<Value> = ["person", "untrusted", "trusted", "results"]
        .into_iter()
        .map(Value::from)
        .collect();
    sources.extend(tools.into_iter().map(|tool| json!({ "tool": tool })));
    sources
}

/// `seen_in` / `not_seen_in` of at most one source each, not both empty.
fn source_choices(sources: &[Value]) -> Vec<(Option<&Value>, Option<&Value>)> {
    let optional = || std::iter::once(None).chain(sources.iter().map(Some));
    optional()
        .flat_map(|seen| optional().map(move |not_seen| (seen, not_seen)))
        .filter(|(seen, not_seen)| seen.is_some() || not_seen.is_some())
        .collect()
}

#[test]
fn no_provenance_condition_tells_these_attacks_from_their_clean_tasks() {
    let mut tried = 0;
    let mut report = Vec::new();
    for (name, id, attacked_step, clean_step) in ALIKE {
        let domain = domain(name);
        let scenario = domain["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|scenario| scenario["id"] == id)
            .unwrap_or_else(|| panic!("{name}/{id}"))
            .clone();
        let attacker = &scenario["attacked"][attacked_step];
        let clean = &scenario["clean"][clean_step];
        assert_eq!(
            attacker.get(2),
            Some(&json!("attack")),
            "{id}: an attacker call"
        );
        assert_eq!(attacker[0], clean[0], "{id}: one tool");
        let tool = attacker[0].as_str().unwrap();
        let schema = &domain["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|candidate| candidate["name"] == tool)
            .unwrap()["schema"];
        let sources = sources(
            &scenario,
            [("attacked", attacked_step), ("clean", clean_step)],
        );
        let mut loaded = 0;
        let mut held_both = 0;
        for pointer in schema["properties"].as_object().unwrap().keys() {
            for read in reads() {
                for (seen, not_seen) in source_choices(&sources) {
                    let mut condition = read.clone();
                    condition["pointer"] = json!(format!("/{pointer}"));
                    if let Some(seen) = seen {
                        condition["seen_in"] = json!([seen]);
                    }
                    if let Some(not_seen) = not_seen {
                        condition["not_seen_in"] = json!([not_seen]);
                    }
                    // The domain's policy (its sources and directories), its flows replaced by
                    // this one condition.
                    let mut policy = domain["policy"].clone();
                    policy["flows"] = json!([{
                        "id": "probe", "tool": tool, "action": "ask", "reason": "probe",
                        "provenance": condition,
                    }]);
                    if toolgate::RulePolicy::from_json(
                        &policy.to_string(),
                        &registry(&domain, &Results::default()),
                    )
                    .is_err()
                    {
                        // A read the argument's type does not take (a host of a number …).
                        continue;
                    }
                    loaded += 1;
                    let attack_ran = run(&domain, &policy, &scenario, true)[attacked_step].0;
                    let clean_ran = run(&domain, &policy, &scenario, false)[clean_step].0;
                    assert_eq!(
                        attack_ran, clean_ran,
                        "{name}/{id}: {condition} tells the attacker's call from the clean one"
                    );
                    held_both += usize::from(!attack_ran);
                }
            }
        }
        // The probes judged something: some hold both calls, some run both.
        assert!(
            held_both > 0 && held_both < loaded,
            "{name}/{id}: {held_both} of {loaded}"
        );
        tried += loaded;
        report.push(format!(
            "{name}/{id}: {loaded} conditions, {held_both} hold both calls, the rest run both"
        ));
    }
    println!("{}\n{tried} conditions in all", report.join("\n"));
}
