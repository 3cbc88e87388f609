//! Tools found by name, whatever the names: names crafted so that the registry's word-at-a-time
//! hash collides outright, near collisions by length, prefix, NUL and unicode, and ten thousand
//! similar tools each resolve to exactly their own tool and decision; crafted collisions in a
//! configured name set cost time, never a wrong answer.

use crate::common::*;
use serde_json::json;
use toolgate::*;

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
    let runs = runs_by_name();
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
            0 | 2 => assert!(!outcome_summary(&outcome).2),
            1 => assert!(matches!(outcome, Outcome::PendingApproval(_))),
            _ => assert!(outcome_summary(&outcome).2),
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
    let runs = runs_by_name();
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
    let runs = runs_by_name();
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
        assert_eq!(!outcome_summary(&outcome).2, name.ends_with('7'), "{name}");
    }
    eprintln!("10,000 similar names handled in {:?}", started.elapsed());
    assert_eq!(runs.lock().unwrap().len(), 1000);
    assert!(runs.lock().unwrap().values().all(|&count| count == 1));
    for absent in ["srv__tool_10000", "srv__tool_0000", "srv__tool_00000\u{0}"] {
        let outcome = controller.handle(ToolCall::new("c", absent, json!({})));
        assert!(
            outcome_summary(&outcome).1.starts_with("unknown tool"),
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
