//! Editing, deleting, reordering: the chain reports the first bad line and the file is not
//! appended to.

use super::*;

fn broken_at(file: &TempFile) -> (u64, AuditEntryProblem) {
    match verify_audit_file(&file.0) {
        Err(AuditVerifyError::Broken { line, problem }) => (line, problem),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_chain_verifies_and_continues_after_reopening() {
    let file = TempFile::new("reopen");
    write_some_events(&file);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 9);
    write_some_events(&file);
    let tip = verify_audit_file(&file.0).unwrap();
    assert_eq!(tip.entries, 18);
    assert_eq!(tip.bytes, file.bytes().len() as u64);
    assert_eq!(file.lines().len(), 18);
}

#[test]
fn an_edited_entry_is_reported() {
    let file = TempFile::new("edit");
    write_some_events(&file);
    let mut lines = file.lines();
    lines[4] = lines[4].replace("\"allow\"", "\"deny\"");
    file.write_lines(&lines);
    assert_eq!(broken_at(&file), (5, AuditEntryProblem::HashMismatch));
    let error = verify_audit_file(&file.0).unwrap_err();
    assert_eq!(error.line(), Some(5));
    assert!(error.to_string().contains("line 5"), "{error}");
    assert!(
        matches!(
            open_waiting(&file.0, false),
            Err(AuditOpenError::Verify(AuditVerifyError::Broken {
                line: 5,
                ..
            }))
        ),
        "a tampered log is not appended to"
    );
    assert!(
        matches!(
            open_waiting(&file.0, true),
            Err(AuditOpenError::Verify(AuditVerifyError::Broken {
                line: 5,
                ..
            }))
        ),
        "nor is it recovered"
    );
    assert_eq!(file.lines(), lines, "refusing changed nothing");
    assert!(file.side_files().is_empty());
}

#[test]
fn a_deleted_entry_is_reported() {
    let file = TempFile::new("delete");
    write_some_events(&file);
    let mut lines = file.lines();
    lines.remove(3);
    file.write_lines(&lines);
    assert_eq!(
        broken_at(&file),
        (
            4,
            AuditEntryProblem::Sequence {
                found: 4,
                expected: 3
            }
        )
    );
}

#[test]
fn reordered_entries_are_reported() {
    let file = TempFile::new("reorder");
    write_some_events(&file);
    let mut lines = file.lines();
    lines.swap(6, 7);
    file.write_lines(&lines);
    assert_eq!(broken_at(&file).0, 7);
}

#[test]
fn an_entry_moved_with_its_sequence_renumbered_is_unchained() {
    let file = TempFile::new("renumber");
    write_some_events(&file);
    let mut lines = file.lines();
    // Line 3 rewritten to claim seq 3 elsewhere cannot also name line 3's predecessor.
    lines.remove(1);
    lines[1] = lines[1].replacen("\"seq\":2", "\"seq\":1", 1);
    file.write_lines(&lines);
    let (line, problem) = broken_at(&file);
    assert_eq!(line, 2);
    assert_eq!(problem, AuditEntryProblem::Unchained);
}

#[test]
fn a_cut_line_followed_by_more_lines_is_tampering_not_a_torn_tail() {
    let file = TempFile::new("cut-middle");
    write_some_events(&file);
    let mut lines = file.lines();
    let cut = lines[4].len() / 2;
    lines[4].truncate(cut);
    file.write_lines(&lines);
    assert_eq!(broken_at(&file), (5, AuditEntryProblem::NotAnEntry));
}

#[test]
fn a_cut_last_line_that_ends_in_a_newline_is_tampering_not_a_torn_tail() {
    let file = TempFile::new("cut-last-newline");
    write_some_events(&file);
    let mut lines = file.lines();
    let cut = lines[8].len() / 2;
    lines[8].truncate(cut);
    file.write_lines(&lines);
    assert_eq!(broken_at(&file), (9, AuditEntryProblem::NotAnEntry));
    assert!(open_waiting(&file.0, true).is_err());
}

#[test]
fn an_unreadable_path_is_its_own_error() {
    let missing = std::env::temp_dir().join("toolgate-audit-no-such-dir/none.jsonl");
    assert!(matches!(
        verify_audit_file(&missing),
        Err(AuditVerifyError::Unreadable { .. })
    ));
    assert!(matches!(
        JsonlAuditSink::open(&missing),
        Err(AuditOpenError::Io { .. })
    ));
}

#[test]
fn records_from_many_threads_on_one_sink_form_one_chain() {
    let file = TempFile::new("threads-one-sink");
    let sink = Arc::new(open_waiting(&file.0, false).unwrap());
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let sink = Arc::clone(&sink);
            scope.spawn(move || write_calls_to(sink, &format!("t{thread}-"), 25));
        }
    });
    drop(sink);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 4 * 25 * 3);
}

#[test]
fn entries_recorded_without_waiting_are_in_the_file_when_the_call_returns() {
    // A denied call's entries are all recorded without waiting for a sync; they are written
    // (not held back in memory) before `handle` returns, so a crash of the process loses none.
    let file = TempFile::new("deferred-written");
    let sink = Arc::new(open_waiting(&file.0, false).unwrap());
    let controller = audited(&Arc::default(), Arc::clone(&sink) as Arc<dyn AuditSink>);
    for i in 0..3 {
        let outcome =
            controller.handle(ToolCall::new(format!("denied{i}"), "not_a_tool", json!({})));
        assert!(matches!(outcome, Outcome::Completed(ref r) if r.is_error));
        let lines = file.lines();
        assert!(
            lines.last().unwrap().contains(&format!("\"denied{i}\"")),
            "{lines:?}"
        );
        assert_eq!(
            verify_audit_file(&file.0).unwrap().entries,
            lines.len() as u64
        );
    }
}

#[test]
fn writes_combined_across_threads_keep_every_entry_and_every_salt() {
    // Eight threads: each entry joins the chain under a short lock and one thread writes every
    // waiting line at once. Afterwards every entry is there once, in one chain, and every
    // commitment (every ninth checked: each disclosure reads both files) discloses against the
    // arguments of its own call.
    let file = TempFile::new("combined-writes");
    let sink = Arc::new(open_waiting(&file.0, false).unwrap());
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let sink = Arc::clone(&sink);
            scope.spawn(move || write_calls_to(sink, &format!("t{thread}-"), 20));
        }
    });
    drop(sink);
    assert_eq!(verify_audit_file(&file.0).unwrap().entries, 8 * 20 * 3);
    let mut ids = std::collections::HashMap::<String, usize>::new();
    for (index, line) in file.lines().iter().enumerate() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let event = &entry["event"];
        let id = event["call_id"].as_str().unwrap().to_owned();
        *ids.entry(id.clone()).or_default() += 1;
        if index % 9 == 0 && event.get("argument_commitment").is_some() {
            let i: u64 = id.rsplit('-').next().unwrap().parse().unwrap();
            let (own, other) = (json!({"a": i, "b": 1}), json!({"a": i + 1, "b": 1}));
            assert_eq!(
                disclose_audit_arguments(&file.0, index as u64, &own).unwrap(),
                Disclosure::Matches,
                "{line}"
            );
            assert_eq!(
                disclose_audit_arguments(&file.0, index as u64, &other).unwrap(),
                Disclosure::DoesNotMatch
            );
        }
    }
    assert_eq!(ids.len(), 8 * 20);
    assert!(ids.values().all(|entries| *entries == 3), "{ids:?}");
}
