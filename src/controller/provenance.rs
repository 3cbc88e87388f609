//! What the controller records for provenance: the values of every result that reaches the
//! model, and of what the person asked (see [`crate::provenance`]).

use std::sync::Arc;

use super::ToolController;
use crate::contract::{Principal, ToolResult};
use crate::decision::Refuses;
use crate::limits::{CounterError, RateCounters, Take, Taken};
use crate::provenance::extract::Token;
use crate::provenance::keyed::Digest;
use crate::provenance::{
    Bound, Found, KEPT_FOR_MS, MAX_VALUES_PER_SESSION, ProvenanceKey, Recorded, ResultSources,
    Scope, Trust, source, values_of_person, values_of_result,
};

/// Recording failed: the counters' store could not keep the values.
#[derive(Debug, thiserror::Error)]
#[error("the values could not be recorded: {0}")]
pub struct RecordError(#[from] pub CounterError);

impl ToolController {
    /// The same controller, keeping value digests under `key`. Instances sharing a counters'
    /// store ([`with_rate_counters`](Self::with_rate_counters)) must share the key to read each
    /// other's records; the default is a random key, readable by this controller only.
    #[must_use]
    pub fn with_provenance_key(mut self, key: ProvenanceKey) -> Self {
        self.recorder = Recorder {
            key,
            lost: Arc::default(),
        };
        self
    }

    /// Records what the person asked in this session, for `principal`: the values of `text`
    /// (links, addresses, IBANs, numbers, paths, handles, each short line whole, each word and
    /// each run of up to four words) count as named by the person (`"person"` in a provenance condition). Call it from a channel the
    /// model cannot write — the host's own input box, never a tool argument or a model's message.
    ///
    /// # Errors
    ///
    /// [`RecordError`] when the counters' store fails. Nothing is then named by the person, and
    /// the session counts as overflowed — in the store if it can still be marked, else in this
    /// controller until it can — so rules stay strict: what the person named is asked, and so
    /// is every rule `if_person_named` (the request may have named an amount).
    pub fn record_person_request(
        &self,
        principal: Option<&Principal>,
        text: &str,
    ) -> Result<Recorded, RecordError> {
        let scope = Scope::of(principal, &self.recorder.key);
        let values = values_of_person(text);
        // The markers of which kinds were named are kept first, and are no values of the text.
        let markers = values
            .iter()
            .take_while(|token| token.kind == crate::provenance::extract::Kind::AnyOf)
            .count();
        let now_ms = self.clock.now_ms();
        let counters = self.counters.as_ref();
        match self.recorder.record(
            counters,
            now_ms,
            &scope,
            // `said`: the person's own words alone, which directories are read against (what
            // a directory names for the person is `person` only, and names nothing further).
            &[source::PERSON, source::SAID],
            values,
            Bound::PERSON,
        ) {
            Ok((recorded, _)) => Ok(Recorded {
                values: recorded.values.saturating_sub(markers),
                ..recorded
            }),
            Err(error) => {
                if self
                    .recorder
                    .mark_overflowed(counters, now_ms, &scope)
                    .is_err()
                {
                    self.recorder.lost.remember(&scope);
                }
                Err(error.into())
            }
        }
    }

    /// Records the values `result` of `tool` carries, for `principal`'s scope, under
    /// `sources`; a result whose values cannot be recorded is withheld (an error result saying
    /// the tool ran), so the model never holds values the rules cannot see.
    pub(super) fn record_values(
        &self,
        sources: &ResultSources,
        principal: Option<&Principal>,
        tool: &str,
        result: ToolResult,
    ) -> ToolResult {
        let Found {
            values,
            further,
            apart,
            cut,
            ..
        } = values_of_result(&result);
        // A result nesting values deeper than they are read holds values nobody recorded: the
        // session overflows (every later `seen_in` of a result source holds), as past the bound.
        if cut {
            let scope = Scope::of(principal, &self.recorder.key);
            let counters = self.counters.as_ref();
            if let Err(error) = self
                .recorder
                .mark_overflowed(counters, self.clock.now_ms(), &scope)
            {
                return withheld(result.call_id, &error);
            }
        }
        if values.is_empty() && further.is_empty() && apart.is_empty() {
            // Nothing to keep: `record` would keep nothing and mark nothing.
            return result;
        }
        // The values as written, and those only a further reading found (decoded, a JSON
        // text's leaves), each bounded by `Bound::RESULT` apart: a page whose lines each hold
        // `&nbsp;` is read twice, and is no more values for it.
        let key = &self.recorder.key;
        let most = Bound::RESULT.most;
        let (mut digests, written_past) = distinct_digests(key, values, &[], most);
        let (more, further_past) = distinct_digests(key, further, &digests, most);
        digests.extend(more);
        // The values counted apart (the lines of a text of several lines, and what documents
        // inside other text gave), recorded under `Bound::APART`: at most its own bound,
        // the rest left unseen (as a sentence's words are), and none overflowing the session,
        // even one whose bound they would reach — a page's script data read again and again
        // would.
        let apart = if apart.is_empty() {
            Vec::new()
        } else {
            let mut known = digests.clone();
            known.sort_unstable();
            distinct_digests(key, apart, &known, Bound::APART.most).0
        };
        let bound = Bound {
            most: digests.len(),
            ..Bound::RESULT
        };
        let scope = Scope::of(principal, &self.recorder.key);
        let class = match sources.trust {
            Trust::Untrusted => source::UNTRUSTED,
            Trust::Trusted => source::TRUSTED,
        };
        let mut names: Vec<&str> = vec![class];
        names.extend(sources.named.iter().map(Arc::as_ref));
        // What is read as written (bounded, overflowing past it), then what is counted apart.
        let recordings = [
            (digests, bound, written_past || further_past),
            (apart, Bound::APART, false),
        ];
        for (digests, bound, past_bound) in recordings {
            match self.recorder.record_digests(
                self.counters.as_ref(),
                self.clock.now_ms(),
                &scope,
                &names,
                digests,
                bound,
                past_bound,
            ) {
                Ok((_, digests)) => self.seen_at.note(&scope, &digests, tool, &result.call_id),
                Err(error) => return withheld(result.call_id, &error),
            }
        }
        if sources.lookup {
            self.name_through_lookup(&scope, &result);
        }
        result
    }
}

/// The digests of `values` not among `before` (sorted), each once and sorted, at most `most`;
/// and whether more were left out. Past the bound, the values kept are the
/// first in their own order (links, hosts, addresses, IBANs, numbers …), as they always were:
/// which ones must not hang on the key, or a call asked in one process would run in the next.
fn distinct_digests(
    key: &ProvenanceKey,
    mut values: Vec<Token>,
    before: &[Digest],
    most: usize,
) -> (Vec<Digest>, bool) {
    let new = |digest: &Digest| {
        before
            .binary_search_by_key(&u128::from_be_bytes(*digest), |known| {
                u128::from_be_bytes(*known)
            })
            .is_err()
    };
    // Told apart by their digests: sixteen bytes compare faster than the values' text, and a
    // value read twice (a page's host, once a link) is keyed twice, not compared.
    let mut digests: Vec<Digest> = values
        .iter()
        .map(|token| key.digest_bytes(token))
        .filter(new)
        .collect();
    // As numbers: the same order as their bytes, each comparison one instruction.
    digests.sort_unstable_by_key(|digest| u128::from_be_bytes(*digest));
    digests.dedup();
    if digests.len() <= most {
        return (digests, false);
    }
    values.sort_unstable();
    values.dedup();
    // Distinct values, distinct digests (SipHash-2-4-128 does not collide on purpose).
    let kept = values
        .iter()
        .map(|token| key.digest_bytes(token))
        .filter(new)
        .take(most)
        .collect();
    (kept, true)
}

/// Whether recording `values` more in the session counter `count` would pass the session's
/// bound: a look, recording nothing (and so needing no room).
fn past_session_bound(
    counters: &dyn RateCounters,
    now_ms: u64,
    count: &str,
    values: usize,
) -> Result<bool, CounterError> {
    let look = Take {
        weight: 0,
        refuses: Refuses::Above(MAX_VALUES_PER_SESSION.saturating_sub(values as u64)),
        ..Take::limit(count, KEPT_FOR_MS, 0)
    };
    Ok(matches!(counters.take(&[look], now_ms)?, Taken::Full(_)))
}

/// The error result in place of a result whose values could not be recorded: it says the tool ran.
fn withheld(call_id: String, error: &CounterError) -> ToolResult {
    ToolResult::error(
        call_id,
        format!(
            "the tool ran, but its result is withheld: the values it carried could not be recorded for the provenance rules ({error})"
        ),
    )
}

/// Keys values and keeps them in the counters.
#[derive(Debug, Clone)]
pub(super) struct Recorder {
    pub(super) key: ProvenanceKey,
    /// Scopes whose person's request could not be recorded nor marked overflowed in the store.
    pub(super) lost: Arc<LostRequests>,
}

/// The recorder a new controller starts with: a random key.
pub(super) fn default_recorder() -> Recorder {
    Recorder {
        key: ProvenanceKey::random(),
        lost: Arc::default(),
    }
}

/// The scopes whose person's request was lost to a failing store, counted as overflowed by
/// this controller until the store holds the mark.
#[derive(Debug, Default)]
pub(super) struct LostRequests {
    /// Whether any is held: read on every decision, without the lock.
    any: std::sync::atomic::AtomicBool,
    scopes: std::sync::Mutex<LostScopes>,
}

#[derive(Debug, Default)]
struct LostScopes {
    scopes: std::collections::HashSet<String>,
    /// More than [`MAX_LOST_SCOPES`] were lost: every scope counts as overflowed.
    all: bool,
}

/// How many scopes are remembered one by one before every scope counts as lost.
const MAX_LOST_SCOPES: usize = 4096;

impl LostRequests {
    fn remember(&self, scope: &Scope) {
        let mut lost = self
            .scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lost.scopes.len() >= MAX_LOST_SCOPES {
            lost.all = true;
        } else {
            lost.scopes.insert(scope.as_str().to_owned());
        }
        self.any.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether `scope` counts as overflowed because its person's request was lost.
    pub(super) fn holds(&self, scope: &Scope) -> bool {
        if !self.any.load(std::sync::atomic::Ordering::Acquire) {
            return false;
        }
        let lost = self
            .scopes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        lost.all || lost.scopes.contains(scope.as_str())
    }

    /// `scope` is marked overflowed in the store: no longer held here (unless every scope is).
    fn marked(&self, scope: &Scope) {
        if self.any.load(std::sync::atomic::Ordering::Acquire) {
            let mut lost = self
                .scopes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            lost.scopes.remove(scope.as_str());
            if lost.scopes.is_empty() && !lost.all {
                self.any.store(false, std::sync::atomic::Ordering::Release);
            }
        }
    }
}

impl Recorder {
    /// Keeps `values` in every source of `sources` for `scope`, counting them against the
    /// session's bound; past a bound, marks the scope overflowed.
    pub(super) fn record(
        &self,
        counters: &dyn RateCounters,
        now_ms: u64,
        scope: &Scope,
        sources: &[&str],
        values: Vec<Token>,
        bound: Bound,
    ) -> Result<(Recorded, Vec<Digest>), CounterError> {
        // Digested in order: a bound keeps the front of the values (a request's markers first).
        let digests = values
            .iter()
            .take(bound.most.saturating_add(1))
            .map(|token| self.key.digest_bytes(token))
            .collect();
        self.record_digests(counters, now_ms, scope, sources, digests, bound, false)
    }

    /// [`record`](Self::record) of distinct values by their digests, the first `bound.most` kept;
    /// `past_bound` when the caller left values out past a bound of its own.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_digests(
        &self,
        counters: &dyn RateCounters,
        now_ms: u64,
        scope: &Scope,
        sources: &[&str],
        mut digests: Vec<Digest>,
        bound: Bound,
        past_bound: bool,
    ) -> Result<(Recorded, Vec<Digest>), CounterError> {
        let too_many = digests.len() > bound.most || past_bound;
        digests.truncate(bound.most);
        if digests.is_empty() || sources.is_empty() {
            let none = Recorded {
                values: 0,
                overflowed: false,
            };
            return Ok((none, Vec::new()));
        }
        // Every counter's name in one string, each ending where `ends` says: a source's prefix
        // and a digest's hex.
        let prefixes: Vec<String> = sources
            .iter()
            .map(|source| scope.bucket_prefix(source))
            .collect();
        let longest_prefix = prefixes.iter().map(String::len).max().unwrap_or(0);
        let mut names =
            String::with_capacity(digests.len() * sources.len() * (longest_prefix + 32));
        let mut ends = Vec::with_capacity(digests.len() * sources.len());
        for digest in &digests {
            for prefix in &prefixes {
                names.push_str(prefix);
                crate::canonical::push_hex(&mut names, digest);
                ends.push(names.len());
            }
        }
        let count = if bound.fills_overflow {
            scope.count()
        } else {
            scope.count_apart()
        };
        // Every take yields room: in a store bounded in room (memory), values past their share
        // are refused like values past the session's bound — the session overflows, and the
        // room limits and flow rules need stays theirs (values filling it withheld every result
        // and denied every limited call of every principal: 2,093 pages of 500 values did).
        let mut takes = Vec::with_capacity(ends.len() + 1);
        takes.push(Take {
            weight: digests.len() as u64,
            refuses: Refuses::Above(MAX_VALUES_PER_SESSION),
            yields_room: true,
            ..Take::limit(&count, KEPT_FOR_MS, 0)
        });
        let starts = std::iter::once(0).chain(ends.iter().copied());
        takes.extend(starts.zip(&ends).map(|(start, &end)| Take {
            refuses: Refuses::Never,
            replaces: true,
            yields_room: true,
            ..Take::limit(&names[start..end], KEPT_FOR_MS, 0)
        }));
        let kept = match counters.take(&takes, now_ms)? {
            Taken::All => digests.len(),
            Taken::Full(_) => 0,
        };
        // Values past a person's bound are not named by the person, which only restricts; values
        // of a result past its bound could be an attacker's, unrecorded: the session overflows.
        // Values counted apart are left unrecorded past their session's bound, but refused for
        // the store's room they overflow it too: a store filled by others would otherwise leave
        // every later page's lines unseen, for every principal.
        let no_room = kept == 0
            && !bound.fills_overflow
            && !past_session_bound(counters, now_ms, &count, digests.len())?;
        let overflowed =
            (too_many && bound.overflows) || (kept == 0 && bound.fills_overflow) || no_room;
        if overflowed {
            self.mark_overflowed(counters, now_ms, scope)?;
        } else if self.lost.holds(scope) {
            // The store works again: the lost request's mark goes where every instance reads it.
            self.mark_overflowed(counters, now_ms, scope)?;
        }
        let recorded = Recorded {
            values: kept,
            overflowed,
        };
        let digests = if kept == 0 { Vec::new() } else { digests };
        Ok((recorded, digests))
    }

    /// Marks `scope` overflowed: every later `seen_in` of a result source holds.
    fn mark_overflowed(
        &self,
        counters: &dyn RateCounters,
        now_ms: u64,
        scope: &Scope,
    ) -> Result<(), CounterError> {
        let overflow = scope.overflow();
        let mark = Take {
            refuses: Refuses::Never,
            replaces: true,
            ..Take::limit(&overflow, KEPT_FOR_MS, 0)
        };
        counters.take(&[mark], now_ms)?;
        self.lost.marked(scope);
        Ok(())
    }
}
