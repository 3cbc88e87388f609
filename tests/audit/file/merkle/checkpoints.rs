//! Signed checkpoints: the published signed-note vector byte for byte, a checkpoint that catches a
//! log cut back and names its origin, and the log's key and every named witness signing.

use super::super::{TempFile, write_calls};
use toolgate::audit::AuditExtendError;
use toolgate::audit::checkpoint::{
    Checkpoint, CheckpointError, NoteError, NoteSigner, NoteVerifier, checkpoint_audit_file,
    cosign_note, open_note, sign_note, verify_audit_checkpoint,
};

// The published vector of golang.org/x/mod/sumdb/note (note_test.go), an independent
// implementation of the C2SP signed-note format.
const PETER_PRIVATE: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
const SIGNED: &str = "If you think cryptography is the answer to your problem,\n\
    then you don't know what your problem is.\n\n\
    — PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

#[test]
fn the_published_note_is_signed_and_opened_byte_for_byte() {
    let signer = NoteSigner::from_key(PETER_PRIVATE).unwrap();
    assert_eq!(signer.verifier_key(), PETER);
    assert_eq!(signer.private_key(), PETER_PRIVATE);
    assert!(
        !format!("{signer:?}").contains("AYEK"),
        "no secret in Debug"
    );
    assert_eq!(sign_note(TEXT, &[&signer]).unwrap(), SIGNED);
    let peter = NoteVerifier::from_key(PETER).unwrap();
    let opened = open_note(SIGNED, std::slice::from_ref(&peter)).unwrap();
    assert_eq!(
        (opened.text.as_str(), opened.signed_by.as_slice()),
        (TEXT, &["PeterNeumann".to_owned()][..])
    );
    // An edited text, a flipped signature byte, an unknown key only, a mangled key.
    let edited = SIGNED.replace("answer", "Answer");
    assert!(matches!(
        open_note(&edited, std::slice::from_ref(&peter)),
        Err(NoteError::BadSignature(_))
    ));
    let flipped = SIGNED.replace("x08go", "x08gp");
    assert!(open_note(&flipped, std::slice::from_ref(&peter)).is_err());
    let (stranger, stranger_key) = NoteSigner::generate("stranger.example").unwrap();
    let theirs = sign_note(TEXT, &[&stranger]).unwrap();
    assert!(matches!(
        open_note(&theirs, std::slice::from_ref(&peter)),
        Err(NoteError::Unverified)
    ));
    // A signature of an unknown key beside a known one is ignored.
    let both = cosign_note(SIGNED, &stranger).unwrap();
    assert_eq!(
        open_note(&both, std::slice::from_ref(&peter))
            .unwrap()
            .signed_by,
        ["PeterNeumann"]
    );
    let witnessed = open_note(
        &both,
        &[peter, NoteVerifier::from_key(&stranger_key).unwrap()],
    )
    .unwrap();
    assert_eq!(witnessed.signed_by, ["PeterNeumann", "stranger.example"]);
    for bad in [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3+AhpcpQcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3",
    ] {
        assert!(NoteVerifier::from_key(bad).is_err(), "{bad}");
    }
    assert!(sign_note("no newline", &[&stranger]).is_err());
}

#[test]
fn a_signed_checkpoint_catches_a_log_cut_back_and_names_its_origin() {
    let file = TempFile::new("checkpoint");
    write_calls(&file, "c", 3);
    let (signer, verifier) = NoteSigner::generate("audit.example/gw").unwrap();
    let verifiers = [NoteVerifier::from_key(&verifier).unwrap()];
    let note = checkpoint_audit_file(&file.0, "audit.example/gw", &signer).unwrap();
    let checkpoint = Checkpoint::parse(&open_note(&note, &verifiers).unwrap().text).unwrap();
    assert_eq!(checkpoint.size, 9);
    assert_eq!(Checkpoint::parse(&checkpoint.body()).unwrap(), checkpoint);
    write_calls(&file, "d", 1);
    assert_eq!(
        verify_audit_checkpoint(&file.0, &note, &verifiers, "audit.example/gw").unwrap(),
        checkpoint
    );
    assert!(matches!(
        verify_audit_checkpoint(&file.0, &note, &verifiers, "other.example/log"),
        Err(CheckpointError::Note(NoteError::WrongOrigin { .. }))
    ));
    let lines = file.lines();
    file.write_lines(&lines[..8]);
    assert!(matches!(
        verify_audit_checkpoint(&file.0, &note, &verifiers, "audit.example/gw"),
        Err(CheckpointError::Log(AuditExtendError::CutOff {
            entries: 8,
            head: 9
        }))
    ));
    // A checkpoint body that is not one; the size in digits only (C2SP, the Go parser).
    let root = checkpoint.body().lines().nth(2).unwrap().to_owned();
    for size in [
        "+12", " 12", "12 ", "-0", "0x1", "1_0", "١٢", "１２", "09", "",
    ] {
        let text = format!("o\n{size}\n{root}\n");
        assert!(Checkpoint::parse(&text).is_err(), "{size:?}");
    }
    assert_eq!(
        Checkpoint::parse(&format!("o\n12\n{root}\n")).unwrap().size,
        12
    );
    for text in ["o\n", "o\n1\nnot-base64\n", "\n1\nAAAA\n"] {
        assert!(Checkpoint::parse(text).is_err(), "{text:?}");
    }
}

/// The log's key must sign, and every witness named must cosign: a note signed by any one of
/// the keys given is not enough.
#[test]
fn the_logs_key_and_every_named_witness_must_sign_a_checkpoint() {
    let file = TempFile::new("checkpoint-witnesses");
    write_calls(&file, "c", 2);
    let origin = "audit.example/gw";
    let (log, log_key) = NoteSigner::generate(origin).unwrap();
    let (witness, witness_key) = NoteSigner::generate("witness.example").unwrap();
    let (other, other_key) = NoteSigner::generate("other-witness.example").unwrap();
    let key = |text: &str| NoteVerifier::from_key(text).unwrap();
    let by_log = checkpoint_audit_file(&file.0, origin, &log).unwrap();
    let cosigned = cosign_note(&by_log, &witness).unwrap();
    let body = by_log.split("\n\n").next().unwrap().to_owned() + "\n";
    let by_witness_only = sign_note(&body, &[&witness]).unwrap();
    let by_other_pair = sign_note(&body, &[&witness, &other]).unwrap();
    let unsigned = |result: Result<Checkpoint, CheckpointError>| match result {
        Err(CheckpointError::Note(NoteError::Unsigned(name))) => name,
        other => panic!("expected a missing signer, got {other:?}"),
    };
    assert!(verify_audit_checkpoint(&file.0, &by_log, &[key(&log_key)], origin).is_ok());
    assert!(
        verify_audit_checkpoint(
            &file.0,
            &cosigned,
            &[key(&log_key), key(&witness_key)],
            origin
        )
        .is_ok()
    );
    // The witness never cosigned.
    assert_eq!(
        unsigned(verify_audit_checkpoint(
            &file.0,
            &by_log,
            &[key(&log_key), key(&witness_key)],
            origin
        )),
        "witness.example"
    );
    // The log's own key never signed, though the witnesses did.
    assert_eq!(
        unsigned(verify_audit_checkpoint(
            &file.0,
            &by_witness_only,
            &[key(&log_key), key(&witness_key)],
            origin
        )),
        origin
    );
    assert_eq!(
        unsigned(verify_audit_checkpoint(
            &file.0,
            &by_other_pair,
            &[key(&log_key), key(&witness_key), key(&other_key)],
            origin
        )),
        origin
    );
    // Two keys of one name: one signature would stand for both.
    let (twin, twin_key) = NoteSigner::generate(origin).unwrap();
    let both = cosign_note(&by_log, &twin).unwrap();
    assert!(matches!(
        verify_audit_checkpoint(&file.0, &both, &[key(&log_key), key(&twin_key)], origin),
        Err(CheckpointError::Note(NoteError::BadKey(_)))
    ));
}
