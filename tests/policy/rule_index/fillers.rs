//! A target rule alone and among fillers: the index decides as the target alone would, on tricky
//! paths and values, commands and text.

use super::*;

/// `target` alone (linear) and `target` among 9 unrelated filler rules of the same action and of
/// allow (indexed) must decide the same action.
fn index_agrees(paths: Value, target: Value, arguments: &[Value]) {
    let runs = Arc::default();
    let reg = probe_tools(&runs, &["t"]);
    let action = target["action"].as_str().unwrap().to_owned();
    let mut padded = vec![target.clone()];
    for n in 0..9 {
        padded.push(json!({"id": format!("zz{n}"), "tool": "t", "action": action,
            "reason": "filler", "when": {"equals": {"pointer": "/mode", "value": format!("filler{n}")}}}));
    }
    let alone = json!({"paths": paths, "rules": [target]});
    let indexed = json!({"paths": paths, "rules": padded});
    let (Ok(alone), Ok(indexed)) = (
        RulePolicy::from_json(&alone.to_string(), &reg),
        RulePolicy::from_json(&indexed.to_string(), &reg),
    ) else {
        return;
    };
    for args in arguments {
        assert_eq!(
            alone.decide_arguments("t", args).action,
            indexed.decide_arguments("t", args).action,
            "{args}"
        );
    }
}

#[test]
fn index_matches_linear_on_tricky_values() {
    let path_args: Vec<Value> = [
        "src/a",
        "./src/a",
        "/ws/src/a",
        "/ws/SRC/a",
        "/wsx/a",
        "/ws",
        "/ws/",
        "ws/a",
        "/ws/./a",
        "/ws/../ws/a",
        "/wś/a",
        "/WS/a",
        "src",
        "../ws/a",
        "/ws//a",
    ]
    .iter()
    .map(|p| json!({"path": p}))
    .collect();
    for ci in [false, true] {
        let paths = json!({"working_directory": "/ws", "case_insensitive": ci});
        for action in ["deny", "ask", "allow"] {
            for when in [
                json!({"path_glob": {"pointer": "/path", "pattern": "src/*"}}),
                json!({"path_glob": {"pointer": "/path", "pattern": "/ws/*"}}),
                json!({"path_glob": {"pointer": "/path", "pattern": "/WS/*"}}),
                json!({"path_glob": {"pointer": "/path", "pattern": "/w\\s/*"}}),
                json!({"path_within": {"pointer": "/path", "roots": ["/ws"]}}),
                json!({"path_within": {"pointer": "/path", "roots": ["/ws/src", "/wsx"]}}),
                json!({"path_within": {"pointer": "/path", "roots": ["src"]}}),
                json!({"all": [{"path_within": {"pointer": "/path", "roots": ["/ws"]}},
                               {"not": {"equals": {"pointer": "/mode", "value": "x"}}}]}),
            ] {
                index_agrees(
                    paths.clone(),
                    json!({"id": "target", "tool": "t", "action": action, "reason": "r", "when": when}),
                    &path_args,
                );
            }
        }
    }
}

#[test]
fn index_matches_linear_on_commands_and_text() {
    let args: Vec<Value> = [
        json!({"command": "Git-Push x"}),
        json!({"command": "git\u{a0}push"}),
        json!({"command": "/usr/bin/GIT push"}),
        json!({"command": "env GIT=1 git push"}),
        json!({"command": "git--push"}),
        json!({"command": "git- push"}),
        json!({"argv": ["git\u{a0}push"]}),
        json!({"argv": [" git", "push "]}),
        json!({"argv": ["GIT-PUSH"]}),
        json!({"argv": ["/bin/git-lfs", "pull"]}),
        json!({"mode": "RM"}),
        json!({"mode": "rm"}),
        json!({"mode": "rm "}),
        json!({"mode": "r\u{0}m"}),
        json!({}),
    ]
    .to_vec();
    for action in ["deny", "ask", "allow"] {
        for when in [
            json!({"command_prefix": {"pointer": "/command", "prefix": ["git", "push"]}}),
            json!({"command_prefix": {"pointer": "/command", "prefix": ["git-push"]}}),
            json!({"command_prefix": {"pointer": "/command", "prefix": ["GIT"]}}),
            json!({"argv_prefix": {"pointer": "/argv", "prefix": ["git", "push"]}}),
            json!({"argv_prefix": {"pointer": "/argv", "prefix": ["git-lfs"]}}),
            json!({"argv_prefix": {"pointer": "/argv", "prefix": ["/bin/git-lfs"]}}),
            json!({"one_of": {"pointer": "/mode", "values": ["rm", "RM "]}}),
            json!({"equals": {"pointer": "/mode", "value": "rm"}}),
            json!({"all": [{"command_prefix": {"pointer": "/command", "prefix": ["git"]}},
                           {"one_of": {"pointer": "/mode", "values": ["rm"]}}]}),
        ] {
            index_agrees(
                json!({}),
                json!({"id": "target", "tool": "t", "action": action, "reason": "r", "when": when}),
                &args,
            );
        }
    }
}
