//! What the controller records for provenance: the values of every result that reaches the
//! model, and of what the person asked (see [`crate::provenance`]).

use std::sync::Arc;

use super::ToolController;
use crate::contract::{Principal, ToolResult};
use crate::provenance::{
    Bound, ProvenanceKey, RecordError, Recorded, Recorder, ResultSources, Scope, Trust, source,
};

impl ToolController {
    /// The same controller, keeping value digests under `key`. Instances sharing a counters'
    /// store ([`with_rate_counters`](Self::with_rate_counters)) must share the key to read each
    /// other's records; the default is a random key, readable by this controller only.
    #[must_use]
    pub fn with_provenance_key(mut self, key: ProvenanceKey) -> Self {
        self.recorder = Recorder { key };
        self
    }

    /// Records what the person asked in this session, for `principal`: the values of `text`
    /// (links, addresses, IBANs, numbers, paths, handles, each short line whole, each word and
    /// each run of up to four words) count as named by the person (`"person"` in a provenance condition). Call it from a channel the
    /// model cannot write — the host's own input box, never a tool argument or a model's message.
    ///
    /// # Errors
    ///
    /// [`RecordError`] when the counters' store fails; nothing is then named by the person, so
    /// rules that allow what the person named stay strict.
    pub fn record_person_request(
        &self,
        principal: Option<&Principal>,
        text: &str,
    ) -> Result<Recorded, RecordError> {
        let scope = Scope::of(principal, &self.recorder.key);
        let values = Recorder::values_of_person(text);
        let (recorded, _) = self.recorder.record(
            self.counters.as_ref(),
            self.clock.now_ms(),
            &scope,
            &[source::PERSON],
            values,
            Bound::PERSON,
        )?;
        Ok(recorded)
    }

    /// Records the values `result` of `tool` carries, for `scope`, under `sources`; a result
    /// whose values cannot be recorded is withheld (an error result saying the tool ran), so the
    /// model never holds values the rules cannot see.
    pub(super) fn record_values(
        &self,
        sources: &ResultSources,
        scope: &Scope,
        tool: &str,
        result: ToolResult,
    ) -> ToolResult {
        let class = match sources.trust {
            Trust::Untrusted => source::UNTRUSTED,
            Trust::Trusted => source::TRUSTED,
        };
        let mut names: Vec<&str> = vec![class];
        names.extend(sources.named.iter().map(Arc::as_ref));
        let values = Recorder::values_of_result(&result);
        match self.recorder.record(
            self.counters.as_ref(),
            self.clock.now_ms(),
            scope,
            &names,
            values,
            Bound::RESULT,
        ) {
            Ok((_, keys)) => {
                self.seen_at.note(keys, tool, &result.call_id);
                result
            }
            Err(error) => ToolResult::error(
                result.call_id,
                format!(
                    "the tool ran, but its result is withheld: the values it carried could not be recorded for the provenance rules ({error})"
                ),
            ),
        }
    }
}

/// The recorder a new controller starts with: a random key.
pub(super) fn default_recorder() -> Recorder {
    Recorder {
        key: ProvenanceKey::random(),
    }
}
