//! Which upstream a resource URI no listing names goes to: the one whose template's fixed start
//! is the longest start of the URI.

/// The fixed start of an RFC 6570 template: everything before its first expression.
pub(super) fn template_start(template: &str) -> &str {
    template
        .find('{')
        .map_or(template, |open| &template[..open])
}

/// Whether `uri` may be one of `template`'s: a template without expressions names exactly one
/// URI; one with expressions, any URI longer than its fixed `start` that begins with it. Which
/// URIs fit the rest is the upstream's to say (it answers a read of one that does not); the
/// gateway only needs which upstream to ask, in time linear in the URI and the templates — a
/// full matcher over expressions an upstream chooses could be made to take exponential time.
pub(super) fn fits_start(template: &str, start: &str, uri: &str) -> bool {
    if start.len() == template.len() {
        uri == template
    } else {
        uri.len() > start.len() && uri.starts_with(start)
    }
}

#[cfg(test)]
mod tests {
    use super::{fits_start, template_start};

    fn fits(template: &str, uri: &str) -> bool {
        fits_start(template, template_start(template), uri)
    }

    #[test]
    fn a_uri_fits_the_templates_whose_fixed_start_it_extends() {
        assert!(fits(
            "test://template/{id}/data",
            "test://template/123/data"
        ));
        assert!(fits("file:///{+path}", "file:///a/b/c.txt"));
        assert!(!fits("test://template/{id}/data", "test://template/"));
        assert!(!fits("test://template/{id}/data", "test://other/1/data"));
        assert!(fits("plain://x", "plain://x"));
        assert!(!fits("plain://x", "plain://xy"));
        assert!(fits("{+anything}", "x"));
        assert!(fits("é/{x}", "é/ü"));
    }

    #[test]
    fn many_expressions_against_a_long_uri_are_no_work() {
        // A template of many expressions against a long URI: a backtracking matcher would not
        // finish in the life of this test.
        let template = "{a}".repeat(4096);
        let uri = "x".repeat(1 << 20);
        assert!(fits(&template, &uri));
    }
}
