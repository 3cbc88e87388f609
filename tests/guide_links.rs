//! The guide's links work in both places it is read: rustdoc (`cargo doc`, docs.rs) and the
//! Markdown files as GitHub shows them.
//!
//! Every link to the API or to another chapter is written `[text][label]`. Each chapter defines its
//! labels for GitHub (a chapter file, or the source file an item lives in); `src/guide.rs` puts
//! `docs/guide/rustdoc-links.md` before every chapter, whose definitions win in rustdoc (the first
//! definition of a label counts) and resolve to the API. rustdoc with `-D warnings` (in `.ci/run`)
//! checks the rustdoc side; this test checks the GitHub side and that the two sets agree.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn guide_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide")
}

fn chapters() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fs::read_dir(guide_dir())
        .expect("docs/guide is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .filter(|path| !path.ends_with("rustdoc-links.md"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read_to_string(&path).expect("a chapter is UTF-8"))
        })
        .collect();
    out.sort();
    out
}

/// `[label]: target` lines, outside code blocks.
fn definitions(text: &str) -> BTreeMap<String, String> {
    prose_lines(text)
        .filter_map(|line| {
            let rest = line.strip_prefix('[')?;
            let (label, target) = rest.split_once("]: ")?;
            Some((label.to_lowercase(), target.trim().to_owned()))
        })
        .collect()
}

/// The lines of a Markdown file outside fenced code blocks (samples may contain brackets).
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_fence = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            return false;
        }
        !in_fence
    })
}

/// Removes inline code spans so `[x](y)` inside backticks is not read as a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The labels of `[text][label]` references and the targets of inline `[text](target)` links.
fn links(text: &str) -> (BTreeSet<String>, Vec<String>) {
    let mut labels = BTreeSet::new();
    let mut inline = Vec::new();
    for line in prose_lines(text) {
        if line.starts_with('[') && line.contains("]: ") {
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(close) = rest.find(']') {
            let mut after = &rest[close + 1..];
            if let Some(label_part) = after.strip_prefix('[') {
                if let Some(end) = label_part.find(']') {
                    labels.insert(label_part[..end].to_lowercase());
                    // Step past the label so its closing bracket is not read as another link.
                    after = &label_part[end + 1..];
                }
            } else if let Some(target_part) = after.strip_prefix('(')
                && let Some(end) = target_part.find(')')
            {
                inline.push(target_part[..end].to_owned());
            }
            rest = after;
        }
    }
    (labels, inline)
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped, spaces
/// become `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose_lines(text)
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

/// A relative target (`chapter.md#anchor`, `#anchor`, `../../src/x.rs`) names something that exists.
fn check_relative(chapter: &str, target: &str, problems: &mut Vec<String>) {
    let (file, fragment) = match target.split_once('#') {
        Some((file, fragment)) => (file, Some(fragment)),
        None => (target, None),
    };
    let file = if file.is_empty() { chapter } else { file };
    let path = guide_dir().join(file);
    if !path.exists() {
        problems.push(format!(
            "{chapter}: `{target}` names a file that does not exist"
        ));
        return;
    }
    if let Some(fragment) = fragment {
        let text = fs::read_to_string(&path).unwrap_or_default();
        if !anchors(&text).contains(fragment) {
            problems.push(format!("{chapter}: `{target}` names no heading of {file}"));
        }
    }
}

#[test]
fn every_guide_link_resolves_on_github_and_agrees_with_rustdoc() {
    let rustdoc = fs::read_to_string(guide_dir().join("rustdoc-links.md")).unwrap();
    let rustdoc_definitions = definitions(&rustdoc);
    let mut problems = Vec::new();
    let mut checked = 0usize;
    // Only definitions: anything else would render at the top of every chapter (and a chapter's
    // summary in rustdoc's module list is its first paragraph).
    for line in rustdoc.lines().filter(|line| !line.trim().is_empty()) {
        if !(line.starts_with('[') && line.contains("]: ")) {
            problems.push(format!(
                "rustdoc-links.md: `{line}` is not a link definition"
            ));
        }
    }
    for (target_label, target) in &rustdoc_definitions {
        if !target.starts_with("crate") || target_label != &target.to_lowercase() {
            problems.push(format!(
                "rustdoc-links.md: `{target_label}` should name itself, a `crate::` path"
            ));
        }
    }
    for (chapter, text) in chapters() {
        let defined = definitions(&text);
        let (labels, inline) = links(&text);
        for label in &labels {
            if !defined.contains_key(label) {
                problems.push(format!("{chapter}: `[{label}]` is used but not defined"));
            }
            if label.starts_with("crate") && !rustdoc_definitions.contains_key(label) {
                problems.push(format!(
                    "{chapter}: `[{label}]` has no definition in rustdoc-links.md"
                ));
            }
        }
        for (label, target) in &defined {
            checked += 1;
            if target.starts_with("crate") {
                problems.push(format!(
                    "{chapter}: `[{label}]` points at `{target}`, which GitHub cannot follow"
                ));
            } else if !target.starts_with("http") {
                check_relative(&chapter, target, &mut problems);
            }
        }
        for target in inline {
            checked += 1;
            if target.starts_with("crate") {
                problems.push(format!(
                    "{chapter}: inline link to `{target}` works only in rustdoc; use a label"
                ));
            } else if !target.starts_with("http") {
                check_relative(&chapter, &target, &mut problems);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        checked > 100,
        "only {checked} links were checked: is the parser reading the guide?"
    );
}

#[test]
fn the_anchor_rule_matches_githubs() {
    assert_eq!(
        anchor(" Who may approve, and a page to approve in"),
        "who-may-approve-and-a-page-to-approve-in"
    );
    assert_eq!(
        anchor("Commands: options never hide a subcommand"),
        "commands-options-never-hide-a-subcommand"
    );
    assert_eq!(anchor("`argv_prefix` rules"), "argv_prefix-rules");
}
