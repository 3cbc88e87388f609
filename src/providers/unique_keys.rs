//! Whether JSON text has a duplicate key in any object, read without building it: a gateway
//! checks every request body so, before the SDK parses it ([`super::strict`] builds the value).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

/// Whether `text` is one JSON value without a duplicate key in any object, read without
/// building it (a gateway checks every request body so, before the SDK parses it); the same
/// errors as [`parse`](super::strict::parse).
pub(crate) fn check_unique_keys(text: &str) -> Result<(), String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let checked = UniqueKeys::deserialize(&mut deserializer).and_then(|_| deserializer.end());
    match checked {
        Ok(()) => Ok(()),
        Err(error) if error.is_data() => Err(format!("not usable JSON: {error}")),
        Err(error) => Err(format!(
            "not valid JSON: syntax error at line {} column {}",
            error.line(),
            error.column()
        )),
    }
}

/// A JSON value read only to refuse a duplicate key.
struct UniqueKeys;

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

/// How many keys of one object are compared one by one before they go in a hash set.
const FEW_KEYS: usize = 16;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<UniqueKeys, E> {
        if value.is_finite() {
            Ok(UniqueKeys)
        } else {
            Err(E::custom("a number is not finite"))
        }
    }

    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<UniqueKeys, A::Error> {
        // Keys compared as read (escapes decoded: `"\u0070"` is `"p"`), borrowed from the text
        // where they have no escape.
        let mut few: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        let mut many = std::collections::HashSet::new();
        while let Some(Key(key)) = access.next_key::<Key<'de>>()? {
            let seen = if many.is_empty() && few.len() < FEW_KEYS {
                let seen = few.contains(&key);
                few.push(key);
                seen
            } else {
                many.extend(few.drain(..));
                !many.insert(key)
            };
            if seen {
                // The key is something the model sent: its position says where, not its text.
                return Err(de::Error::custom("duplicate key in one object"));
            }
            access.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}

/// An object's key, borrowed from the text when it can be.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(key)))
            }

            fn visit_str<E>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(key.to_owned())))
            }

            fn visit_string<E>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::providers::strict::parse;

    /// JSON text whose objects draw keys from a few spellings, some of one key (`a`, `\u0061`),
    /// nested up to three levels, with more than [`FEW_KEYS`] keys in some objects.
    fn json_text() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("a"),
            Just("\\u0061"),
            Just("b"),
            Just("p"),
            Just("\\u0070"),
            Just("é"),
            Just("\\u00e9"),
        ]
        .prop_map(str::to_owned);
        let leaf = prop_oneof![
            Just("1".to_owned()),
            Just("-2.5e3".to_owned()),
            Just("\"x\"".to_owned()),
            Just("null".to_owned()),
            Just("true".to_owned()),
        ];
        leaf.prop_recursive(3, 64, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec((key.clone(), inner), 0..5).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(key, value)| format!("\"{key}\":{value}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
                // Many distinct keys, and one of them again: past the keys compared one by one.
                (0_usize..40, any::<bool>()).prop_map(|(count, again)| {
                    let mut members: Vec<String> =
                        (0..count).map(|n| format!("\"k{n}\":{n}")).collect();
                    if again && count > 0 {
                        members.push(format!("\"k{}\":0", count - 1));
                    }
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// Checking without building agrees with parsing, whatever the text.
        #[test]
        fn checking_agrees_with_parsing(text in json_text(), tail in prop_oneof![Just(""), Just(" "), Just(" x"), Just("}")]) {
            let text = format!("{text}{tail}");
            prop_assert_eq!(check_unique_keys(&text), parse(&text).map(|_| ()), "{}", text);
        }
    }

    #[test]
    fn a_key_spelled_with_an_escape_is_the_same_key() {
        assert!(check_unique_keys(r#"{"p":1,"\u0070":2}"#).is_err());
        assert!(check_unique_keys(r#"{"p":1,"q":{"p":2}}"#).is_ok());
        let many: Vec<String> = (0..100).map(|n| format!("\"k{n}\":{n}")).collect();
        assert!(check_unique_keys(&format!("{{{}}}", many.join(","))).is_ok());
        assert!(check_unique_keys(&format!("{{{},\"k3\":0}}", many.join(","))).is_err());
    }
}
