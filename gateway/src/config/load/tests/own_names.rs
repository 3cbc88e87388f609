//! `own_names`: one upstream served under its tools' own names, and which upstream a served name
//! comes from.

use std::path::Path;

use super::{MINIMAL, problems};
use crate::config::load::parse;

const TWO: &str = r#"
[upstreams.files]
command = "a"
own_names = true
[upstreams.git]
command = "b"
[policy]
layers = ["policy.json"]
"#;

#[test]
fn one_upstream_may_serve_its_tools_under_their_own_names() {
    let config = parse(Path::new("/etc/gw/gateway.toml"), TWO).expect("loads");
    assert_eq!(config.served_name("files", "read_file"), "read_file");
    assert_eq!(config.served_name("git", "status"), "git__status");
    assert_eq!(config.owner_of("read_file"), Some(("files", "read_file")));
    assert_eq!(config.owner_of("git__status"), Some(("git", "status")));
    // A name that reads as the prefixed upstream's is that upstream's, never the other's.
    assert_eq!(config.owner_of("git__x"), Some(("git", "x")));
    let plain = parse(Path::new("/etc/gw/gateway.toml"), MINIMAL).expect("loads");
    assert_eq!(plain.served_name("files", "read_file"), "files__read_file");
    assert_eq!(plain.owner_of("read_file"), None);
    assert_eq!(
        plain.owner_of("files__read_file"),
        Some(("files", "read_file"))
    );
}

#[test]
fn a_second_upstream_with_own_names_is_refused_naming_the_key() {
    let found = problems(&TWO.replace("command = \"b\"", "command = \"b\"\nown_names = true"));
    assert!(
        found
            .iter()
            .any(|problem| problem.contains("upstreams.git.own_names")
                && problem
                    .contains("upstream `files` already serves its tools under their own names")),
        "{found:?}"
    );
    let found = problems(&TWO.replace("own_names = true", "own_names = \"yes\""));
    assert!(
        found.iter().any(|problem| problem.contains("own_names")),
        "{found:?}"
    );
}

#[test]
fn a_served_name_belongs_to_the_longest_upstream_name_it_starts_with() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        "[upstreams.x]\ncommand = \"a\"\n[upstreams.x_]\ncommand = \"b\"\n[policy]\nlayers = [\"p.json\"]\n",
    )
    .expect("loads");
    assert_eq!(config.served_name("x_", "y"), "x___y");
    assert_eq!(config.owner_of("x___y"), Some(("x_", "y")));
    assert_eq!(config.owner_of("x__y"), Some(("x", "y")));
    let own = parse(Path::new("/etc/gw/gateway.toml"), TWO).expect("loads");
    assert!(own.reads_as_prefixed("files", "GIT__status"));
    assert!(own.reads_as_prefixed("files", "git__status"));
    assert!(!own.reads_as_prefixed("files", "status"));
    assert!(
        !own.reads_as_prefixed("git", "GIT__status"),
        "only the own-names upstream"
    );
}
