//! Commands as program, options and subcommands — so options never hide a subcommand.
//!
//! A command is a list of words: an argv array, or a command string split on whitespace (only
//! when it holds no shell syntax). A prefix such as `["git", "push"]` names a program and the
//! subcommand words after it. The words match:
//!
//! - **exactly** when the prefix is the command's leading words, spelled the same: `git push -f`;
//! - **possibly** when the program is another spelling of it (`/usr/bin/git`, `GIT` on a
//!   case-insensitive file system) or when options stand before a subcommand word
//!   (`git -C . push`, `git -c k=v push`, `git --no-pager push`): a word starting with `-` is
//!   skipped, and so is one word after it (it may be the option's value);
//! - **possibly** when environment assignments (`GIT_DIR=x git push`) or a program that runs
//!   another one (`env`, `sudo`, `nice`, `timeout 5`, `xargs`, … — see [`RUNNERS`]) stand before
//!   the program: the program is then looked for among the following words;
//! - **not** otherwise.
//!
//! "Possibly" is undetermined: an `allow` rule never applies on it, `ask` and `deny` rules do. So a
//! deny on `git push` holds whatever options precede `push`, and an allow on `git status` allows
//! only `git status …` as written.

/// How a command's words stand to a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrefixMatch {
    Exact,
    Possible,
    No,
}

/// Letters, digits, whitespace and `- _ . / , : = @ + %`: a command made only of these has no
/// shell syntax, so splitting it on whitespace gives the words a shell would.
pub(crate) fn is_plain_command(command: &str) -> bool {
    command
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == ' ' || c == '\t' || "-_./,:=@+%".contains(c))
}

/// Whether `word` names `program`: the same word, or a path ending in it or a spelling differing
/// only in ASCII case (possible).
fn program_match(word: &str, program: &str) -> PrefixMatch {
    if word == program {
        return PrefixMatch::Exact;
    }
    let base = word.rsplit('/').next().unwrap_or(word);
    if base.eq_ignore_ascii_case(program) {
        PrefixMatch::Possible
    } else {
        PrefixMatch::No
    }
}

/// Programs that run the command given in their arguments. Before one of them, the program a
/// rule names may come later in the words.
pub(crate) const RUNNERS: &[&str] = &[
    "env",
    "sudo",
    "doas",
    "su",
    "nice",
    "ionice",
    "nohup",
    "timeout",
    "time",
    "command",
    "exec",
    "builtin",
    "xargs",
    "stdbuf",
    "setsid",
    "taskset",
    "chroot",
    "flock",
    "watch",
    "strace",
    "ltrace",
    "unbuffer",
    "busybox",
    "chrt",
    "runuser",
    "systemd-run",
    "firejail",
    "caffeinate",
    "script",
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "ssh",
    "parallel",
    "find",
];

fn is_runner(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    RUNNERS
        .iter()
        .any(|runner| base.eq_ignore_ascii_case(runner))
}

/// A shell environment assignment, `NAME=value`.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
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
    let Some((first, split)) = words.next() else {
        return PrefixMatch::No;
    };
    let mut result = program_match(first, program);
    if split {
        result = result.at_most_possible();
    }
    if result == PrefixMatch::No {
        if !(is_assignment(first) || is_runner(first)) {
            return PrefixMatch::No;
        }
        // `env`, `sudo`, `VAR=x` …: the program may come later.
        result = PrefixMatch::No;
        for (word, _) in words.by_ref() {
            if program_match(word, program) != PrefixMatch::No {
                result = PrefixMatch::Possible;
                break;
            }
        }
        if result == PrefixMatch::No {
            return result;
        }
    }
    'expected: for expected in subcommands {
        let mut after_option = false;
        for (word, split) in words.by_ref() {
            if word == expected {
                if split {
                    result = PrefixMatch::Possible;
                }
                continue 'expected;
            }
            if word.starts_with('-') {
                after_option = true;
            } else if after_option || split {
                // An option's value, or a piece of an argv token holding whitespace (never a
                // subcommand itself).
                after_option = false;
            } else {
                return PrefixMatch::No;
            }
            result = PrefixMatch::Possible;
        }
        return PrefixMatch::No;
    }
    result
}

impl PrefixMatch {
    fn at_most_possible(self) -> Self {
        match self {
            Self::Exact => Self::Possible,
            other => other,
        }
    }
}

/// The words of a plain command string.
pub(crate) fn string_words(command: &str) -> impl Iterator<Item = (&str, bool)> {
    command.split_whitespace().map(|word| (word, false))
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
    } else if let Some(short) = option.strip_prefix('-') {
        // Checked at load: a short option is one character.
        word.starts_with('-') && !word.starts_with("--") && word[1..].contains(short)
    } else {
        word == option
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
        assert_eq!(prefix("echo git push", &["git", "push"]), PrefixMatch::No);
        assert_eq!(prefix("env ls", &["git", "push"]), PrefixMatch::No);
        assert_eq!(
            prefix("GIT_DIR=x git status", &["git", "push"]),
            PrefixMatch::No
        );
        assert_eq!(prefix("1A=x git push", &["git", "push"]), PrefixMatch::No);
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
        assert_eq!(prefix("git -C", &["git", "push"]), PrefixMatch::No);
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
