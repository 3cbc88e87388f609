//! Class 6, numbers as promised: ranges and equals compare exactly or not at all, and bounds that
//! cannot be compared exactly are load errors.

use super::*;

#[test]
fn numbers_range_and_equals_compare_exactly_or_not_at_all() {
    let policy = load(
        r#"{"rules": [
      {"id": "ports", "tool": "fetch", "action": "allow", "reason": "unprivileged",
       "when": {"range": {"pointer": "/port", "min": 1024, "max": 9007199254740993}}},
      {"id": "max", "tool": "fetch", "action": "deny", "reason": "the largest count is reserved",
       "when": {"equals": {"pointer": "/count", "value": 18446744073709551615}}}
    ]}"#,
    );
    let port =
        |text: &str| serde_json::from_str::<Value>(&format!(r#"{{"port": {text}}}"#)).unwrap();
    let cases = vec![
        (port("1024"), Allow),
        (port("1024.0"), Allow),
        (port("1.024e3"), Allow),
        (port("1023.9999"), Deny),
        (port("1023"), Deny),
        (port("9007199254740993"), Allow),
        (port("9007199254740994"), Deny),
        (port("9007199254740992.0"), Deny), // 2^53 as a float: may have been rounded
        (port("9007199254740993.0"), Deny), // parses to 2^53: undetermined, never allowed
        (port("18446744073709551616"), Deny), // beyond 64 bits
        (port("1e300"), Deny),
        (port("-0.0"), Deny),
        (port("\"2048\""), Deny),
    ];
    expect_all(&policy, "fetch", &cases);
    let count =
        |text: &str| serde_json::from_str::<Value>(&format!(r#"{{"count": {text}}}"#)).unwrap();
    for text in [
        "18446744073709551615",
        "18446744073709551615.0", // rounds to 2^64 as a float: cannot be told apart
        "18446744073709551616",
        "1.8446744073709551615e19",
    ] {
        assert_eq!(
            policy.decide_arguments("fetch", &count(text)).action,
            Deny,
            "{text}"
        );
    }
}

#[test]
fn numbers_bounds_that_cannot_be_compared_exactly_are_load_errors() {
    for condition in [
        r#"{"range": {"pointer": "/port", "max": 18446744073709551616}}"#,
        r#"{"range": {"pointer": "/port", "min": 9007199254740993.0}}"#,
        r#"{"range": {"pointer": "/port", "min": -1e300}}"#,
        r#"{"equals": {"pointer": "/port", "value": 1e20}}"#,
        r#"{"one_of": {"pointer": "/port", "values": [1, 36893488147419103232]}}"#,
        r#"{"range": {"pointer": "/port", "min": 10, "max": 9}}"#,
    ] {
        let problems = load_problems(&format!(
            r#"{{"rules": [{{"id": "d", "tool": "fetch", "action": "deny", "reason": "d", "when": {condition}}}]}}"#
        ));
        assert_eq!(problems.len(), 1, "{condition}: {problems:?}");
    }
}
