//! Limits as written: checked at load, each problem at its place, and covered by the policy digest
//! but not by their order.

use super::*;

#[test]
fn limits_are_checked_at_load_with_their_places() {
    let registry =
        ToolRegistry::new([counted("send_email", mail_schema(), &Arc::default())]).unwrap();
    let load = |limits: &str| {
        RulePolicy::from_json(
            &format!(
                r#"{{"rules": [{{"id": "mail", "tool": "send_email", "action": "allow", "reason": "r"}}], "limits": [{limits}]}}"#
            ),
            &registry,
        )
    };
    let base = |field: &str| {
        format!(
            r#"{{"id": "cap", "tool": "send_email", "max": 1, "per": "minute", "over": "deny", "reason": "r"{field}}}"#
        )
    };
    assert!(load(&base("")).is_ok());
    let bad = [
        (
            base("").replace(r#""max": 1"#, r#""max": 0"#),
            "max must be 1 to",
        ),
        (
            base("").replace(r#""max": 1"#, r#""max": 100001"#),
            "max must be 1 to",
        ),
        (
            base("").replace(r#""over": "deny""#, r#""over": "allow""#),
            "over must be deny or ask",
        ),
        (
            base("").replace(r#""reason": "r""#, r#""reason": " ""#),
            "reason is empty",
        ),
        (
            base("").replace(r#""id": "cap""#, r#""id": "mail""#),
            "repeats",
        ),
        (format!("{},{}", base(""), base("")), "repeats"),
        (
            base("").replace("send_email", "send_mail"),
            "matches no tool",
        ),
        (
            base("").replace("send_email", "nothing__*"),
            "matches no tool",
        ),
        (base(r#", "key": {"pointer": "/cc"}"#), "names no field"),
        (base(r#", "key": {"pointer": "to"}"#), "must start with '/'"),
        (base(r#", "key": {"pointer": "/to~2"}"#), "'~' not followed"),
        (base(r#", "key": {"pointer": "/to/-"}"#), "holds '-'"),
    ];
    for (limit, message) in bad {
        match load(&limit) {
            Err(PolicyLoadError::Invalid { problems }) => assert!(
                problems
                    .iter()
                    .any(|p| p.place.starts_with("limits[") && p.message.contains(message)),
                "{limit}: {problems:?}"
            ),
            other => panic!("{limit}: {other:?}"),
        }
    }
    for unknown in [
        base(r#", "burst": 3"#),
        base("").replace(r#""per": "minute""#, r#""per": "week""#),
        base(r#", "key": {"pointer": "/to", "fold": true}"#),
    ] {
        assert!(
            matches!(load(&unknown), Err(PolicyLoadError::Syntax { .. })),
            "{unknown}"
        );
    }
}

#[test]
fn the_policy_digest_covers_its_limits_but_not_their_order() {
    let registry =
        ToolRegistry::new([counted("send_email", mail_schema(), &Arc::default())]).unwrap();
    let digest = |limits: &str| {
        RulePolicy::from_json(
            &format!(r#"{{"rules": [], "limits": [{limits}]}}"#),
            &registry,
        )
        .unwrap()
        .digest()
        .to_owned()
    };
    let a = r#"{"id": "a", "tool": "send_email", "max": 1, "per": "minute", "over": "deny", "reason": "r"}"#;
    let b = r#"{"id": "b", "tool": "send_email", "max": 9, "per": "hour", "over": "ask", "reason": "r"}"#;
    assert_eq!(digest(&format!("{a},{b}")), digest(&format!("{b},{a}")));
    assert_ne!(digest(a), digest(&a.replace(r#""max": 1"#, r#""max": 2"#)));
    assert_ne!(digest(a), digest(""));
}
