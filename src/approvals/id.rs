//! Approval ids: 128 bits of OS randomness each (G10).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ApprovalError;

/// An approval's id: 128 bits from the operating system's randomness, shown as 32 hex digits.
///
/// # Guarantees
///
/// Ids are drawn from the OS generator, never from a counter or the clock, so an id cannot be
/// guessed or forged from the outside (G10).
///
/// # Examples
///
/// ```
/// use toolgate::approvals::ApprovalId;
///
/// let id: ApprovalId = "0123456789abcdef0123456789abcdef".parse()?;
/// assert_eq!(id.to_string(), "0123456789abcdef0123456789abcdef");
/// assert!("not-an-id".parse::<ApprovalId>().is_err());
/// # Ok::<(), toolgate::approvals::ApprovalIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApprovalId(
    // Invariant: 16 bytes from the OS generator, or parsed from an id it made.
    pub(super) [u8; 16],
);

impl ApprovalId {
    /// A fresh id from the OS's randomness.
    ///
    /// # Errors
    ///
    /// [`ApprovalError::RandomnessUnavailable`] if the OS generator fails; no id is made up then.
    pub fn random() -> Result<Self, ApprovalError> {
        crate::random::bytes16()
            .map(Self)
            .map_err(|_| ApprovalError::RandomnessUnavailable)
    }
}

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApprovalId({self})")
    }
}

/// Text that is not an approval id (32 lowercase or uppercase hex digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an approval id is 32 hex digits")]
pub struct ApprovalIdError;

impl FromStr for ApprovalId {
    type Err = ApprovalIdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(ApprovalIdError);
        }
        let mut bytes = [0_u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| ApprovalIdError)?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| ApprovalIdError)?;
        }
        Ok(Self(bytes))
    }
}

impl Serialize for ApprovalId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ApprovalId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
