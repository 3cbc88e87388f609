//! Wildcard matching: `*` any run, `?` one character, `\` escapes the next one — over the raw
//! string (`glob`) or over the components of a normalized path (`path_glob`).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GlobToken {
    Literal(char),
    AnyOne,
    AnyRun,
}

pub(crate) fn tokenize_glob(pattern: &str) -> Vec<GlobToken> {
    let mut tokens = Vec::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        tokens.push(match c {
            '*' => GlobToken::AnyRun,
            '?' => GlobToken::AnyOne,
            '\\' => GlobToken::Literal(chars.next().unwrap_or('\\')),
            other => GlobToken::Literal(other),
        });
    }
    tokens
}

/// Wildcard match with one backtracking point: O(pattern × text) at worst, never exponential,
/// and no allocation (positions in `text` are byte offsets on character boundaries). With
/// `fold_ascii`, ASCII letters match either case (the pattern was lower-cased at load).
pub(crate) fn glob_match(pattern: &[GlobToken], text: &str, fold_ascii: bool) -> bool {
    let next_width = |at: usize| text[at..].chars().next().map_or(1, char::len_utf8);
    let (mut p, mut t) = (0, 0);
    let mut resume: Option<(usize, usize)> = None;
    while let Some(c) = text[t..].chars().next() {
        let c_folded = if fold_ascii {
            c.to_ascii_lowercase()
        } else {
            c
        };
        match pattern.get(p) {
            // A trailing `*` matches whatever is left: no need to walk it.
            Some(GlobToken::AnyRun) if p + 1 == pattern.len() => return true,
            Some(GlobToken::AnyRun) => {
                resume = Some((p, t));
                p += 1;
            }
            Some(GlobToken::AnyOne) => {
                p += 1;
                t += c.len_utf8();
            }
            Some(GlobToken::Literal(literal)) if *literal == c_folded => {
                p += 1;
                t += c.len_utf8();
            }
            _ => match resume {
                // Back to the `*`, one character further on: re-reading the `*` records the
                // new resume point.
                Some((star, start)) => {
                    p = star;
                    t = start + next_width(start);
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|token| *token == GlobToken::AnyRun)
}

/// One component of a path pattern: `**` (any number of whole components) or a glob within one
/// component (its `*` and `?` never cross `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ComponentPattern {
    AnyComponents,
    Glob(Vec<GlobToken>),
}

/// Matches path components against component patterns, with the same one-backtracking-point
/// algorithm one level up (`**` plays `*`, a component glob plays a character): polynomial at
/// worst, never exponential.
pub(crate) fn path_glob_match<S: AsRef<str>>(
    pattern: &[ComponentPattern],
    components: &[S],
    fold_ascii: bool,
) -> bool {
    let (mut p, mut c) = (0, 0);
    let mut resume: Option<(usize, usize)> = None;
    while c < components.len() {
        match pattern.get(p) {
            Some(ComponentPattern::AnyComponents) => {
                resume = Some((p, c));
                p += 1;
            }
            Some(ComponentPattern::Glob(tokens))
                if glob_match(tokens, components[c].as_ref(), fold_ascii) =>
            {
                p += 1;
                c += 1;
            }
            _ => match resume {
                // Back to the `**`, one component further on: re-reading it records the new
                // resume point.
                Some((star, start)) => {
                    p = star;
                    c = start + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..]
        .iter()
        .all(|token| *token == ComponentPattern::AnyComponents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(pattern: &str, text: &str) -> bool {
        glob_match(&tokenize_glob(pattern), text, false)
    }

    #[test]
    fn glob_matches_runs_and_single_characters() {
        assert!(glob("*.txt", "notes.txt"));
        assert!(glob("*.txt", "dir/notes.txt"));
        assert!(!glob("*.txt", "notes.txt.exe"));
        assert!(glob("a?c", "abc"));
        assert!(!glob("a?c", "ac"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(glob("\\*", "*"));
        assert!(!glob("\\*", "x"));
        assert!(glob("é*", "été"));
        assert!(glob("*é", "ééé"));
        assert!(glob("*ab", "aab"));
        assert!(glob("*éb", "éééb"));
        assert!(!glob("*éb", "ééé"));
        assert!(glob("x*yz", "xyyyz"));
        assert!(!glob("", "a"));
        assert!(glob("", ""));
        // The pathological case for naive backtracking stays fast.
        let text = "a".repeat(10_000);
        assert!(!glob("*a*a*a*a*a*a*a*b", &text));
    }

    #[test]
    fn folding_matches_either_ascii_case_only() {
        let pattern = tokenize_glob("*.pem");
        assert!(glob_match(&pattern, "KEY.PEM", true));
        assert!(!glob_match(&pattern, "KEY.PEM", false));
        assert!(!glob_match(&tokenize_glob("é"), "É", true));
    }

    fn path_pattern(pattern: &str) -> Vec<ComponentPattern> {
        pattern
            .split('/')
            .filter(|c| !c.is_empty())
            .map(|c| {
                if c == "**" {
                    ComponentPattern::AnyComponents
                } else {
                    ComponentPattern::Glob(tokenize_glob(c))
                }
            })
            .collect()
    }

    fn path_glob(pattern: &str, path: &str) -> bool {
        let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        path_glob_match(&path_pattern(pattern), &components, false)
    }

    #[test]
    fn path_globs_match_whole_components() {
        assert!(path_glob("/work/secrets/*", "/work/secrets/key"));
        assert!(!path_glob("/work/secrets/*", "/work/secrets/a/key"));
        assert!(!path_glob("/work/secrets/*", "/work/secrets"));
        assert!(path_glob("/work/secrets/**", "/work/secrets"));
        assert!(path_glob("/work/secrets/**", "/work/secrets/a/b/c"));
        assert!(path_glob("/**/.env", "/.env"));
        assert!(path_glob("/**/.env", "/a/b/.env"));
        assert!(!path_glob("/**/.env", "/a/b/.envrc"));
        assert!(path_glob("/**/*.pem", "/work/keys/server.pem"));
        assert!(path_glob("/work/**/config/*", "/work/a/config/x"));
        assert!(path_glob("/work/**/config/*", "/work/config/x"));
        assert!(!path_glob("/work/**/config/*", "/work/a/config"));
        assert!(path_glob("/**/a/**/b", "/x/a/y/a/z/b"));
        // `*` never crosses a component.
        assert!(!path_glob("/work/*", "/work/a/b"));
        let deep = format!("/{}", "a/".repeat(2_000));
        assert!(!path_glob("/**/a/**/a/**/a/**/b", &deep));
    }
}
