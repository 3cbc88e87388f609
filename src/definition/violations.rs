//! Argument violations: found by the schema, masked, and listed within a bound.
//!
//! Two rules hold for everything here, because the listing is shown to the model and copied into
//! the audit log:
//!
//! - **Nothing the model chose is quoted.** Values are masked by `jsonschema`; messages of the
//!   keywords that would quote property names (`additionalProperties`, `unevaluatedProperties`,
//!   `propertyNames`) are replaced by fixed text; and in a pointer, a property name appears only if
//!   the schema declares it (see [`DeclaredNames`]) — any other name becomes `*`.
//! - **The listing is bounded**: at most [`ArgumentErrors::MAX_LISTED`] violations, a count of the
//!   rest up to [`ArgumentErrors::MAX_COUNTED`], each message at most
//!   [`ArgumentErrors::MAX_MESSAGE_BYTES`] and the whole text at most
//!   [`ArgumentErrors::MAX_TEXT_BYTES`].

use std::collections::HashSet;
use std::fmt::{self, Write as _};

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

/// One way the arguments broke the tool's rules: where, which rule, and what was expected.
///
/// Neither the pointer nor the message contains anything the model chose: values are masked,
/// and property names the schema does not declare are shown as `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer (RFC 6901) to the offending place in the arguments; `""` is the whole object.
    /// A reference token is shown as written only when it is an array index or a property name
    /// the schema declares (a key of some `properties`, or an entry of some `required` or
    /// `dependentRequired`); any other token — a key of an open map — is replaced by `*`.
    pub pointer: String,
    /// The schema keyword that failed (`type`, `required`, …), or `argumentCheck` for the
    /// definition's extra check, `argumentType` when the arguments do not read back through a
    /// typed tool's Rust type, or `maxDepth` for over-deep arguments.
    pub keyword: String,
    /// What was expected, with the value masked; at most [`ArgumentErrors::MAX_MESSAGE_BYTES`].
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {:?} ({}): {}",
            self.pointer, self.keyword, self.message
        )
    }
}

/// The violations found in one call's arguments (never empty): the first
/// [`MAX_LISTED`](Self::MAX_LISTED), and how many more there were.
///
/// Its `Display` (the text the model reads, after `invalid arguments for NAME: `) is at most
/// [`MAX_TEXT_BYTES`](Self::MAX_TEXT_BYTES) long, whatever the arguments; its `Debug` shows the
/// same masked violations.
///
/// # Examples
///
/// ```
/// use serde_json::{json, Value};
/// use toolgate::{ToolDefinition, ToolError, ToolSpec};
/// use toolgate::definition::ArgumentErrors;
///
/// let schema = json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}});
/// let tool = ToolDefinition::new(ToolSpec::new("sum", "Sum xs.", schema), |_: &Value| -> Result<String, ToolError> {
///     Ok(String::new())
/// })?;
/// let errors = tool.validate(&json!({"xs": vec!["x"; 100]})).unwrap_err();
/// assert_eq!(errors.violations().len(), ArgumentErrors::MAX_LISTED);
/// assert_eq!(errors.unlisted(), 100 - ArgumentErrors::MAX_LISTED);
/// assert!(errors.to_string().starts_with("100 violations, the first 16 listed: "));
/// # Ok::<(), toolgate::definition::DefinitionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentErrors {
    // Invariant: never empty, at most `MAX_LISTED` entries, each message within
    // `MAX_MESSAGE_BYTES`.
    violations: Vec<Violation>,
    // Invariant: at most `MAX_COUNTED + 1`; `MAX_COUNTED + 1` means "more than `MAX_COUNTED`".
    unlisted: usize,
}

impl ArgumentErrors {
    /// The most violations listed; the rest are only counted.
    pub const MAX_LISTED: usize = 16;
    /// The most unlisted violations counted; past it the listing says "more than".
    pub const MAX_COUNTED: usize = 1000;
    /// The longest message of one violation, in bytes; a longer one (an `enum` with many options)
    /// is cut and ends with `…`.
    pub const MAX_MESSAGE_BYTES: usize = 256;
    /// The longest `Display` text, in bytes.
    pub const MAX_TEXT_BYTES: usize = 4096;

    /// The listed violations, in the order the validator reported them.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// How many further violations were found but not listed. A value above
    /// [`MAX_COUNTED`](Self::MAX_COUNTED) means "more than `MAX_COUNTED`": counting stops there.
    pub fn unlisted(&self) -> usize {
        self.unlisted
    }

    /// Whether these errors say only that the arguments nest deeper than
    /// [`MAX_ARGUMENT_DEPTH`](crate::definition::MAX_ARGUMENT_DEPTH) (nothing else was checked).
    pub(crate) fn is_depth_limit(&self) -> bool {
        matches!(self.violations.as_slice(), [only] if only.keyword == "maxDepth")
    }

    /// A single violation; `message` is cut to [`MAX_MESSAGE_BYTES`](Self::MAX_MESSAGE_BYTES).
    pub(crate) fn one(pointer: String, keyword: &str, message: &str) -> Self {
        let mut bounded = Bounded::new(Self::MAX_MESSAGE_BYTES);
        // An error only says the bound was reached; `finish` marks the cut.
        let _ = bounded.write_str(message);
        Self {
            violations: vec![Violation {
                pointer,
                keyword: keyword.to_owned(),
                message: bounded.finish("…"),
            }],
            unlisted: 0,
        }
    }

    /// The violations of arguments the schema refused (its `is_valid` said no).
    ///
    /// `jsonschema` 0.61 collects every error before handing out the first (its `iter_errors`
    /// builds a vector), so listing costs time linear in the arguments; what this adds — masking
    /// and rendering — is bounded by `MAX_LISTED` and `MAX_COUNTED`.
    #[cold]
    #[inline(never)]
    pub(crate) fn listed(
        validator: &jsonschema::Validator,
        arguments: &Value,
        declared: &DeclaredNames,
    ) -> Self {
        let mut errors = validator.iter_errors(arguments);
        let violations: Vec<Violation> = errors
            .by_ref()
            .take(Self::MAX_LISTED)
            .map(|error| masked_violation(&error, arguments, declared))
            .collect();
        let unlisted = errors.take(Self::MAX_COUNTED + 1).count();
        if violations.is_empty() {
            // The validator said invalid but listed nothing: still a rejection, never a pass.
            return Self::one(
                String::new(),
                "schema",
                "the arguments do not satisfy the schema",
            );
        }
        Self {
            violations,
            unlisted,
        }
    }

    fn render(&self, out: &mut impl fmt::Write) -> fmt::Result {
        let listed = self.violations.len();
        if self.unlisted == 0 {
            write!(
                out,
                "{listed} violation{}: ",
                if listed == 1 { "" } else { "s" }
            )?;
        } else if self.unlisted > Self::MAX_COUNTED {
            write!(
                out,
                "more than {} violations, the first {listed} listed: ",
                listed + Self::MAX_COUNTED
            )?;
        } else {
            write!(
                out,
                "{} violations, the first {listed} listed: ",
                listed + self.unlisted
            )?;
        }
        for (index, violation) in self.violations.iter().enumerate() {
            if index > 0 {
                out.write_str("; ")?;
            }
            write!(out, "{violation}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ArgumentErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bounded = Bounded::new(Self::MAX_TEXT_BYTES);
        // An error only says the bound was reached; `finish` marks the cut.
        let _ = self.render(&mut bounded);
        f.write_str(&bounded.finish("; … (listing cut)"))
    }
}

impl std::error::Error for ArgumentErrors {}

/// A writer that keeps at most `limit` bytes (cut at a character boundary) and reports
/// `fmt::Error` once it is full, so a caller stops rendering early.
struct Bounded {
    text: String,
    limit: usize,
    cut: bool,
}

impl Bounded {
    fn new(limit: usize) -> Self {
        Self {
            text: String::new(),
            limit,
            cut: false,
        }
    }

    /// The text, ending with `marker` if anything was cut, and never longer than `limit`.
    fn finish(mut self, marker: &str) -> String {
        if self.cut {
            let mut end = self.limit.saturating_sub(marker.len()).min(self.text.len());
            while !self.text.is_char_boundary(end) {
                end -= 1;
            }
            self.text.truncate(end);
            self.text.push_str(marker);
        }
        self.text
    }
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, piece: &str) -> fmt::Result {
        let room = self.limit - self.text.len();
        if piece.len() <= room {
            self.text.push_str(piece);
            return Ok(());
        }
        let mut end = room;
        while !piece.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&piece[..end]);
        self.cut = true;
        Err(fmt::Error)
    }
}

/// The property names a schema declares: every key of a `properties` object, and every entry of a
/// `required` array or a `dependentRequired` object, anywhere in the schema. They were written by
/// the tool's author, so showing them reveals nothing the model chose; any other name in an
/// argument (a key of an open map) is the model's and is masked.
///
/// Collected once, when the definition is built, so a call never walks the schema.
#[derive(Debug, Default)]
pub(crate) struct DeclaredNames(HashSet<String>);

impl DeclaredNames {
    /// Collects the names of `schema`. Over-collecting (a `properties` key inside a `const`, say)
    /// is harmless: everything in a schema is the author's text.
    pub(crate) fn collect(schema: &Value) -> Self {
        let mut names = HashSet::new();
        let mut stack = vec![schema];
        while let Some(value) = stack.pop() {
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => {
                    if let Some(Value::Object(properties)) = map.get("properties") {
                        names.extend(properties.keys().cloned());
                    }
                    if let Some(Value::Array(required)) = map.get("required") {
                        names.extend(required.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    if let Some(Value::Object(dependent)) = map.get("dependentRequired") {
                        names.extend(dependent.keys().cloned());
                        for entries in dependent.values().filter_map(Value::as_array) {
                            names.extend(
                                entries.iter().filter_map(Value::as_str).map(str::to_owned),
                            );
                        }
                    }
                    stack.extend(map.values());
                }
                _ => {}
            }
        }
        Self(names)
    }

    /// `pointer` (into `instance`) with every token that is neither an array index nor a
    /// declared name replaced by `*`. Whether a token is an index is decided by the instance
    /// itself, so a map key `"123"` is masked like any other key.
    pub(crate) fn mask_pointer(&self, pointer: &str, instance: &Value) -> String {
        let mut masked = String::new();
        let mut current = Some(instance);
        for escaped in pointer.split('/').skip(1) {
            let token = escaped.replace("~1", "/").replace("~0", "~");
            masked.push('/');
            match current {
                Some(Value::Array(items)) => {
                    let item = token.parse::<usize>().ok().and_then(|i| items.get(i));
                    if item.is_some() {
                        masked.push_str(&token);
                    } else {
                        masked.push('*');
                    }
                    current = item;
                }
                other => {
                    if self.0.contains(&token) {
                        masked.push_str(&token.replace('~', "~0").replace('/', "~1"));
                    } else {
                        masked.push('*');
                    }
                    current = match other {
                        Some(Value::Object(map)) => map.get(&token),
                        _ => None,
                    };
                }
            }
        }
        masked
    }
}

fn masked_violation(
    error: &jsonschema::ValidationError<'_>,
    arguments: &Value,
    declared: &DeclaredNames,
) -> Violation {
    let kind = error.kind();
    let keyword = kind.keyword().to_owned();
    let fixed = |text: &str| text.to_owned();
    let message = match kind {
        // These three quote property names the model chose.
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            undeclared("properties the schema does not declare", unexpected.len())
        }
        ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            undeclared("unevaluated properties", unexpected.len())
        }
        ValidationErrorKind::PropertyNames { .. } => {
            fixed("a property name does not satisfy the propertyNames schema")
        }
        // These carry text from a regex engine, a decoder or a custom keyword, not written by
        // the schema's author: replaced rather than trusted.
        ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. } => {
            fixed("the pattern could not be evaluated")
        }
        ValidationErrorKind::FromUtf8 { .. } => fixed("the decoded content is not UTF-8"),
        ValidationErrorKind::Custom { .. } | ValidationErrorKind::Referencing(_) => {
            format!("value does not satisfy {keyword}")
        }
        // The rest quote only the schema (limits, patterns, enum options, required names) and
        // the placeholder.
        _ => {
            let mut bounded = Bounded::new(ArgumentErrors::MAX_MESSAGE_BYTES);
            let _ = write!(bounded, "{}", error.masked_with("value"));
            bounded.finish("…")
        }
    };
    Violation {
        pointer: declared.mask_pointer(error.instance_path().as_str(), arguments),
        keyword,
        message,
    }
}

fn undeclared(what: &str, count: usize) -> String {
    format!("{what} are not allowed ({count} found; names not shown)")
}
