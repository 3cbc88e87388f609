//! The JSON Lines log as a tree: a kept tree head catches a log cut back or rewritten whole, and a
//! receipt proves one entry from the entry and a head alone.

use super::super::{TempFile, write_calls, write_some_events};
use toolgate::audit::{
    AuditExtendError, TreeHead, audit_receipt, audit_tree_head, verify_audit_extends,
};

#[test]
fn a_kept_tree_head_catches_a_log_cut_back_or_rewritten_whole() {
    let file = TempFile::new("tree-head");
    write_some_events(&file);
    let kept = audit_tree_head(&file.0).unwrap();
    assert_eq!(kept.size, 9);
    assert_eq!(kept.to_string().parse::<TreeHead>().unwrap(), kept);
    // The log grows: it still extends the head kept.
    write_some_events(&file);
    let now = verify_audit_extends(&file.0, &kept).unwrap();
    assert_eq!(now.size, 18);
    assert_eq!(verify_audit_extends(&file.0, &now).unwrap(), now);

    // Cut back to 6 entries: a valid chain, but shorter than the head.
    let lines = file.lines();
    file.write_lines(&lines[..6]);
    assert!(
        toolgate::audit::verify_audit_file(&file.0).is_ok(),
        "the chain alone cannot tell"
    );
    assert!(matches!(
        verify_audit_extends(&file.0, &kept),
        Err(AuditExtendError::CutOff {
            entries: 6,
            head: 9
        })
    ));

    // Rewritten from the start: another valid chain of 18 entries (other calls), same length.
    let forged = TempFile::new("tree-head-forged");
    write_calls(&forged, "x", 6);
    std::fs::copy(&forged.0, &file.0).unwrap();
    assert_eq!(
        toolgate::audit::verify_audit_file(&file.0).unwrap().entries,
        18
    );
    let error = verify_audit_extends(&file.0, &kept).unwrap_err();
    assert!(
        matches!(error, AuditExtendError::Rewritten { size: 9 }),
        "{error}"
    );
    assert!(error.to_string().contains("rewritten"));
}

#[test]
fn a_receipt_proves_one_entry_from_the_entry_and_a_head_alone() {
    let file = TempFile::new("receipt");
    write_calls(&file, "c", 5);
    let lines = file.lines();
    let (receipt, head) = audit_receipt(&file.0, 7).unwrap().unwrap();
    assert_eq!((receipt.index, receipt.size, head.size), (7, 15, 15));
    // What an auditor holds: the line, the receipt (as JSON) and the head (as text).
    let receipt: toolgate::audit::Receipt =
        serde_json::from_str(&serde_json::to_string(&receipt).unwrap()).unwrap();
    let head: TreeHead = head.to_string().parse().unwrap();
    assert!(receipt.verify(&lines[7], &head));
    assert!(!receipt.verify(&lines[8], &head), "another entry");
    assert!(
        !receipt.verify(&lines[7].replace("c2", "c9"), &head),
        "an edited entry"
    );
    let later = {
        write_calls(&file, "d", 1);
        audit_tree_head(&file.0).unwrap()
    };
    assert!(!receipt.verify(&lines[7], &later), "a head of another size");
    assert!(audit_receipt(&file.0, 18).unwrap().is_none());
}

/// A tree head has one spelling, as the log's entries and a checkpoint's size do (an independent
/// attack found `size +12`, `size 012`, upper-case hex and other white space read as the head).
#[test]
fn a_tree_head_is_read_in_its_one_spelling() {
    let root = format!("sha256:{}", "ab".repeat(32));
    let head: TreeHead = format!("size 12 root {root}").parse().unwrap();
    assert_eq!(head.size, 12);
    for kept in [
        format!("size 12 root {root}\n"),
        format!("size 12 root {root}\r\n"),
    ] {
        assert_eq!(kept.parse::<TreeHead>().unwrap(), head, "{kept:?}");
    }
    for spelled in [
        format!("size +12 root {root}"),
        format!("size 012 root {root}"),
        format!("size 12 root {}", root.to_uppercase()),
        format!("size 12 root sha256:{}", "AB".repeat(32)),
        format!("size  12 root {root}"),
        format!("size\t12 root {root}"),
        format!(" size 12 root {root}"),
        format!("size 12 root {root} "),
        format!("size 12\u{a0}root {root}"),
        format!("size 12 root {root}\n\n"),
    ] {
        assert!(spelled.parse::<TreeHead>().is_err(), "{spelled:?}");
    }
    assert_eq!(
        format!("size 0 root {root}")
            .parse::<TreeHead>()
            .unwrap()
            .size,
        0
    );
}
