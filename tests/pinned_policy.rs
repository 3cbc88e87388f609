//! Policy behaviour found unpinned by the mutation run (./mutation-report): a static reason may
//! start with whitespace, and one that is only whitespace is refused.

use toolgate::Reason;

#[test]
fn static_reason_with_leading_whitespace_is_kept_as_written() {
    let reason = Reason::from_static(" \t read-only");
    assert_eq!(reason.as_str(), " \t read-only");
    assert_eq!(reason.to_string(), " \t read-only");
}

#[test]
#[should_panic(expected = "a reason must not be empty")]
fn static_reason_of_only_whitespace_is_refused() {
    let _ = Reason::from_static(" \t\n ");
}
