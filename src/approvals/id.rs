//! Approval ids: 128 bits of OS randomness each (G10).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::ApprovalError;

/// How many ids one call to the OS generator fills.
const IDS_PER_BATCH: usize = 32;

thread_local! {
    /// This thread's batch of OS randomness and the index of the next id in it; every id before
    /// that index has been handed out and wiped.
    static BATCH: std::cell::RefCell<([u8; 16 * IDS_PER_BATCH], usize)> =
        const { std::cell::RefCell::new(([0; 16 * IDS_PER_BATCH], IDS_PER_BATCH)) };
}

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
/// use toolgate::ApprovalId;
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
        // One `getrandom` call per id cost about 570 ns here, a quarter of an ask → approve round
        // trip, so the bytes are fetched from the OS a batch at a time. Every byte still comes
        // from the OS generator and is handed out once. (A process that forks without exec
        // copies the unused batch into the child: use approvals in only one of them.)
        let from_batch = BATCH.try_with(|batch| {
            let (bytes, next) = &mut *batch.borrow_mut();
            if *next == IDS_PER_BATCH {
                getrandom::fill(bytes).map_err(|_| ApprovalError::RandomnessUnavailable)?;
                *next = 0;
            }
            let mut id = [0_u8; 16];
            id.copy_from_slice(&bytes[*next * 16..(*next + 1) * 16]);
            // Wipe what was handed out, so the buffer never holds an id in use.
            bytes[*next * 16..(*next + 1) * 16].fill(0);
            *next += 1;
            Ok(Self(id))
        });
        match from_batch {
            Ok(id) => id,
            // The thread is being torn down: ask the OS directly.
            Err(_) => {
                let mut bytes = [0_u8; 16];
                getrandom::fill(&mut bytes).map_err(|_| ApprovalError::RandomnessUnavailable)?;
                Ok(Self(bytes))
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handed_out_ids_are_wiped_from_the_batch_and_never_repeat() {
        let mut seen = std::collections::HashSet::new();
        // Past two refills of the batch.
        for _ in 0..(2 * IDS_PER_BATCH + 5) {
            let id = ApprovalId::random().expect("OS randomness");
            assert!(seen.insert(id), "an id was handed out twice");
            BATCH.with(|batch| {
                let (bytes, next) = &*batch.borrow();
                assert!(
                    bytes[..next * 16].iter().all(|byte| *byte == 0),
                    "an id handed out is still in the batch"
                );
                assert_eq!(bytes[(next - 1) * 16..next * 16], [0; 16]);
            });
        }
    }
}
