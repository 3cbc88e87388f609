//! Signed checkpoints of the audit log (feature `checkpoints`): the tree head in the C2SP
//! `tlog-checkpoint` format, signed as a C2SP signed note with Ed25519 — the format Go's
//! `sumdb/note`, Trillian's successors and Sigstore's Rekor v2 read — so that anyone holding the
//! log's verifier key can check a later log against a checkpoint, and witnesses can cosign.
//!
//! # Guarantees
//!
//! - Notes, keys and signatures are C2SP's: key id = `SHA-256(name || 0x0A || 0x01 || public
//!   key)[:4]`, a signature line is `— name base64(key id || Ed25519 signature)`, keys are written
//!   `PRIVATE+KEY+name+hexid+base64(0x01 || seed)` and `name+hexid+base64(0x01 || public key)`.
//!   Checked against the published `sumdb/note` vector (`tests/audit/file/merkle.rs`).
//! - [`open_note`] follows the spec: signatures from unknown keys are ignored, a known key's
//!   signature that does not verify rejects the note, and a note no known key signed is rejected.
//! - [`verify_audit_checkpoint`]: the log verifies, the checkpoint is signed by a given key and
//!   names the expected origin, and the log extends its tree head — so entries cut off or
//!   rewritten after the checkpoint was taken are found. Who holds the signing key can sign any
//!   head: a witness's cosignature (another key's signature on the same checkpoint) is what shows
//!   the head was not forked for one reader.
//!
//! ```
//! use toolgate::audit::checkpoint::{Checkpoint, NoteSigner, NoteVerifier, open_note, sign_note};
//!
//! let (signer, verifier_key) = NoteSigner::generate("audit.example.com/gateway")?;
//! let checkpoint = Checkpoint { origin: "audit.example.com/gateway".into(), size: 0, root: [0; 32] };
//! let note = sign_note(&checkpoint.body(), &[&signer])?;
//! let opened = open_note(&note, &[NoteVerifier::from_key(&verifier_key)?])?;
//! assert_eq!(Checkpoint::parse(&opened.text)?, checkpoint);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod note;

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

pub use note::{
    NoteError, NoteSigner, NoteVerifier, OpenedNote, cosign_note, open_note, sign_note,
};

use super::merkle::Hash;
use super::{AuditExtendError, TreeHead, audit_tree_head, verify_audit_extends};

/// A C2SP `tlog-checkpoint`: the log's origin, its size and its root hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Which log: a name unique to it (a schema-less URL, say).
    pub origin: String,
    /// How many entries.
    pub size: u64,
    /// The tree hash of those entries.
    pub root: Hash,
}

impl Checkpoint {
    /// The checkpoint's text: origin, size and base64 root hash, a line each.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        )
    }

    /// The checkpoint in a note's text (extension lines after the third are allowed and kept
    /// out).
    ///
    /// # Errors
    ///
    /// [`NoteError::BadCheckpoint`].
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let mut lines = text.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(NoteError::BadCheckpoint(
                "expected origin, size and root hash lines",
            ));
        };
        if origin.is_empty() {
            return Err(NoteError::BadCheckpoint("the origin is empty"));
        }
        // Digits only: no sign, space or other numeral (C2SP and the Go parser refuse `+12`).
        if size.is_empty()
            || !size.bytes().all(|byte| byte.is_ascii_digit())
            || (size.len() > 1 && size.starts_with('0'))
        {
            return Err(NoteError::BadCheckpoint("the size is a decimal number"));
        }
        let size = size
            .parse()
            .map_err(|_| NoteError::BadCheckpoint("the size is a decimal number"))?;
        let root = STANDARD
            .decode(root)
            .ok()
            .and_then(|bytes| <Hash>::try_from(bytes.as_slice()).ok())
            .ok_or(NoteError::BadCheckpoint("the root is 32 bytes of base64"))?;
        Ok(Self {
            origin: origin.to_owned(),
            size,
            root,
        })
    }

    /// The tree head it names.
    pub fn tree_head(&self) -> TreeHead {
        TreeHead {
            size: self.size,
            root: self.root,
        }
    }
}

/// The log's checkpoint now, signed by `signer` as a note.
///
/// # Errors
///
/// As [`audit_tree_head`], as a message.
pub fn checkpoint_audit_file(
    path: impl AsRef<Path>,
    origin: &str,
    signer: &NoteSigner,
) -> Result<String, String> {
    let head = audit_tree_head(path).map_err(|error| error.to_string())?;
    let checkpoint = Checkpoint {
        origin: origin.to_owned(),
        size: head.size,
        root: head.root,
    };
    sign_note(&checkpoint.body(), &[signer]).map_err(|error| error.to_string())
}

/// Why a log does not verify against a signed checkpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The note or checkpoint does not verify.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// The log does not extend the checkpoint's tree head.
    #[error(transparent)]
    Log(#[from] AuditExtendError),
}

/// Verifies the log at `path` against a signed checkpoint taken earlier: the log's key
/// (`verifiers[0]`) signed the note, and so did every other key given (witnesses whose
/// cosignatures are required) — a note signed by only some of them is refused —; the checkpoint
/// names `origin`; the log extends its tree head. Returns the checkpoint (every key given signed
/// it).
///
/// # Errors
///
/// [`CheckpointError`]: [`NoteError::Unsigned`] naming a key that did not sign, and the errors of
/// [`open_note`].
pub fn verify_audit_checkpoint(
    path: impl AsRef<Path>,
    note: &str,
    verifiers: &[NoteVerifier],
    origin: &str,
) -> Result<Checkpoint, CheckpointError> {
    if verifiers.iter().enumerate().any(|(index, verifier)| {
        verifiers[..index]
            .iter()
            .any(|other| other.name() == verifier.name())
    }) {
        // One signature would then stand for two keys.
        return Err(NoteError::BadKey("two of the keys given share a name").into());
    }
    let opened = open_note(note, verifiers)?;
    if let Some(missing) = verifiers
        .iter()
        .find(|verifier| !opened.signed_by.iter().any(|name| name == verifier.name()))
    {
        return Err(NoteError::Unsigned(missing.name().to_owned()).into());
    }
    let checkpoint = Checkpoint::parse(&opened.text)?;
    if checkpoint.origin != origin {
        return Err(NoteError::WrongOrigin {
            expected: origin.to_owned(),
            found: checkpoint.origin,
        }
        .into());
    }
    verify_audit_extends(path, &checkpoint.tree_head())?;
    Ok(checkpoint)
}
