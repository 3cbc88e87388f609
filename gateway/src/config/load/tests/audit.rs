//! `[audit]`: signed checkpoints need a key, an origin and a JSON Lines log, which reserves zeros
//! ahead only when asked and within bounds.

use super::*;

#[test]
fn checkpoints_need_a_key_an_origin_and_a_jsonl_log() {
    let config = parse(
        Path::new("/etc/gw/gateway.toml"),
        &format!("{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\n"),
    )
    .expect("loads");
    let checkpoints = config.checkpoints.unwrap();
    assert_eq!(checkpoints.key_file, Path::new("/etc/gw/k"));
    assert_eq!(checkpoints.file, Path::new("/etc/gw/a.jsonl.checkpoint"));
    assert_eq!(checkpoints.every.as_secs(), 300);
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\ncheckpoint_key_file = \"k\"\n"
    ));
    assert!(
        found[0].contains("audit.checkpoint_key_file: signed checkpoints need both"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\npostgres_url_env = \"P\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\n"
    ));
    assert!(found[0].contains("set `audit.jsonl`"), "{found:?}");
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\ncheckpoint_every_s = 0\n"
    ));
    assert!(found[0].contains("audit.checkpoint_every_s"), "{found:?}");
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a\"\ncheckpoint_key_file = \"k\"\ncheckpoint_origin = \"o\"\ncheckpoint_webhook_url = \"http://example.com/x\"\n"
    ));
    assert!(
        found[0].contains("audit.checkpoint_webhook_url: must be https"),
        "{found:?}"
    );
}

#[test]
fn a_jsonl_log_reserves_zeros_ahead_only_when_asked_and_within_bounds() {
    let load = |extra: &str| {
        parse(
            Path::new("/etc/gw/gateway.toml"),
            &format!("{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\n{extra}"),
        )
    };
    assert_eq!(load("").expect("loads").audit_jsonl_reserve, 0);
    let config = load("jsonl_reserve_mib = 16\n").expect("loads");
    assert_eq!(config.audit_jsonl_reserve, 16 << 20);
    assert_eq!(
        load("jsonl_reserve_mib = 1024\n")
            .expect("loads")
            .audit_jsonl_reserve,
        1 << 30
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\njsonl_reserve_mib = 1025\n"
    ));
    assert!(
        found[0].contains("audit.jsonl_reserve_mib: is 1025: at most 1024"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\npostgres_url_env = \"P\"\njsonl_reserve_mib = 16\n"
    ));
    assert!(
        found[0].contains("audit.jsonl_reserve_mib: reserves space in a JSON Lines log"),
        "{found:?}"
    );
    let found = problems(&format!(
        "{MINIMAL}\n[audit]\njsonl = \"a.jsonl\"\njsonl_reserve_mib = -1\n"
    ));
    assert!(found[0].contains("jsonl_reserve_mib"), "{found:?}");
}
