//! The ids the MCP server gives the calls it makes.

/// Call ids unique to this server (and, through the random prefix, across servers sharing an
/// audit log): a client's JSON-RPC id repeats in every session (`2` for each first call).
pub(super) struct CallIds {
    prefix: String,
    next: std::sync::atomic::AtomicU64,
}

impl CallIds {
    pub(super) fn random() -> Result<Self, getrandom::Error> {
        let bytes = crate::random::bytes16()?;
        Ok(Self {
            prefix: bytes[..8]
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect(),
            next: std::sync::atomic::AtomicU64::new(1),
        })
    }

    pub(super) fn next(&self) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}-{n}", self.prefix)
    }
}
