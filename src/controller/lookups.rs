//! Directories read against what the person asked (`sources.lookups`): a record of a trusted
//! directory's result holding a name the person said counts as named by the person (see
//! [`crate::provenance::lookups`]).

use super::ToolController;
use crate::contract::ToolResult;
use crate::decision::Refuses;
use crate::limits::{Take, Taken};
use crate::provenance::extract::Kind;
use crate::provenance::lookups::{MAX_NAMED_RECORDS, MAX_NAMES, names_by_record, records_of};
use crate::provenance::{Bound, KEPT_FOR_MS, Scope, source, values_of_person};

impl ToolController {
    /// Records, as named by the person in `scope`, the values of every record of the directory's
    /// `result` that holds a name the person said before. What cannot be read or recorded stays
    /// unnamed, which only restricts: a rule reading `person` then asks as it would have.
    pub(super) fn name_through_lookup(&self, scope: &Scope, result: &ToolResult) {
        let records = records_of(result);
        // The person's words each record's names would be, as the counters that hold them.
        let mut looks: Vec<(usize, String)> = Vec::new();
        'records: for (at, names) in names_by_record(&records).into_iter().enumerate() {
            for name in names {
                if looks.len() == MAX_NAMES {
                    break 'records;
                }
                let digest = self.recorder.key.digest_bytes(&name);
                looks.push((at, scope.bucket_of_digest(source::PERSON, &digest)));
            }
        }
        let counters = self.counters.as_ref();
        let now_ms = self.clock.now_ms();
        let mut named = Vec::new();
        // Each round finds the first record holding a name the person said (the store answers
        // with the first look that holds: every look before it held nothing) and goes on after
        // it: at most one round per record named, plus one, each reading only the records after
        // the last one named.
        while !looks.is_empty() && named.len() < MAX_NAMED_RECORDS {
            let takes: Vec<Take<'_>> = looks
                .iter()
                .map(|(_, bucket)| Take {
                    weight: 0,
                    refuses: Refuses::AnyCounted,
                    ..Take::limit(bucket, KEPT_FOR_MS, 0)
                })
                .collect();
            let Ok(Taken::Full(index)) = counters.take(&takes, now_ms) else {
                break;
            };
            let record = looks[index].0;
            named.push(record);
            // A store answering with a later look than the first only leaves records unnamed.
            looks.retain(|(at, _)| *at > record);
        }
        if named.is_empty() {
            return;
        }
        // The record as if the person had said it; which kinds the person named stays theirs.
        let mut values: Vec<_> = named
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
