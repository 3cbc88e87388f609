//! How a provenance condition reads an argument: the values at its pointer (a list an element
//! at a time), and whether a reading fits the types the schema declares there.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::MAX_KEYS_PER_CALL;
use crate::provenance::extract::{self, Token};

/// How a provenance condition reads an argument.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueRead {
    /// The whole value, in the canonical form of what it is (a link, an address, an IBAN, …).
    #[default]
    Value,
    /// Every value inside a text (links, hosts, addresses, IBANs, numbers, paths, handles): the
    /// rule holds if it holds for any of them; a text carrying none passes.
    Tokens,
    /// The host of a link (or a bare host name); a value that is neither cannot be judged, and
    /// the rule takes its action.
    Host,
    /// An amount of money in its currency's unit: a number (`35.5`, at most two decimals) or a
    /// text (`"35.50"`, `"EUR 1,450"`), compared in hundredths with the amounts results and the
    /// person named (`EUR 35.50` in a mail); anything else cannot be judged.
    Amount,
    /// An amount of money as a whole number of hundredths (a `cents` argument: `3550` is
    /// `EUR 35.50` in a mail); anything else — a fraction, a negative number, a text — cannot
    /// be judged.
    MinorUnits,
}

impl ValueRead {
    pub(super) fn is_value(&self) -> bool {
        *self == Self::Value
    }
}

/// A kind of value inside a text, for a `tokens` reading's `kinds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// A link (with or without a scheme) and its host.
    Link,
    /// An e-mail address.
    Email,
    /// An IBAN whose check digits hold.
    Iban,
    /// A number of 6 digits or more.
    Number,
    /// A file path.
    Path,
    /// A handle (`@bob`, `#team`).
    Handle,
    /// An amount of money with its currency (`EUR 35.50`, `$1,200`).
    Amount,
}

impl TokenKind {
    pub(super) fn of(token: &Token) -> Option<Self> {
        Some(match token.kind {
            extract::Kind::Url | extract::Kind::Host => Self::Link,
            extract::Kind::Email => Self::Email,
            extract::Kind::Iban => Self::Iban,
            extract::Kind::Number => Self::Number,
            extract::Kind::Path => Self::Path,
            // Inside a text, the only text values are handles.
            extract::Kind::Text => Self::Handle,
            extract::Kind::Amount => Self::Amount,
            extract::Kind::AnyOf | extract::Kind::Unread => return None,
        })
    }
}

/// Why `read` cannot read the field at `pointer` of `schema`, by the types it declares: an amount
/// is a number or a text, minor units a whole number. A field declaring no type is read as it
/// comes (what cannot be read takes the rule's action).
pub(super) fn reading_fits(read: ValueRead, schema: &Value, pointer: &str) -> Option<String> {
    let (name, wanted): (&str, &[&str]) = match read {
        ValueRead::MinorUnits => ("minor_units", &["integer", "number"]),
        ValueRead::Amount => ("amount", &["integer", "number", "string"]),
        ValueRead::Value | ValueRead::Tokens | ValueRead::Host => return None,
    };
    let types = crate::rules::schema_pointer::types_at(schema, pointer);
    let fits = types.is_empty() || types.iter().any(|name| wanted.contains(&name.as_str()));
    (!fits).then(|| {
        format!(
            "{pointer:?} is declared {}, and {name} reads {}",
            types.join(" or "),
            wanted.join(" or ")
        )
    })
}

/// The values `read` finds in `value` (`kinds` narrowing a `tokens` reading); `None` when they
/// cannot be judged: an element that is neither a string nor a number, one the reading cannot
/// read, or more values than a call may have.
pub(super) fn values_at(
    read: ValueRead,
    kinds: &[TokenKind],
    value: Option<&Value>,
) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    match value {
        Some(list @ Value::Array(_)) => {
            let mut elements = Vec::new();
            leaves(list, &mut elements);
            for element in elements {
                read_element(read, kinds, element, &mut tokens)?;
            }
        }
        Some(Value::Null) | None => {}
        // Fast path: one value needs no list of leaves.
        Some(one) => read_element(read, kinds, one, &mut tokens)?,
    }
    tokens.sort();
    tokens.dedup();
    (tokens.len() <= MAX_KEYS_PER_CALL).then_some(tokens)
}

/// Adds the values of one element (a string or a number) to `tokens`; `None` when it cannot be
/// judged.
fn read_element(
    read: ValueRead,
    kinds: &[TokenKind],
    element: &Value,
    tokens: &mut Vec<Token>,
) -> Option<()> {
    // Amounts read a number as a number; the other readings read its digits as text.
    match (read, element) {
        (ValueRead::MinorUnits, Value::Number(number)) => {
            tokens.push(extract::amount_of_minor_units(number)?);
            return Some(());
        }
        (ValueRead::Amount, Value::Number(number)) => {
            tokens.push(extract::amount_of_number(number)?);
            return Some(());
        }
        (ValueRead::MinorUnits, _) => return None,
        _ => {}
    }
    let text: std::borrow::Cow<'_, str> = match element {
        Value::String(text) => text.into(),
        Value::Number(number) => extract::number_text(number).into(),
        _ => return None,
    };
    match read {
        ValueRead::Amount => tokens.push(extract::amount_of(&text)?),
        ValueRead::Value => {
            // A text read cut (links nested past what is read, more values than are read) may
            // read as a value it is not: it cannot be judged.
            // Nor can one naming more than one place (links chained or glued, a link whose
            // target reads as nothing, a list of addresses): the call goes where it is not read.
            let (token, reading) = extract::whole_reading(&text);
            if reading.is_cut() || !extract::names_one_place(&text) {
                return None;
            }
            tokens.extend(token);
        }
        ValueRead::Tokens => {
            let mut found = Vec::new();
            // A text nesting its values deeper than they are read cannot be judged.
            if extract::tokens(&text, &mut found).is_cut() {
                return None;
            }
            if kinds.is_empty() {
                tokens.extend(found);
                return Some(());
            }
            tokens.extend(
                found
                    .into_iter()
                    .filter(|token| TokenKind::of(token).is_some_and(|kind| kinds.contains(&kind))),
            );
        }
        ValueRead::Host => {
            let (host, reading) = extract::host_of(&text);
            if reading.is_cut() || !extract::names_one_place(&text) {
                return None;
            }
            tokens.push(host?);
        }
        ValueRead::MinorUnits => return None,
    }
    Some(())
}

/// A list's elements (nested lists by theirs), else the value; `null` is no element.
fn leaves<'v>(value: &'v Value, out: &mut Vec<&'v Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|item| leaves(item, out)),
        Value::Null => {}
        other => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_text_nesting_links_past_the_deepest_reading_cannot_be_judged() {
        let shallow = json!("https://a.example/?q=".repeat(5));
        let deep = json!("https://a.example/?q=".repeat(8_000));
        for kinds in [&[][..], &[TokenKind::Link]] {
            let read = values_at(ValueRead::Tokens, kinds, Some(&shallow));
            assert!(read.is_some_and(|tokens| !tokens.is_empty()));
            assert_eq!(values_at(ValueRead::Tokens, kinds, Some(&deep)), None);
            // In a list too.
            let list = json!([shallow.clone(), deep.clone()]);
            assert_eq!(values_at(ValueRead::Tokens, kinds, Some(&list)), None);
        }
    }
}
