//! What a rule's, limit's, flow's or result rule's `id` may hold: it reaches reasons, the audit
//! log and the approval page, so two ids must not read alike there.

/// What is wrong with a rule's, limit's, flow's or result rule's `id`, if anything: empty,
/// holding a control, invisible or bidi character, or white space at its ends or other than a
/// space (an id reaches reasons, the audit log and the approval page, where `a\u{0}`, `a ` and
/// `a` would read alike).
pub(crate) fn id_problem(id: &str) -> Option<&'static str> {
    if id.trim().is_empty() {
        Some("id is empty")
    } else if id.chars().any(crate::text::is_invisible) {
        Some("id holds a control, invisible or bidi character")
    } else if id.trim() != id || id.chars().any(|c| c.is_whitespace() && c != ' ') {
        // `all` and `all ` (or `a\u{a0}b` and `a b`) read alike too (a second attack).
        Some("id starts or ends with white space, or holds white space other than a space")
    } else {
        None
    }
}
