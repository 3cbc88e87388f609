//! Where a call's values came from: what tool results carried, and what the person asked.
//!
//! An attacker who plants instructions in a web page, a mail or a file gets them into a tool
//! result; a model that follows them makes calls of legitimate kinds carrying the attacker's
//! values — a payee, a link, a host. Judging the call alone cannot tell those values from the
//! person's. So the [`ToolController`](crate::ToolController) records, while the policy in force
//! reads provenance (a flow rule with [`provenance`](crate::rules::FlowConfig::provenance), or
//! [`sources`](crate::rules::PolicyConfig::sources)):
//!
//! - **every result that reaches the model**: the values it carried — each text's links and
//!   their hosts, e-mail addresses, IBANs, long numbers, paths and handles (see the table of
//!   spellings in [`extract`]), each string value of its structured content and each short line
//!   of its text whole — under the trust class of the tool that returned it (`untrusted` unless
//!   the policy's `sources` name it `trusted`) and under every named source (`{"tool": …}`,
//!   `{"label": …}`) a provenance condition reads;
//! - **what the person asked** ([`ToolController::record_person_request`](crate::ToolController::record_person_request)), through a channel
//!   the model cannot write: the values of the person's own words — as a result's, and also each
//!   word and each run of up to four words (`Bob`, `AZ405`, `Hotel Aurora`) — as `person`.
//! - **what a directory says the person named** (`sources.lookups`): a record of a trusted
//!   directory's result (called without arguments) — a line, an object — holding a word the
//!   person said that no other record of it holds counts as the person's too, so "DM it to Ana" names `ana.silva`
//!   on the line `ana.silva - Ana Silva` (read when the directory's result is, after the request).
//!
//! A flow rule's `provenance` condition then asks of a call's argument where its value was seen:
//! "a payee seen in untrusted results and never named by the person is asked".
//!
//! # Guarantees
//!
//! - **Never a value.** Values are kept only as keyed digests (SipHash-2-4-128 under a 128-bit
//!   key derived from the [`ProvenanceKey`]): a store's reader learns nothing of a
//!   value without the key, and cannot test guesses. No value appears in an error, a reason or the audit log.
//! - **In the counters' store.** Records are kept where flow rules keep their history
//!   ([`RateCounters`](crate::limits::RateCounters): memory, SQLite or PostgreSQL, shared by the
//!   instances of one deployment when they share the key), for a day (a value seen longer ago
//!   counts as never seen), and read in the same atomic step as every flow rule and limit a
//!   decision depends on.
//! - **Bounded, failing closed.** One result records at most [`MAX_VALUES_PER_RESULT`] values
//!   read as written, and as many more found only by reading it further (decoded, a JSON text's
//!   leaves), and a session at most [`MAX_VALUES_PER_SESSION`] (a value recorded again counts again).
//!   Past either bound the session is marked *overflowed*: every later `seen_in` condition of a
//!   result source holds for every value, as if each were seen there — the rules restrict, never
//!   miss. Two kinds of value are counted apart, to bounds of their own that overflow nothing:
//!   the short lines whole of a text of several lines (a source file, a changelog, a log) and
//!   the values of JSON documents inside other text (a page's script data). Past their bound
//!   they count as never seen, as a sentence's words do; what those lines hold (links, addresses,
//!   IBANs, numbers …) is read as written and counts against the result's bound. A result that cannot be recorded at all (the store fails) is withheld from the model.
//! - **Scoped to the principal.** A result is recorded for the principal whose call returned it
//!   and a request for the principal it was made for; a call reads only its own principal's
//!   records (calls without a principal share one scope).
//!
//! What it does not see: a value the model re-encodes, translates or paraphrases, or builds from
//! parts (see [`extract`]); results of calls made before a policy reading provenance was in
//! force; content the model got some other way than a tool result of this controller.

mod descriptions;
pub mod extract;
mod json_text;
pub(crate) mod keyed;
pub(crate) mod lookups;
mod seen_at;
mod values;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use descriptions::{DescriptionFinding, INSTRUCTION_PHRASES, description_findings};
pub use keyed::ProvenanceKey;
pub(crate) use seen_at::SeenAt;
pub(crate) use values::{Bound, Found, Scope, values_of_person, values_of_result};

/// How long a record is kept and read: a day. A value seen longer ago counts as never seen, and
/// a session overflowed a day ago no longer is — so records never pile up in a store that lives
/// as long as its process (the gateway's counts for a whole deployment).
pub(crate) const KEPT_FOR_MS: Option<u64> = Some(86_400_000);

/// The most values one result records as its texts are written, and again the most it records
/// found only by reading them further (decoded, a JSON text's leaves); a result with more marks
/// the session overflowed. (It was 512, which a listing of 50 issues in GitHub's REST shape, a
/// `find` of 562 paths and 5 of 66 crate changelogs passed: each overflowed its session, and
/// every later call a `seen_in` rule judges was asked. At 2,048 only the tokio changelog, 195 KB
/// of 4,963 lines, still does.)
pub const MAX_VALUES_PER_RESULT: usize = 2048;

/// The most values counted apart one result records (the short lines whole of a text of
/// several lines, and what documents inside other text gave); the rest count as
/// never seen. They fill a session bound of their own, past which none is recorded, so each
/// result's share of it stays small: a source file of 512 distinct lines reaches that bound in
/// about 196 reads.
pub const MAX_APART_PER_RESULT: usize = 512;

/// The most values one request of the person's records (its words and runs of words count);
/// the rest of a longer request is not named by the person.
pub const MAX_VALUES_PER_REQUEST: usize = 4096;

/// The most values a session records (a value recorded again counts again); past it the session
/// is marked overflowed.
pub const MAX_VALUES_PER_SESSION: u64 = 100_000;

/// Whether a tool returns content a third party can write (a web page, a mail, a shared
/// document) or only content the deployment vouches for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Content anyone may have written: instructions in it are not the person's.
    #[default]
    Untrusted,
    /// Content the deployment vouches for (its own database, a fixed list of payees).
    Trusted,
}

impl fmt::Display for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Untrusted => "untrusted",
            Self::Trusted => "trusted",
        })
    }
}

/// What a policy says about a tool's results: its trust class, and the named sources (a
/// provenance condition's `{"tool": …}` or `{"label": …}`) it counts as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResultSources {
    /// The tool's trust class.
    pub trust: Trust,
    /// The named sources covering the tool, by their record names.
    pub named: Vec<std::sync::Arc<str>>,
    /// Whether the policy classified its tools (has `sources`); `trust` is otherwise the
    /// default, which a stack of layers lets a classifying layer decide.
    pub classified: bool,
    /// Whether the tool is a trusted directory (`sources.lookups`): a record of its result
    /// holding a name the person said names the record's values for the person.
    pub lookup: bool,
}

impl ResultSources {
    /// Results of `trust`, counted under no named source.
    pub fn new(trust: Trust) -> Self {
        Self {
            trust,
            named: Vec::new(),
            classified: false,
            lookup: false,
        }
    }
}

/// How many values a recording kept, and whether the session is now marked overflowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recorded {
    /// The distinct values recorded.
    pub values: usize,
    /// Whether a bound was passed: the session is marked overflowed.
    pub overflowed: bool,
}

/// What a provenance condition looks up for one value: where it may have been seen. Built by a
/// policy, turned into a counter's name by the controller (which holds the key); its `Debug`
/// shows the source, never the value.
#[derive(Clone, PartialEq, Eq)]
pub struct ValueLook(pub(crate) Look);

#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Look {
    /// The value, seen in `source` (`u`, `t`, `p` or a named source's record name).
    Seen {
        source: std::sync::Arc<str>,
        token: extract::Token,
    },
    /// Whether the session overflowed.
    Overflowed,
}

impl ValueLook {
    /// The value's digest, its key in [`SeenAt`]; `None` for the overflow look.
    pub(crate) fn digest(&self, key: &ProvenanceKey) -> Option<keyed::Digest> {
        match &self.0 {
            Look::Seen { token, .. } => Some(key.digest_bytes(token)),
            Look::Overflowed => None,
        }
    }

    /// Whether this look reads whether the session overflowed.
    pub(crate) fn is_overflow(&self) -> bool {
        matches!(self.0, Look::Overflowed)
    }

    /// The counter this look reads for `scope`.
    pub(crate) fn bucket(&self, key: &ProvenanceKey, scope: &Scope) -> String {
        match &self.0 {
            Look::Seen { source, token } => scope.bucket_of(source, key, token),
            Look::Overflowed => scope.overflow(),
        }
    }
}

impl fmt::Debug for ValueLook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Look::Seen { source, token } => write!(
                f,
                "ValueLook(a {} value in source {source:?})",
                token.kind.tag()
            ),
            Look::Overflowed => f.write_str("ValueLook(overflowed)"),
        }
    }
}

/// The record names of the built-in sources.
pub(crate) mod source {
    /// Results of untrusted tools.
    pub(crate) const UNTRUSTED: &str = "u";
    /// Results of trusted tools.
    pub(crate) const TRUSTED: &str = "t";
    /// The person's requests.
    pub(crate) const PERSON: &str = "p";
    /// The person's own words, without what directories named for them: what a directory's
    /// records are read against.
    pub(crate) const SAID: &str = "s";
}
