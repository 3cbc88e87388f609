//! Integration: queued entries join the chain (and so the Merkle tree) in batches, in one
//! transaction under the tip's lock — the only step that is serialized across nodes, and it runs
//! once per batch, not once per entry.

use postgres::Client;

use crate::audit::verify::line_hash;

/// How many queued entries one integrating transaction takes at most.
const BATCH: i64 = 5_000;

/// Whether to wait for another node's integration or leave the work to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// Wait for the tip's lock: the caller needs every entry committed before it integrated (a
    /// reader about to verify or prove).
    ForTheLock,
    /// Skip when another node holds the lock: it integrates what is queued (background work).
    Skip,
}

/// Moves every queued entry into the chain, a batch per transaction; returns how many it moved.
/// A crash or a lost connection mid-batch rolls that batch back whole: its entries stay queued for
/// the next integration, none is moved twice.
pub(super) fn integrate(client: &mut Client, wait: Wait) -> Result<u64, postgres::Error> {
    let mut moved = 0;
    loop {
        let batch = integrate_batch(client, wait)?;
        moved += batch;
        if batch < u64::try_from(BATCH).unwrap_or(u64::MAX) {
            return Ok(moved);
        }
    }
}

fn integrate_batch(client: &mut Client, wait: Wait) -> Result<u64, postgres::Error> {
    let mut transaction = client.transaction()?;
    let lock = match wait {
        Wait::ForTheLock => "SELECT entries, last_hash FROM toolgate_audit_tip FOR UPDATE",
        Wait::Skip => "SELECT entries, last_hash FROM toolgate_audit_tip FOR UPDATE SKIP LOCKED",
    };
    let Some(tip) = transaction.query_opt(lock, &[])? else {
        // Another node is integrating; it takes what is queued.
        return Ok(0);
    };
    let (mut seq, mut prev): (i64, String) = (tip.try_get(0)?, tip.try_get(1)?);
    // A key already in the chain (a first try that landed late, after its retry was integrated)
    // is not integrated twice, nor left to stop every integration on the chain's unique index.
    transaction.execute(
        "DELETE FROM toolgate_audit_queue q USING toolgate_audit a WHERE a.entry_key = q.entry_key",
        &[],
    )?;
    let rows = transaction.query(
        "SELECT id, entry_key, event, recorded_at FROM toolgate_audit_queue ORDER BY id LIMIT $1",
        &[&BATCH],
    )?;
    if rows.is_empty() {
        return Ok(0);
    }
    let count = rows.len();
    let mut ids = Vec::with_capacity(count);
    let mut seqs = Vec::with_capacity(count);
    let mut prevs = Vec::with_capacity(count);
    let mut events = Vec::with_capacity(count);
    let mut hashes = Vec::with_capacity(count);
    let mut keys = Vec::with_capacity(count);
    let mut times = Vec::with_capacity(count);
    for row in &rows {
        let event: &str = row.try_get(2)?;
        let hash = line_hash(u64::try_from(seq).unwrap_or(0), &prev, event);
        ids.push(row.try_get::<_, i64>(0)?);
        keys.push(row.try_get::<_, &str>(1)?);
        times.push(row.try_get::<_, std::time::SystemTime>(3)?);
        seqs.push(seq);
        prevs.push(std::mem::replace(&mut prev, hash.clone()));
        events.push(event);
        hashes.push(hash);
        seq += 1;
    }
    transaction.execute(
        "INSERT INTO toolgate_audit (seq, prev, event, hash, entry_key, recorded_at)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
                              $6::timestamptz[])",
        &[&seqs, &prevs, &events, &hashes, &keys, &times],
    )?;
    transaction.execute(
        "DELETE FROM toolgate_audit_queue WHERE id = ANY($1)",
        &[&ids],
    )?;
    transaction.execute(
        "UPDATE toolgate_audit_tip SET entries = $1, last_hash = $2",
        &[&seq, &prev],
    )?;
    transaction.commit()?;
    Ok(count as u64)
}
