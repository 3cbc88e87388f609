//! C2SP signed notes with Ed25519: keys, signing, cosigning and opening a note — what a
//! checkpoint is written in.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// The signature type of Ed25519 note signatures.
const ED25519: u8 = 0x01;

/// The most signatures a note may carry (the spec asks verifiers to accept at least 16).
const MAX_SIGNATURES: usize = 64;

/// What went wrong with a key, a note or a checkpoint. No message quotes a key's secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoteError {
    /// A key string that is not a C2SP note key of type Ed25519.
    #[error("not an Ed25519 note key: {0}")]
    BadKey(&'static str),
    /// A note that is not a signed note.
    #[error("not a signed note: {0}")]
    Malformed(&'static str),
    /// A signature from a known key that does not verify.
    #[error("the signature of key {0:?} does not verify")]
    BadSignature(String),
    /// No known key signed the note.
    #[error("no known key signed the note")]
    Unverified,
    /// A key that must sign (the log's, or a named witness's) did not.
    #[error("key {0:?} did not sign the note")]
    Unsigned(String),
    /// A checkpoint body that is not `origin`, size, base64 root hash.
    #[error("not a checkpoint: {0}")]
    BadCheckpoint(&'static str),
    /// The checkpoint is of another log.
    #[error("the checkpoint is of origin {found:?}, not {expected:?}")]
    WrongOrigin {
        /// The origin expected.
        expected: String,
        /// The origin in the checkpoint.
        found: String,
    },
    /// No randomness for a new key.
    #[error("no randomness for a new key")]
    NoRandomness,
}

fn key_id(name: &str, public: &[u8; 32]) -> u32 {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([0x0A, ED25519]);
    hasher.update(public);
    let digest = hasher.finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(char::is_whitespace)
}

/// `name`, the key id and the key bytes of `name+hexid+base64(0x01 || key)`, checked.
fn parse_key(text: &str) -> Result<(String, u32, [u8; 32]), NoteError> {
    let mut parts = text.splitn(3, '+');
    let (Some(name), Some(id), Some(encoded)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(NoteError::BadKey("expected name+hexid+base64"));
    };
    if !valid_name(name) {
        return Err(NoteError::BadKey(
            "a key name is not empty and holds no space or '+'",
        ));
    }
    if id.len() != 8 {
        return Err(NoteError::BadKey("the key id is 8 hex digits"));
    }
    let id =
        u32::from_str_radix(id, 16).map_err(|_| NoteError::BadKey("the key id is 8 hex digits"))?;
    let bytes = STANDARD
        .decode(encoded)
        .map_err(|_| NoteError::BadKey("the key is not base64"))?;
    let [ED25519, key @ ..] = bytes.as_slice() else {
        return Err(NoteError::BadKey("not an Ed25519 key (type 0x01)"));
    };
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| NoteError::BadKey("an Ed25519 key is 32 bytes"))?;
    Ok((name.to_owned(), id, key))
}

/// A key that signs notes (the log's, or a witness's).
pub struct NoteSigner {
    name: String,
    id: u32,
    key: SigningKey,
}

impl std::fmt::Debug for NoteSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("NoteSigner")
            .field("name", &self.name)
            .field("id", &format_args!("{:08x}", self.id))
            .finish_non_exhaustive()
    }
}

impl NoteSigner {
    /// The signer of a private key written `PRIVATE+KEY+name+hexid+base64(0x01 || seed)`.
    ///
    /// # Errors
    ///
    /// [`NoteError::BadKey`] when it is not one, or its id is not its name's and key's.
    pub fn from_key(text: &str) -> Result<Self, NoteError> {
        let rest = text
            .trim()
            .strip_prefix("PRIVATE+KEY+")
            .ok_or(NoteError::BadKey("a private key starts PRIVATE+KEY+"))?;
        let (name, id, seed) = parse_key(rest)?;
        let key = SigningKey::from_bytes(&seed);
        if key_id(&name, key.verifying_key().as_bytes()) != id {
            return Err(NoteError::BadKey(
                "the key id does not match the name and key",
            ));
        }
        Ok(Self { name, id, key })
    }

    /// A new key named `name` from the OS's randomness: the signer, and its verifier key to give
    /// to whoever checks the log. [`private_key`](Self::private_key) writes it for a key file.
    ///
    /// # Errors
    ///
    /// [`NoteError::BadKey`] for a name with a space or `+`; [`NoteError::NoRandomness`].
    pub fn generate(name: &str) -> Result<(Self, String), NoteError> {
        if !valid_name(name) {
            return Err(NoteError::BadKey(
                "a key name is not empty and holds no space or '+'",
            ));
        }
        let mut seed = [0_u8; 32];
        getrandom::fill(&mut seed).map_err(|_| NoteError::NoRandomness)?;
        let key = SigningKey::from_bytes(&seed);
        let id = key_id(name, key.verifying_key().as_bytes());
        let signer = Self {
            name: name.to_owned(),
            id,
            key,
        };
        let verifier = signer.verifier_key();
        Ok((signer, verifier))
    }

    /// The private key, written `PRIVATE+KEY+name+hexid+base64(0x01 || seed)`: keep it secret.
    pub fn private_key(&self) -> String {
        let mut bytes = vec![ED25519];
        bytes.extend_from_slice(&self.key.to_bytes());
        format!(
            "PRIVATE+KEY+{}+{:08x}+{}",
            self.name,
            self.id,
            STANDARD.encode(bytes)
        )
    }

    /// The verifier key, written `name+hexid+base64(0x01 || public key)`.
    pub fn verifier_key(&self) -> String {
        let mut bytes = vec![ED25519];
        bytes.extend_from_slice(self.key.verifying_key().as_bytes());
        format!("{}+{:08x}+{}", self.name, self.id, STANDARD.encode(bytes))
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn signature_line(&self, text: &str) -> String {
        let signature = self.key.sign(text.as_bytes());
        let mut bytes = self.id.to_be_bytes().to_vec();
        bytes.extend_from_slice(&signature.to_bytes());
        format!("— {} {}\n", self.name, STANDARD.encode(bytes))
    }
}

/// A key that checks notes.
#[derive(Debug, Clone)]
pub struct NoteVerifier {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl NoteVerifier {
    /// The verifier of a key written `name+hexid+base64(0x01 || public key)`.
    ///
    /// # Errors
    ///
    /// [`NoteError::BadKey`] when it is not one, or its id is not its name's and key's.
    pub fn from_key(text: &str) -> Result<Self, NoteError> {
        let (name, id, public) = parse_key(text.trim())?;
        if key_id(&name, &public) != id {
            return Err(NoteError::BadKey(
                "the key id does not match the name and key",
            ));
        }
        let key = VerifyingKey::from_bytes(&public)
            .map_err(|_| NoteError::BadKey("not an Ed25519 public key"))?;
        Ok(Self { name, id, key })
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// `text` (ending in a newline) signed by each of `signers`.
///
/// # Errors
///
/// [`NoteError::Malformed`] for a text that does not end in a newline or holds control
/// characters.
pub fn sign_note(text: &str, signers: &[&NoteSigner]) -> Result<String, NoteError> {
    check_text(text)?;
    let mut note = format!("{text}\n");
    for signer in signers {
        note.push_str(&signer.signature_line(text));
    }
    Ok(note)
}

/// `note` with `signer`'s signature added: a witness cosigning a checkpoint it checked.
///
/// # Errors
///
/// [`NoteError::Malformed`] for a note that does not parse.
pub fn cosign_note(note: &str, signer: &NoteSigner) -> Result<String, NoteError> {
    let (text, _) = split_note(note)?;
    Ok(format!("{note}{}", signer.signature_line(text)))
}

fn check_text(text: &str) -> Result<(), NoteError> {
    if !text.ends_with('\n') {
        return Err(NoteError::Malformed("the text does not end in a newline"));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(NoteError::Malformed("the text holds a control character"));
    }
    Ok(())
}

/// The text and the signature lines of a note.
fn split_note(note: &str) -> Result<(&str, Vec<&str>), NoteError> {
    if note.chars().any(|c| c.is_control() && c != '\n') {
        return Err(NoteError::Malformed("the note holds a control character"));
    }
    let Some(cut) = note.rfind("\n\n") else {
        return Err(NoteError::Malformed("no blank line before the signatures"));
    };
    let (text, signatures) = (&note[..=cut], &note[cut + 2..]);
    let Some(signatures) = signatures.strip_suffix('\n') else {
        return Err(NoteError::Malformed(
            "the last signature line does not end in a newline",
        ));
    };
    let lines: Vec<&str> = signatures.split('\n').collect();
    if lines.is_empty() || lines.len() > MAX_SIGNATURES {
        return Err(NoteError::Malformed("a note carries 1 to 64 signatures"));
    }
    Ok((text, lines))
}

/// What [`open_note`] found: the text, and the names of the known keys that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenedNote {
    /// The signed text, final newline included.
    pub text: String,
    /// The known keys whose signatures verified.
    pub signed_by: Vec<String>,
}

/// Opens a signed note with `verifiers`: the text, if at least one known key signed it and every
/// known key's signature verifies; signatures from unknown keys are ignored.
///
/// # Errors
///
/// [`NoteError::Malformed`], [`NoteError::BadSignature`] or [`NoteError::Unverified`].
pub fn open_note(note: &str, verifiers: &[NoteVerifier]) -> Result<OpenedNote, NoteError> {
    let (text, lines) = split_note(note)?;
    let mut signed_by = Vec::new();
    for line in lines {
        let Some(rest) = line.strip_prefix("— ") else {
            return Err(NoteError::Malformed(
                "a signature line starts with an em dash and a space",
            ));
        };
        let Some((name, encoded)) = rest.split_once(' ') else {
            return Err(NoteError::Malformed(
                "a signature line is name and signature",
            ));
        };
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| NoteError::Malformed("a signature is not base64"))?;
        let Some((id, signature)) = bytes.split_first_chunk::<4>() else {
            return Err(NoteError::Malformed(
                "a signature is shorter than its key id",
            ));
        };
        let id = u32::from_be_bytes(*id);
        let Some(verifier) = verifiers.iter().find(|v| v.name == name && v.id == id) else {
            continue;
        };
        let verified = Signature::from_slice(signature).is_ok_and(|signature| {
            verifier
                .key
                .verify_strict(text.as_bytes(), &signature)
                .is_ok()
        });
        if !verified {
            return Err(NoteError::BadSignature(name.to_owned()));
        }
        if !signed_by.iter().any(|known| known == name) {
            signed_by.push(name.to_owned());
        }
    }
    if signed_by.is_empty() {
        return Err(NoteError::Unverified);
    }
    Ok(OpenedNote {
        text: text.to_owned(),
        signed_by,
    })
}
