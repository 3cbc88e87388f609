//! Bytes from the operating system's randomness, fetched a batch at a time: approval ids and the
//! audit log's salts.

/// How many 16-byte values one call to the OS generator fills.
const PER_BATCH: usize = 32;

thread_local! {
    /// This thread's batch of OS randomness and the index of the next value in it; every value
    /// before that index has been handed out and wiped.
    static BATCH: std::cell::RefCell<([u8; 16 * PER_BATCH], usize)> =
        const { std::cell::RefCell::new(([0; 16 * PER_BATCH], PER_BATCH)) };
}

/// 16 bytes from the OS generator, each handed out once.
///
/// # Errors
///
/// The generator's error; nothing is made up then.
pub(crate) fn bytes16() -> Result<[u8; 16], getrandom::Error> {
    // Fast path: OS bytes fetched a batch at a time (a call per value cost ~570 ns).
    // Every byte still comes from the OS generator and is handed out once. (A process that forks
    // without exec copies the unused batch into the child: use approvals and audit sinks in only
    // one of them.)
    let from_batch = BATCH.try_with(|batch| {
        let (bytes, next) = &mut *batch.borrow_mut();
        if *next == PER_BATCH {
            getrandom::fill(bytes)?;
            *next = 0;
        }
        let mut value = [0_u8; 16];
        value.copy_from_slice(&bytes[*next * 16..(*next + 1) * 16]);
        // Wipe what was handed out, so the buffer never holds a value in use.
        bytes[*next * 16..(*next + 1) * 16].fill(0);
        *next += 1;
        Ok(value)
    });
    match from_batch {
        Ok(value) => value,
        // The thread is being torn down: ask the OS directly.
        Err(_) => {
            let mut bytes = [0_u8; 16];
            getrandom::fill(&mut bytes)?;
            Ok(bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handed_out_values_are_wiped_from_the_batch_and_never_repeat() {
        let mut seen = std::collections::HashSet::new();
        // Past two refills of the batch.
        for _ in 0..(2 * PER_BATCH + 5) {
            let value = bytes16().expect("OS randomness");
            assert!(seen.insert(value), "a value was handed out twice");
            BATCH.with(|batch| {
                let (bytes, next) = &*batch.borrow();
                assert!(
                    bytes[..next * 16].iter().all(|byte| *byte == 0),
                    "a value handed out is still in the batch"
                );
                assert_eq!(bytes[(next - 1) * 16..next * 16], [0; 16]);
            });
        }
    }
}
