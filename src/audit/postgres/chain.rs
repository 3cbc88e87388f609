//! The chain read back: the table's rows spelled as the JSON Lines a file sink would hold and
//! checked with the file format's own check, each entry also made a tree leaf or copied out when
//! asked.

use std::io::{self, Read};
use std::path::Path;

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator as _;

use super::{AuditError, ChainTip, PostgresAuditVerifyError, audit_error};
use crate::audit::verify::{self, AuditVerifyError};

/// Reads the table in order as the JSON Lines a file sink would hold and checks it with the file
/// format's own check, so both sinks are verified by one definition.
pub(super) fn verify_chain(client: &mut Client) -> Result<ChainTip, PostgresAuditVerifyError> {
    verify_chain_into(client, Taps::default())
}

/// Where [`verify_chain_into`] also sends each entry it reads.
#[derive(Default)]
pub(super) struct Taps<'a> {
    /// Each entry made a leaf of this tree.
    pub(super) tree: Option<&'a mut crate::audit::merkle::MerkleTree>,
    /// Each entry written here as its JSON Lines line.
    pub(super) copy: Option<&'a mut dyn io::Write>,
}

/// [`verify_chain`], each entry also sent where `taps` say.
pub(super) fn verify_chain_into(
    client: &mut Client,
    taps: Taps<'_>,
) -> Result<ChainTip, PostgresAuditVerifyError> {
    let unreadable = |error| PostgresAuditVerifyError::Unreadable(audit_error("read", error));
    let mut transaction = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(unreadable)?;
    let tip = transaction
        .query_one("SELECT entries, last_hash FROM toolgate_audit_tip", &[])
        .map_err(unreadable)?;
    let (tip_entries, tip_hash): (i64, String) = (
        tip.try_get(0).map_err(unreadable)?,
        tip.try_get(1).map_err(unreadable)?,
    );
    let rows = transaction
        .query_raw(
            "SELECT seq, prev, event, hash FROM toolgate_audit ORDER BY seq",
            std::iter::empty::<i64>(),
        )
        .map_err(unreadable)?;
    let mut lines = Lines {
        rows,
        buffer: Vec::new(),
        at: 0,
        failed: None,
        unwritable: None,
        taps,
    };
    let scanned = verify::scan(&mut lines, Path::new("toolgate_audit"));
    if let Some(error) = lines.failed {
        return Err(unreadable(error));
    }
    if let Some(error) = lines.unwritable {
        return Err(PostgresAuditVerifyError::Unwritable(error));
    }
    let chain = match scanned {
        Ok(scan) => scan.tip,
        Err(AuditVerifyError::Broken { line, problem }) => {
            return Err(PostgresAuditVerifyError::Broken {
                seq: line - 1,
                problem,
            });
        }
        // Every line this reader yields ends in a newline, and it does no I/O of its own; an
        // event holding a raw newline reads as a broken entry above.
        Err(other) => {
            return Err(PostgresAuditVerifyError::Unreadable(AuditError::caused_by(
                "the audit table does not read as a chain",
                other,
            )));
        }
    };
    let tip_entries = u64::try_from(tip_entries).unwrap_or(u64::MAX);
    if chain.entries != tip_entries || chain.last_hash != tip_hash {
        return Err(PostgresAuditVerifyError::TipMismatch {
            entries: chain.entries,
            tip_entries,
        });
    }
    Ok(chain)
}

/// The rows of the audit table spelled as JSON Lines entries, read one row at a time.
struct Lines<'rows, 'taps> {
    rows: postgres::RowIter<'rows>,
    buffer: Vec<u8>,
    at: usize,
    /// The database error that ended the rows early, if one did.
    failed: Option<postgres::Error>,
    /// The write error that ended the rows early, if one did.
    unwritable: Option<io::Error>,
    taps: Taps<'taps>,
}

impl Read for Lines<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.buffer.len() {
            self.buffer.clear();
            self.at = 0;
            match self.rows.next() {
                Ok(Some(row)) => {
                    // A column of another type or a NULL (a table altered by hand) is a failed
                    // read, never a panic.
                    let fields = (|| -> Result<(i64, &str, &str, &str), postgres::Error> {
                        Ok((
                            row.try_get(0)?,
                            row.try_get(1)?,
                            row.try_get(2)?,
                            row.try_get(3)?,
                        ))
                    })();
                    let (seq, prev, event, hash) = match fields {
                        Ok(fields) => fields,
                        Err(error) => {
                            self.failed = Some(error);
                            return Ok(0);
                        }
                    };
                    let seq = u64::try_from(seq).unwrap_or(u64::MAX);
                    self.buffer = verify::entry_line(seq, prev, event, hash).into_bytes();
                    if let Some(tree) = self.taps.tree.as_deref_mut() {
                        let entry = self.buffer.strip_suffix(b"\n").unwrap_or(&self.buffer);
                        tree.push(crate::audit::merkle::leaf_hash(entry));
                    }
                    if let Some(copy) = self.taps.copy.as_deref_mut()
                        && let Err(error) = copy.write_all(&self.buffer)
                    {
                        self.unwritable = Some(error);
                        return Ok(0);
                    }
                }
                Ok(None) => return Ok(0),
                Err(error) => {
                    self.failed = Some(error);
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..n + self.at]);
        self.at += n;
        Ok(n)
    }
}
