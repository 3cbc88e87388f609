//! Commands as program, options and subcommands — so options never hide a subcommand.
//!
//! A command is a list of words: an argv array, or a command string split on whitespace (only
//! when it holds no shell syntax). A prefix such as `["git", "push"]` names a program and the
//! subcommand words after it. The words match:
//!
//! - **exactly** when the prefix is the command's leading words, spelled the same: `git push -f`;
//! - **possibly** when
//!   - the program is another spelling of it: a path (`/usr/bin/git`), another ASCII case (`GIT`
//!     on a case-insensitive file system), or its per-subcommand binary (`git-push`);
//!   - the program is not the first word but comes later: after an environment assignment
//!     (`GIT_DIR=x git push`), or a program that runs another (`env`, `sudo`, `nice`, `sh -c`,
//!     `valgrind`, … — no list could be complete, so *any* first word counts);
//!   - options stand before the first subcommand word (`git -C . push`, `git -c k=v push`): a word
//!     starting with `-` is skipped with one value after it, and a subcommand word that differs
//!     after such options is still possible, since options can redefine it
//!     (`git -c alias.x=push x`);
//!   - the match relies on a piece of an argv token holding whitespace;
//! - **not** otherwise.
//!
//! "Possibly" is undetermined: an `allow` rule never applies on it, `ask` and `deny` rules do. So a
//! deny on `git push` holds whatever precedes or spells the program, and an allow on `git status`
//! allows only `git status …` as written. The price is that a deny also applies to commands that
//! merely mention the program after another word (`echo git push`) or pass global options before
//! another subcommand (`git -C . status`): such calls are asked or denied, never allowed by it.

/// How a command's words stand to a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrefixMatch {
    Exact,
    Possible,
    No,
}

/// Letters, digits, whitespace and `- _ . / , : = @ + %`, with no word starting with `=`: a command
/// made only of these has no shell syntax, so splitting it on whitespace gives the words a shell
/// would.
pub(crate) fn is_plain_command(command: &str) -> bool {
    // Exact over bytes: every byte allowed is ASCII, so a non-ASCII character is never plain.
    // Fast path: a byte table (chars with `split_whitespace` cost ~800 instr. a command).
    const PLAIN: [bool; 256] = {
        let mut table = [false; 256];
        let mut byte = 0;
        while byte < 256 {
            let c = byte as u8;
            table[byte] = c.is_ascii_alphanumeric();
            byte += 1;
        }
        let extra = b" \t-_./,:=@+%";
        let mut i = 0;
        while i < extra.len() {
            table[extra[i] as usize] = true;
            i += 1;
        }
        table
    };
    let bytes = command.as_bytes();
    bytes.iter().all(|&byte| PLAIN[usize::from(byte)])
        // zsh expands a word starting with `=` into a program's path (`=git` is `/usr/bin/git`).
        // The only whitespace left is space and tab, so a word starts at the start or after one.
        && !bytes.iter().enumerate().any(|(at, &byte)| {
            byte == b'=' && (at == 0 || matches!(bytes[at - 1], b' ' | b'\t'))
        })
}

/// How a word names a program.
enum ProgramWord<'a> {
    /// The same word.
    Exact,
    /// A path ending in it, or a spelling differing only in ASCII case.
    Other,
    /// Its per-subcommand binary, `program-sub`: the rest is the first subcommand word.
    Dashed(&'a str),
    /// A spelling outside ASCII that a case-insensitive file system may resolve to it or to its
    /// `program-sub` (`\u{212A}ubectl` for `kubectl`, `ſudo` for `sudo`): nothing can be said.
    Unicode,
    No,
}

fn program_word<'a>(word: &'a str, program: &str) -> ProgramWord<'a> {
    if word == program {
        return ProgramWord::Exact;
    }
    let base = word.rsplit('/').next().unwrap_or(word);
    if !base.is_ascii() {
        let (folded, program) = (
            crate::text::fold_case(base),
            crate::text::fold_case(program),
        );
        let dashed = folded
            .strip_prefix(program.as_str())
            .is_some_and(|rest| rest.len() > 1 && rest.starts_with('-'));
        return if folded == program || dashed {
            ProgramWord::Unicode
        } else {
            ProgramWord::No
        };
    }
    if base.eq_ignore_ascii_case(program) {
        return ProgramWord::Other;
    }
    match base.get(..program.len()) {
        Some(head) if head.eq_ignore_ascii_case(program) => base[program.len()..]
            .strip_prefix('-')
            .filter(|rest| !rest.is_empty())
            .map_or(ProgramWord::No, ProgramWord::Dashed),
        _ => ProgramWord::No,
    }
}

/// How `words` stand to `prefix` (see the module docs). Each word comes with whether it is part
/// of a larger argv token (an argv token holding whitespace is split into words, and a match that
/// relies on such a word is only possible).
pub(crate) fn prefix_match<'a>(
    mut words: impl Iterator<Item = (&'a str, bool)>,
    prefix: &[String],
) -> PrefixMatch {
    let Some((program, subcommands)) = prefix.split_first() else {
        return PrefixMatch::No;
    };
    let mut result = PrefixMatch::Exact;
    let mut first_subcommand = None;
    let mut is_first = true;
    loop {
        let Some((word, split)) = words.next() else {
            return PrefixMatch::No;
        };
        let named = program_word(word, program);
        if !is_first || split {
            result = PrefixMatch::Possible;
        }
        is_first = false;
        match named {
            ProgramWord::Exact => break,
            ProgramWord::Other => {
                result = PrefixMatch::Possible;
                break;
            }
            ProgramWord::Dashed(rest) => {
                result = PrefixMatch::Possible;
                first_subcommand = Some(rest);
                break;
            }
            ProgramWord::Unicode => return PrefixMatch::Possible,
            // Whatever came first (an assignment, a program running another), the program may
            // come later.
            ProgramWord::No => {}
        }
    }
    let mut subcommands = subcommands.iter();
    if let Some(rest) = first_subcommand {
        match subcommands.next() {
            Some(expected) if expected.eq_ignore_ascii_case(rest) => {}
            Some(_) => return PrefixMatch::No,
            None => return result,
        }
    }
    // Options before the first subcommand word are the program's own: they may redefine what
    // the next word means.
    let mut global_options = false;
    let mut matched_any = first_subcommand.is_some();
    'expected: for expected in subcommands {
        let mut after_option = false;
        for (word, split) in words.by_ref() {
            if word == expected {
                if split {
                    result = PrefixMatch::Possible;
                }
                matched_any = true;
                continue 'expected;
            }
            if word.starts_with('-') {
                after_option = true;
                global_options |= !matched_any;
            } else if after_option || split {
                // An option's value, or a piece of an argv token holding whitespace (never a
                // subcommand itself).
                after_option = false;
            } else if global_options {
                return PrefixMatch::Possible;
            } else {
                return PrefixMatch::No;
            }
            result = PrefixMatch::Possible;
        }
        // The words ran out: the word skipped as an option's value may have been the subcommand
        // (`-cvalue x`), so after global options the match stays possible.
        return if global_options {
            PrefixMatch::Possible
        } else {
            PrefixMatch::No
        };
    }
    result
}

/// The words of a plain command string: its only whitespace is space and tab (see
/// [`is_plain_command`]), so splitting on those is `split_whitespace` without the Unicode tables.
pub(crate) fn string_words(command: &str) -> impl Iterator<Item = (&str, bool)> + Clone {
    plain_words(command).map(|word| (word, false))
}

/// The words of a plain command string.
pub(crate) fn plain_words(command: &str) -> impl Iterator<Item = &str> + Clone {
    command.split([' ', '\t']).filter(|word| !word.is_empty())
}

/// The words of an argv: its tokens, with tokens holding whitespace split (and marked so).
pub(crate) fn argv_words<'a>(tokens: &'a [&'a str]) -> impl Iterator<Item = (&'a str, bool)> {
    tokens.iter().flat_map(|token| {
        let split = token.contains(char::is_whitespace);
        token.split_whitespace().map(move |word| (word, split))
    })
}

/// Whether any word is one of `options`: a long option (`--output`) matches itself, its
/// `--output=value` form and any abbreviation getopt would accept (`--out`, `--out=x`); a short
/// option (`-o`) matches itself, an attached value (`-ofile`) and any cluster holding its letter
/// (`-ro`). Matching errs towards yes: these conditions serve `deny` and `ask` rules (and
/// `not command_option` in an `allow` rule), where a false yes only asks more often.
pub(crate) fn has_option<'a>(
    mut words: impl Iterator<Item = (&'a str, bool)>,
    options: &[String],
) -> bool {
    words.any(|(word, _)| options.iter().any(|option| word_is_option(word, option)))
}

fn word_is_option(word: &str, option: &str) -> bool {
    if let Some(long) = option.strip_prefix("--") {
        let Some(given) = word.strip_prefix("--") else {
            return false;
        };
        let name = given.split_once('=').map_or(given, |(name, _)| name);
        !name.is_empty() && long.starts_with(name)
    } else {
        // Checked at load (`check_option`): any other option is `-x`, one character after `-`.
        let short = option.strip_prefix('-').unwrap_or(option);
        word.starts_with('-') && !word.starts_with("--") && word[1..].contains(short)
    }
}

/// Checks an option as written in a policy: `--name` (two or more characters) or `-x`.
pub(crate) fn check_option(option: &str) -> Result<(), String> {
    let valid = match option.strip_prefix("--") {
        Some(long) => {
            long.len() >= 2
                && !long.contains('=')
                && long
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        }
        None => option.strip_prefix('-').is_some_and(|short| {
            short.len() == 1 && short.chars().all(|c| c.is_ascii_alphanumeric())
        }),
    };
    if valid {
        Ok(())
    } else {
        Err(format!(
            "option {option:?} is neither a long option (--name) nor a short one (-x)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn plain_commands_over_bytes_match_the_character_definition(
            command in "[a-zA-Z0-9 \t\n=;|&$`'\"<>()~*?\\\u{0}\u{a0}\u{85}\u{2028}é_./,:@+%-]{0,24}"
        ) {
            let by_chars = command.chars().all(|c| {
                c.is_ascii_alphanumeric() || c == ' ' || c == '\t' || "-_./,:=@+%".contains(c)
            }) && !command.split_whitespace().any(|word| word.starts_with('='));
            proptest::prop_assert_eq!(is_plain_command(&command), by_chars);
            if by_chars {
                let words: Vec<&str> = plain_words(&command).collect();
                let expected: Vec<&str> = command.split_whitespace().collect();
                proptest::prop_assert_eq!(words, expected);
            }
        }
    }

    fn prefix(words: &str, prefix: &[&str]) -> PrefixMatch {
        let prefix: Vec<String> = prefix.iter().map(|s| (*s).to_owned()).collect();
        prefix_match(string_words(words), &prefix)
    }

    fn argv_prefix(tokens: &[&str], prefix: &[&str]) -> PrefixMatch {
        let prefix: Vec<String> = prefix.iter().map(|s| (*s).to_owned()).collect();
        prefix_match(argv_words(tokens), &prefix)
    }

    #[test]
    fn runners_and_assignments_before_the_program_make_a_possible_match() {
        for command in [
            "env git push",
            "env -i PATH=/usr/bin git push",
            "GIT_DIR=x git push",
            "A=1 B=2 git -C . push",
            "sudo git push",
            "sudo -u root git push",
            "/usr/bin/sudo git push",
            "nice -n 5 git push",
            "timeout 5 git push",
            "xargs git push",
            "nohup git push",
            "bash -c git push",
            "sh -c git push",
            "command git push",
        ] {
            assert_eq!(
                prefix(command, &["git", "push"]),
                PrefixMatch::Possible,
                "{command}"
            );
        }
        // No list of runners is complete: any first word may run the program.
        for command in [
            "eval git push",
            "valgrind git push",
            "pkexec git push",
            "echo git push",
        ] {
            assert_eq!(
                prefix(command, &["git", "push"]),
                PrefixMatch::Possible,
                "{command}"
            );
        }
        assert_eq!(prefix("env ls", &["git", "push"]), PrefixMatch::No);
        assert_eq!(
            prefix("GIT_DIR=x git status", &["git", "push"]),
            PrefixMatch::No
        );
        assert_eq!(prefix("echo push", &["git", "push"]), PrefixMatch::No);
    }

    #[test]
    fn per_subcommand_binaries_and_option_aliases_make_a_possible_match() {
        for command in [
            "git-push origin",
            "/usr/lib/git-core/git-push origin main",
            "GIT-PUSH",
            "git -c alias.x=push x",
            "git -c alias.p=push p origin main",
            "git -calias.x=push x",
            "git -C . status",
        ] {
            assert_eq!(
                prefix(command, &["git", "push"]),
                PrefixMatch::Possible,
                "{command}"
            );
        }
        assert_eq!(prefix("git-status", &["git", "push"]), PrefixMatch::No);
        assert_eq!(prefix("gitx push", &["git", "push"]), PrefixMatch::No);
        assert_eq!(prefix("git-push", &["git"]), PrefixMatch::Possible);
        // Options after the subcommand do not redefine it.
        assert_eq!(
            prefix("git remote -v show", &["git", "remote", "add"]),
            PrefixMatch::No
        );
    }

    #[test]
    fn argv_tokens_holding_whitespace_match_only_possibly() {
        assert_eq!(
            argv_prefix(&["git", "push"], &["git", "push"]),
            PrefixMatch::Exact
        );
        assert_eq!(
            argv_prefix(&["git push"], &["git", "push"]),
            PrefixMatch::Possible
        );
        assert_eq!(
            argv_prefix(&["git", "push origin"], &["git", "push"]),
            PrefixMatch::Possible
        );
        assert_eq!(
            argv_prefix(&["bash", "-c", "git push"], &["git", "push"]),
            PrefixMatch::Possible
        );
        assert_eq!(
            argv_prefix(&["sh", "-c", "git  -C . push"], &["git", "push"]),
            PrefixMatch::Possible
        );
        assert_eq!(
            argv_prefix(&["git", "commit", "-m", "fix push"], &["git", "commit"]),
            PrefixMatch::Exact
        );
        assert_eq!(
            argv_prefix(&["git", "log", "a push"], &["git", "push"]),
            PrefixMatch::No
        );
    }

    #[test]
    fn leading_words_match_exactly() {
        assert_eq!(prefix("git push", &["git", "push"]), PrefixMatch::Exact);
        assert_eq!(
            prefix("git push -f origin", &["git", "push"]),
            PrefixMatch::Exact
        );
        assert_eq!(prefix("git", &["git"]), PrefixMatch::Exact);
        assert_eq!(prefix("git status", &["git"]), PrefixMatch::Exact);
    }

    #[test]
    fn options_before_a_subcommand_make_a_possible_match() {
        for command in [
            "git -C . push",
            "git -c k=v push",
            "git --no-pager push",
            "git --git-dir=.git push",
            "git -C /tmp -c a=b --no-pager push origin",
            "git --exec-path push",
            "git -- push",
        ] {
            assert_eq!(
                prefix(command, &["git", "push"]),
                PrefixMatch::Possible,
                "{command}"
            );
        }
        assert_eq!(
            prefix("git remote -v add origin x", &["git", "remote", "add"]),
            PrefixMatch::Possible
        );
    }

    #[test]
    fn other_spellings_of_the_program_make_a_possible_match() {
        assert_eq!(
            prefix("/usr/bin/git push", &["git", "push"]),
            PrefixMatch::Possible
        );
        assert_eq!(
            prefix("./git push", &["git", "push"]),
            PrefixMatch::Possible
        );
        assert_eq!(prefix("GIT push", &["git", "push"]), PrefixMatch::Possible);
        assert_eq!(prefix("gitx push", &["git", "push"]), PrefixMatch::No);
    }

    #[test]
    fn other_subcommands_do_not_match() {
        assert_eq!(
            prefix("git log --grep push", &["git", "push"]),
            PrefixMatch::No
        );
        assert_eq!(prefix("git status", &["git", "push"]), PrefixMatch::No);
        assert_eq!(prefix("git pushx", &["git", "push"]), PrefixMatch::No);
        assert_eq!(prefix("git", &["git", "push"]), PrefixMatch::No);
        // Global options and nothing after them: the next word cannot be known, so possibly.
        assert_eq!(prefix("git -C", &["git", "push"]), PrefixMatch::Possible);
        assert_eq!(prefix("", &["git"]), PrefixMatch::No);
    }

    fn option(words: &str, options: &[&str]) -> bool {
        let options: Vec<String> = options.iter().map(|s| (*s).to_owned()).collect();
        has_option(string_words(words), &options)
    }

    #[test]
    fn options_match_in_every_spelling() {
        assert!(option("git log --output=/etc/x", &["--output"]));
        assert!(option("git log --output /etc/x", &["--output"]));
        assert!(option("git log --out=/etc/x", &["--output"]));
        assert!(option("git log --o=x", &["--output"]));
        assert!(!option("git log --outputx=1", &["--output"]));
        assert!(!option("git log --oneline", &["--output"]));
        assert!(option("sort -o out.txt in", &["-o"]));
        assert!(option("sort -oout.txt in", &["-o"]));
        assert!(option("sort -ro out.txt in", &["-o"]));
        assert!(!option("sort -r in", &["-o"]));
        assert!(!option("sort --reverse in", &["-o"]));
        assert!(!option("sort in -", &["-o"]));
    }

    #[test]
    fn options_are_checked_at_load() {
        for good in ["--output", "-o", "--no-pager", "-C"] {
            assert!(check_option(good).is_ok(), "{good}");
        }
        for bad in ["output", "-", "--", "--o", "-ab", "--out=x", "--a b", ""] {
            assert!(check_option(bad).is_err(), "{bad}");
        }
    }
}
