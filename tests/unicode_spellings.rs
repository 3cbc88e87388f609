//! One text, many spellings. Fullwidth, decomposed, zero-width, bidi and case spellings of one
//! address share a rate-limit counter and meet one text rule when the policy asks for
//! normalization (feature `unicode`), and tool names that differ only by such spellings are
//! refused when the registry is built (always; look-alike scripts with the feature). Without the
//! feature, asking for normalization is a load error.
//!
//! A test binary of its own: `.ci/run` also runs it without any feature
//! (`cargo test --lib --test unicode_spellings`), which builds nothing else.

#[path = "support/common.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use toolgate::registry::RegistryError;

use common::counted;
use serde_json::{Value, json};
use toolgate::*;

/// Every spelling of `alice@example.com` a person could not tell from it.
#[cfg(feature = "unicode")]
const SPELLINGS: [&str; 9] = [
    "alice@example.com",
    "Alice@Example.COM",
    "ａｌｉｃｅ@ｅｘａｍｐｌｅ.ｃｏｍ",
    "ali\u{200b}ce@example.com",
    "alice\u{200d}@example.com",
    "\u{feff}alice@example.com",
    "alice@example.com\u{2060}",
    "\u{2066}alice@example.com\u{2069}",
    "ａlice＠example.com",
];

fn mail_tools(runs: &Arc<AtomicUsize>) -> ToolRegistry {
    let schema =
        json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]});
    ToolRegistry::new([counted("send_email", schema, runs)]).unwrap()
}

#[cfg(feature = "unicode")]
fn send(controller: &ToolController, to: &str) -> ToolResult {
    match controller.handle(ToolCall::new("c", "send_email", json!({ "to": to }))) {
        Outcome::Completed(result) => result,
        Outcome::PendingApproval(_) => panic!("no rule asks"),
    }
}

#[cfg(feature = "unicode")]
mod normalized {
    use super::*;
    use common::run_count;

    fn controller(policy: Value, runs: &Arc<AtomicUsize>) -> ToolController {
        let tools = mail_tools(runs);
        let policy = RulePolicy::from_json(&policy.to_string(), &tools)
            .unwrap_or_else(|error| panic!("{error}"));
        ToolController::try_new(tools, policy).unwrap()
    }

    #[test]
    fn unicode_spellings_share_one_rate_limit_counter() {
        let runs = Arc::default();
        let controller = controller(
            json!({"rules": [{"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail"}],
                   "limits": [{"id": "one-per-recipient", "tool": "send_email", "max": 1,
                               "per": "hour", "over": "deny", "reason": "one mail per recipient",
                               "key": {"pointer": "/to", "normalize": true}}]}),
            &runs,
        );
        assert!(!send(&controller, SPELLINGS[0]).is_error);
        for spelling in &SPELLINGS[1..] {
            let result = send(&controller, spelling);
            assert!(result.is_error, "{spelling:?} got a fresh counter");
            assert!(
                result.content.contains("one mail per recipient"),
                "{result:?}"
            );
        }
        // Another address still has its own counter.
        assert!(!send(&controller, "bob@example.com").is_error);
        assert_eq!(run_count(&runs), 2);
    }

    #[test]
    fn unicode_spellings_meet_one_deny_rule() {
        for condition in [
            json!({"equals": {"pointer": "/to", "value": "alice@example.com"}}),
            json!({"one_of": {"pointer": "/to", "values": ["ALICE@example.com", "carol@example.com"]}}),
            json!({"glob": {"pointer": "/to", "pattern": "*@EXAMPLE.com"}}),
            // The rule's own text may be spelled any way too.
            json!({"equals": {"pointer": "/to", "value": "ａｌｉｃｅ@example.com"}}),
        ] {
            let runs = Arc::default();
            let controller = controller(
                json!({"text": {"normalize": true}, "rules": [
                    {"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail"},
                    {"id": "not-alice", "tool": "send_email", "action": "deny",
                     "reason": "alice opted out", "when": condition}]}),
                &runs,
            );
            for spelling in SPELLINGS {
                let result = send(&controller, spelling);
                assert!(result.is_error, "{condition} let {spelling:?} through");
                assert!(result.content.contains("alice opted out"), "{result:?}");
            }
            assert!(
                !send(&controller, "bob@elsewhere.org").is_error,
                "{condition}"
            );
            assert_eq!(run_count(&runs), 1);
        }
    }

    #[test]
    fn unicode_spellings_meet_one_rule_also_through_the_index() {
        // Many one_of rules on one field are indexed by value: the index looks the normalized
        // argument up, so a spelling cannot skip past it.
        let mut rules =
            vec![json!({"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail"})];
        for n in 0..50 {
            rules.push(json!({"id": format!("blocked-{n}"), "tool": "send_email", "action": "deny",
                "reason": "blocked recipient",
                "when": {"one_of": {"pointer": "/to", "values": [format!("user{n}@example.com")]}}}));
        }
        rules.push(
            json!({"id": "blocked-alice", "tool": "send_email", "action": "deny",
            "reason": "blocked recipient",
            "when": {"one_of": {"pointer": "/to", "values": ["Alice@Example.com"]}}}),
        );
        let runs = Arc::default();
        let controller = controller(json!({"text": {"normalize": true}, "rules": rules}), &runs);
        for spelling in SPELLINGS {
            assert!(send(&controller, spelling).is_error, "{spelling:?}");
        }
        assert!(send(&controller, "ＵＳＥＲ7@example.com").is_error);
        assert!(!send(&controller, "user77@example.com").is_error);
    }

    #[test]
    fn normalization_built_in_code_reaches_lists_and_is_part_of_the_digest() {
        use toolgate::rules::{Condition, PolicyConfig, RuleConfig, TextOptions};
        let runs = Arc::default();
        let schema = json!({"type": "object", "properties": {"to": {"type": "array", "items": {"type": "string"}}}});
        let tools = ToolRegistry::new([counted("send_email", schema, &runs)]).unwrap();
        let rules = || {
            vec![
                RuleConfig::new("mail", "send_email", PolicyAction::Allow, "mail"),
                RuleConfig::new("not-alice", "send_email", PolicyAction::Deny, "opted out")
                    .when(Condition::equals("/to", json!(["alice@example.com"]))),
            ]
        };
        let normalized =
            PolicyConfig::new(rules()).with_text(TextOptions::default().normalize(true));
        let policy = RulePolicy::new(normalized, &tools).unwrap();
        for spelling in SPELLINGS {
            let decision = policy.decide_arguments("send_email", &json!({ "to": [spelling] }));
            assert_eq!(
                decision.action,
                PolicyAction::Deny,
                "{spelling:?} in a list"
            );
        }
        // The option is part of what the policy is: its digest says whether text is normalized,
        // and an explicit default is the default.
        let plain = RulePolicy::new(PolicyConfig::new(rules()), &tools).unwrap();
        let explicit_default = RulePolicy::new(
            PolicyConfig::new(rules()).with_text(TextOptions::default()),
            &tools,
        )
        .unwrap();
        assert_ne!(policy.digest(), plain.digest());
        assert_eq!(plain.digest(), explicit_default.digest());
        let text = serde_json::to_value(plain.config()).unwrap();
        assert!(text.get("text").is_none(), "{text}");
        assert_eq!(
            serde_json::to_value(policy.config()).unwrap()["text"],
            json!({"normalize": true})
        );
    }

    #[test]
    fn without_normalization_spellings_stay_apart() {
        // The control: the same deny rule, text compared as sent, misses the other spellings —
        // which is what the option exists for.
        let runs = Arc::default();
        let controller = controller(
            json!({"rules": [
                {"id": "mail", "tool": "send_email", "action": "allow", "reason": "mail"},
                {"id": "not-alice", "tool": "send_email", "action": "deny", "reason": "opted out",
                 "when": {"equals": {"pointer": "/to", "value": "alice@example.com"}}}]}),
            &runs,
        );
        assert!(send(&controller, SPELLINGS[0]).is_error);
        let through = SPELLINGS[1..]
            .iter()
            .filter(|spelling| !send(&controller, spelling).is_error)
            .count();
        assert_eq!(through, SPELLINGS.len() - 1);
    }

    #[test]
    fn normalized_patterns_holding_a_slash_are_still_refused_where_spellings_matter() {
        // A fullwidth solidus normalizes to `/`: the pattern is checked as it will be compared.
        let tools = mail_tools(&Arc::default());
        let policy = json!({"text": {"normalize": true}, "rules": [
            {"id": "d", "tool": "send_email", "action": "deny", "reason": "r",
             "when": {"glob": {"pointer": "/to", "pattern": "／etc／*"}}}]});
        let error = RulePolicy::from_json(&policy.to_string(), &tools).unwrap_err();
        assert!(error.to_string().contains("glob"), "{error}");
    }

    #[test]
    fn look_alike_tool_names_are_refused_across_scripts() {
        let runs = Arc::default();
        let tool = |name: &str| counted(name, json!({"type": "object"}), &runs);
        for (first, second) in [
            ("read_file", "rеad_file"), // Cyrillic е: mixed scripts
            ("read_file", "ｒｅａｄ_ｆｉｌｅ"),
            ("cop", "сор"), // all-Cyrillic
            ("tool_1", "tool_l"),
        ] {
            let error = ToolRegistry::new([tool(first), tool(second)]).unwrap_err();
            assert!(
                matches!(
                    error,
                    RegistryError::LookAlike { .. } | RegistryError::MixedScripts { .. }
                ),
                "{first:?} / {second:?}: {error}"
            );
        }
        assert!(ToolRegistry::new([tool("ファイルを読む"), tool("read_file")]).is_ok());
    }
}

#[cfg(not(feature = "unicode"))]
#[test]
fn without_the_unicode_feature_normalization_is_a_load_error() {
    let tools = mail_tools(&Arc::default());
    for policy in [
        r#"{"text": {"normalize": true}, "rules": []}"#,
        r#"{"rules": [], "limits": [{"id": "l", "tool": "send_email", "max": 1, "per": "hour",
            "over": "deny", "reason": "r", "key": {"pointer": "/to", "normalize": true}}]}"#,
    ] {
        let error = RulePolicy::from_json(policy, &tools)
            .unwrap_err()
            .to_string();
        assert!(error.contains("`unicode` feature"), "{error}");
    }
}

#[test]
fn tool_names_with_invisible_characters_are_refused() {
    let runs = Arc::default();
    let tool = |name: &str| counted(name, json!({"type": "object"}), &runs);
    for name in [
        "read\u{200b}_file",
        "read_file\u{200d}",
        "\u{202e}read_file",
        "read\u{2066}_file",
        "read_file\u{feff}",
        "read_fi\u{ad}le",
        "read_file\u{e0041}",
        "read\u{0}file",
        "read file",
    ] {
        let error = ToolRegistry::new([tool("read_file"), tool(name)]).unwrap_err();
        assert!(
            matches!(error, RegistryError::InvisibleCharacter { .. }),
            "{name:?}: {error}"
        );
    }
}

#[test]
fn tool_names_that_differ_only_in_case_are_refused() {
    let runs = Arc::default();
    let tool = |name: &str| counted(name, json!({"type": "object"}), &runs);
    for other in ["Read_File", "READ_FILE", "read_filE"] {
        assert_eq!(
            ToolRegistry::new([tool("read_file"), tool(other)]).unwrap_err(),
            RegistryError::LookAlike {
                name: other.into(),
                other: "read_file".into()
            }
        );
    }
    assert!(ToolRegistry::new([tool("read_file"), tool("read-file"), tool("read_files")]).is_ok());
}

/// A case-insensitive file system (APFS, NTFS) folds more than ASCII: `\u{212A}ubectl` (Kelvin
/// sign) runs `kubectl`, `ſudo` (long s) runs `sudo`. An argv whose program word folds to a
/// denied program is undetermined, so the deny applies — through the index too.
#[test]
fn unicode_case_spellings_of_a_program_meet_its_deny_rule() {
    // Once with the deny rule alone (scanned), once beside 20 others (indexed).
    for others in [0, 20] {
        let runs = Arc::default();
        let schema = json!({"type": "object", "properties": {"argv": {"type": "array", "items": {"type": "string"}}}});
        let tools = ToolRegistry::new([counted("run", schema, &runs)]).unwrap();
        // Everything runs but what a deny rule catches: a spelling the deny misses would run.
        let mut rules = vec![
            json!({"id": "allow-all", "tool": "run", "action": "allow", "reason": "the rest runs"}),
            json!({"id": "no-delete", "tool": "run", "action": "deny", "reason": "no deleting",
                   "when": {"argv_prefix": {"pointer": "/argv", "prefix": ["kubectl", "delete"]}}}),
        ];
        for n in 0..others {
            rules.push(
                json!({"id": format!("other-{n}"), "tool": "run", "action": "deny", "reason": "r",
                "when": {"argv_prefix": {"pointer": "/argv", "prefix": [format!("prog{n}"), "x"]}}}),
            );
        }
        let policy = RulePolicy::from_json(&json!({ "rules": rules }).to_string(), &tools).unwrap();
        let controller = ToolController::try_new(tools, policy).unwrap();
        let run = |argv: &Value| match controller.handle(ToolCall::new(
            "c",
            "run",
            json!({ "argv": argv }),
        )) {
            Outcome::Completed(result) => !result.is_error,
            Outcome::PendingApproval(_) => panic!("no rule asks"),
        };
        // Denied by `no-delete`: undetermined for the look-alikes (whatever their subcommand),
        // holding for the plain spelling.
        for argv in [
            json!(["\u{212A}ubectl", "delete", "pod"]),
            json!(["/usr/local/bin/\u{212A}UBECTL", "delete"]),
            json!(["ſudo", "\u{212A}ubectl", "delete"]),
            json!(["\u{212A}ubectl-delete", "pod"]),
            json!(["\u{212A}ubectl", "get", "pods"]),
            json!(["kubectl", "delete"]),
        ] {
            assert!(!run(&argv), "{others} others: {argv} ran");
        }
        // The control: what no deny covers runs, and so does another program spelled near it
        // (a longer name, a trailing dash, a lone Kelvin sign).
        for argv in [
            json!(["kubectl", "get", "pods"]),
            json!(["echo", "\u{212A}", "delete"]),
            json!(["\u{212A}ubectlxy", "delete"]),
            json!(["\u{212A}ubectl-", "delete"]),
        ] {
            assert!(run(&argv), "{others} others: {argv} was refused");
        }
        assert_eq!(common::run_count(&runs), 4);
    }
}
