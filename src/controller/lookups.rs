//! Directories read against what the person asked (`sources.lookups`): a record of a trusted
//! directory's result holding a name the person said counts as named by the person (see
//! [`crate::provenance::lookups`]).

use super::ToolController;
use crate::contract::ToolResult;
use crate::decision::Refuses;
use crate::limits::{Take, Taken};
use crate::provenance::extract::{Kind, Token};
use crate::provenance::lookups::{MAX_NAMED_RECORDS, MAX_NAMES, names_by_record, records_of};
use crate::provenance::{Bound, KEPT_FOR_MS, Scope, source, values_of_person};

/// The looks one round asks the store, at first and after a record is named; a round that finds
/// nothing doubles it, up to [`MOST_LOOKS_PER_ROUND`]. A directory read costs at most twice its
/// looks plus this many for each record named.
const FIRST_LOOKS_PER_ROUND: usize = 16;

/// The most looks one round asks the store.
const MOST_LOOKS_PER_ROUND: usize = 256;

impl ToolController {
    /// Records, as named by the person in `scope`, the values of every record of the directory's
    /// `result` (of a call without arguments: see `observing`) that holds a name the person said
    /// before. What cannot be read or recorded stays unnamed, which only restricts: a rule
    /// reading `person` then asks as it would have.
    pub(super) fn name_through_lookup(&self, scope: &Scope, result: &ToolResult) {
        let records = records_of(result);
        // The person's own words each record's names would be, as the counters holding them.
        let mut looks: Vec<(usize, String)> = Vec::new();
        'records: for (at, names) in names_by_record(&records).into_iter().enumerate() {
            for name in names {
                if looks.len() == MAX_NAMES {
                    break 'records;
                }
                let digest = self.recorder.key.digest_bytes(&name);
                looks.push((at, scope.bucket_of_digest(source::SAID, &digest)));
            }
        }
        let counters = self.counters.as_ref();
        let now_ms = self.clock.now_ms();
        let mut named = Vec::new();
        // The store answers with the first look that holds: every look before it held nothing,
        // so each round reads on from there, a window at a time.
        let (mut from, mut round) = (0, FIRST_LOOKS_PER_ROUND);
        while from < looks.len() && named.len() < MAX_NAMED_RECORDS {
            let window = &looks[from..looks.len().min(from + round)];
            let takes: Vec<Take<'_>> = window
                .iter()
                .map(|(_, bucket)| Take {
                    weight: 0,
                    refuses: Refuses::AnyCounted,
                    ..Take::limit(bucket, KEPT_FOR_MS, 0)
                })
                .collect();
            match counters.take(&takes, now_ms) {
                Ok(Taken::All) => {
                    from += window.len();
                    round = (round * 2).min(MOST_LOOKS_PER_ROUND);
                }
                Ok(Taken::Full(index)) => {
                    let record = window[index].0;
                    named.push(record);
                    // On after the record's other names (a store answering with a later look
                    // than the first only leaves the records between unnamed).
                    from += index + 1;
                    while looks.get(from).is_some_and(|(at, _)| *at == record) {
                        from += 1;
                    }
                    round = FIRST_LOOKS_PER_ROUND;
                }
                Err(_) => break,
            }
        }
        if named.is_empty() {
            return;
        }
        // The record as if the person had said it; which kinds the person named stays theirs.
        let mut values: Vec<Token> = named
            .iter()
            .flat_map(|&at| values_of_person(&records[at]))
            .filter(|token| token.kind != Kind::AnyOf)
            .collect();
        values.sort_unstable();
        values.dedup();
        // A failure leaves the records unnamed: only stricter.
        let _ = self.recorder.record(
            counters,
            now_ms,
            scope,
            &[source::PERSON],
            values,
            Bound::PERSON,
        );
    }
}
