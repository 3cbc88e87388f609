//! Salted commitments in the file log: salts kept apart, arguments disclosed against an entry,
//! a forgotten salt confirming nothing while every proof still holds.

use super::*;

/// `forget_audit_salt` once no sink holds the log: a child process another test spawns shares
/// the lock of a sink open at that moment until it execs (see `open_waiting`).
fn forget_waiting(path: &std::path::Path, index: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        match forget_audit_salt(path, index) {
            Err(AuditDiscloseError::Open(AuditOpenError::Locked { .. }))
                if std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            other => return other.unwrap(),
        }
    }
}

#[test]
fn given_arguments_are_disclosed_against_an_entry_and_a_forgotten_salt_confirms_nothing() {
    let file = TempFile::new("disclose");
    write_some_events(&file); // calls c0..c2 with {"a": i, "b": 1}, three entries each
    let head = audit_tree_head(&file.0).unwrap();
    // Entry 3 is c1's call received.
    assert_eq!(
        disclose_audit_arguments(&file.0, 3, &json!({"b": 1, "a": 1})).unwrap(),
        Disclosure::Matches
    );
    assert_eq!(
        disclose_audit_arguments(&file.0, 3, &json!({"a": 2, "b": 1})).unwrap(),
        Disclosure::DoesNotMatch
    );
    // No salt is in the log, and no commitment is the bare digest.
    let log = String::from_utf8(file.bytes()).unwrap();
    let salts = std::fs::read_to_string(file.salts()).unwrap();
    assert_eq!(salts.lines().count(), 9);
    for line in salts.lines() {
        let salt: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(!log.contains(salt["salt"].as_str().unwrap()), "{line}");
    }
    assert!(!log.contains("argument_digest"));

    assert!(forget_waiting(&file.0, 3));
    assert_eq!(
        disclose_audit_arguments(&file.0, 3, &json!({"a": 1, "b": 1})).unwrap(),
        Disclosure::SaltErased
    );
    assert!(!forget_waiting(&file.0, 3), "already gone");
    // Nothing else changed: the same tree, every other entry still discloses.
    assert_eq!(audit_tree_head(&file.0).unwrap(), head);
    assert_eq!(verify_audit_extends(&file.0, &head).unwrap(), head);
    let (receipt, _) = audit_receipt(&file.0, 3).unwrap().unwrap();
    assert!(receipt.verify(&file.lines()[3], &head));
    assert_eq!(
        disclose_audit_arguments(&file.0, 4, &json!({"a": 1, "b": 1})).unwrap(),
        Disclosure::Matches
    );
    assert_eq!(
        std::fs::read_to_string(file.salts())
            .unwrap()
            .lines()
            .count(),
        8
    );
}

#[test]
fn a_salt_is_forgotten_through_the_sink_while_it_writes_on() {
    let file = TempFile::new("forget-live");
    let sink = Arc::new(open_waiting(&file.0, false).unwrap());
    write_calls_to(Arc::clone(&sink), "c", 2);
    // The free function refuses while a sink holds the log (its rewrite would race the sink's).
    assert!(matches!(
        forget_audit_salt(&file.0, 0),
        Err(AuditDiscloseError::Open(AuditOpenError::Locked { .. }))
    ));
    assert!(sink.forget_salt(0).unwrap());
    write_calls_to(Arc::clone(&sink), "d", 1);
    drop(sink);
    assert_eq!(
        disclose_audit_arguments(&file.0, 0, &json!({"a": 0, "b": 1})).unwrap(),
        Disclosure::SaltErased
    );
    // The entries written after the rewrite have their salts.
    assert_eq!(
        disclose_audit_arguments(&file.0, 6, &json!({"a": 0, "b": 1})).unwrap(),
        Disclosure::Matches
    );
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 9);
}

#[test]
fn nothing_is_disclosed_past_the_end_or_against_a_broken_log() {
    let file = TempFile::new("disclose-bad");
    write_some_events(&file);
    assert!(matches!(
        disclose_audit_arguments(&file.0, 9, &json!({})),
        Err(AuditDiscloseError::NoEntry {
            index: 9,
            entries: 9
        })
    ));
    let mut lines = file.lines();
    lines[4] = lines[4].replace("\"allow\"", "\"deny\"");
    file.write_lines(&lines);
    assert!(matches!(
        disclose_audit_arguments(&file.0, 0, &json!({"a": 0, "b": 1})),
        Err(AuditDiscloseError::Verify(AuditVerifyError::Broken { .. }))
    ));
}

#[test]
fn an_entry_from_before_commitments_discloses_against_its_bare_digest() {
    // Logs written before salted commitments carry `argument_digest`; they still verify and can
    // be checked against given arguments (by anyone: that is why commitments replaced them).
    let file = TempFile::new("disclose-old");
    let sink = open_waiting(&file.0, false).unwrap();
    let old: AuditEvent = serde_json::from_value(json!({
        "time_ms": 1, "kind": "call_received", "call_id": "c", "tool": "t",
        "argument_digest": "sha256:5041bf1f713df204784353e82f6a4a535931cb64f1f4b4a5aeaffcb720918b22"
    }))
    .unwrap();
    sink.record(&old).unwrap();
    drop(sink);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 1);
    // The digest of {"x":1}'s canonical text (sha256sum of the seven bytes).
    assert_eq!(
        disclose_audit_arguments(&file.0, 0, &json!({"x": 1.0})).unwrap(),
        Disclosure::Matches
    );
    assert_eq!(
        disclose_audit_arguments(&file.0, 0, &json!({"x": 2})).unwrap(),
        Disclosure::DoesNotMatch
    );
}

#[test]
fn a_salt_line_torn_by_a_crash_does_not_swallow_the_next_one() {
    let file = TempFile::new("torn-salt");
    write_calls(&file, "c", 1);
    // A crash mid-write left a salt line without its newline.
    let mut salts = std::fs::read(file.salts()).unwrap();
    salts.extend_from_slice(b"{\"index\":3,\"salt\":\"00");
    std::fs::write(file.salts(), salts).unwrap();
    write_calls(&file, "d", 1);
    assert_eq!(
        disclose_audit_arguments(&file.0, 3, &json!({"a": 0, "b": 1})).unwrap(),
        Disclosure::Matches
    );
}

#[test]
fn an_event_read_back_from_the_log_equals_the_event_recorded() {
    // The salt stays in memory (and in the salts file), never in the log; it is not part of what
    // an event is, so reading the log back gives the events that were recorded.
    let sink = Arc::new(MemoryAuditSink::new());
    let _ = audited(&Arc::default(), sink.clone()).handle(ToolCall::new(
        "c",
        "calculator",
        json!({"a": 1, "b": 2}),
    ));
    let recorded = sink.events();
    assert!(recorded.iter().all(|event| event.salt().is_some()));
    let read_back: Vec<AuditEvent> = recorded
        .iter()
        .map(|event| serde_json::from_str(&serde_json::to_string(event).unwrap()).unwrap())
        .collect();
    assert!(read_back.iter().all(|event| event.salt().is_none()));
    assert_eq!(read_back, recorded);
}

/// A log is one file whatever name reaches it: through a symbolic link (to the log, or to its
/// directory) `disclose` and `forget` read and erase the salts beside the real file; through a
/// second hard link, or where no salts file is, `forget` refuses instead of saying "no salt".
#[test]
fn erasure_through_another_name_erases_the_salt_or_refuses() {
    let file = TempFile::new("forget-names");
    write_some_events(&file);
    let dir = file.0.parent().unwrap();
    let stem = file.0.file_name().unwrap().to_str().unwrap().to_owned();
    let link = dir.join(format!("{stem}.link"));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&file.0, &link).unwrap();
    let dir_link = dir.join(format!("{stem}.dirlink"));
    let _ = std::fs::remove_file(&dir_link);
    std::os::unix::fs::symlink(dir, &dir_link).unwrap();
    let through_dir = dir_link.join(&stem);
    // Entries 3 and 4 are c1's; 6 is c2's.
    for (name, index) in [(&link, 3), (&through_dir, 4)] {
        assert_eq!(
            disclose_audit_arguments(name, index, &json!({"a": 1, "b": 1})).unwrap(),
            Disclosure::Matches,
            "{}",
            name.display()
        );
        assert!(forget_waiting(name, index), "{}", name.display());
        // Erased for every name, the real one too.
        for reader in [&file.0, &link, &through_dir] {
            assert_eq!(
                disclose_audit_arguments(reader, index, &json!({"a": 1, "b": 1})).unwrap(),
                Disclosure::SaltErased
            );
        }
    }
    // A relative name from another directory reaches the same file.
    let relative = std::path::PathBuf::from(format!("{}/{stem}", dir.display()));
    assert!(forget_waiting(&relative, 6));
    // A second hard link: refused, nothing erased.
    let hard = dir.join(format!("{stem}.hard"));
    let _ = std::fs::remove_file(&hard);
    std::fs::hard_link(&file.0, &hard).unwrap();
    let refused = forget_audit_salt(&hard, 7).unwrap_err();
    assert!(refused.to_string().contains("hard links"), "{refused}");
    assert!(
        forget_audit_salt(&file.0, 7)
            .unwrap_err()
            .to_string()
            .contains("hard links")
    );
    std::fs::remove_file(&hard).unwrap();
    assert_eq!(
        disclose_audit_arguments(&file.0, 7, &json!({"a": 2, "b": 1})).unwrap(),
        Disclosure::Matches
    );
    // No salts file: an error naming it, not "no salt to erase".
    std::fs::rename(file.salts(), dir.join(format!("{stem}.moved"))).unwrap();
    let missing = forget_audit_salt(&file.0, 7).unwrap_err();
    assert!(missing.to_string().contains("no salts file"), "{missing}");
    for name in [link, dir_link] {
        std::fs::remove_file(name).unwrap();
    }
}
