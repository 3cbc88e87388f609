//! The fresh name the analysis builds "any other value" and "any other caller" from: one no
//! string of the policies holds, however loosely they compare text.

use serde_json::Value;

/// The stem of the fresh name: the analysis uses the first of `zz-toolgate-fresh`,
/// `zz-toolgate-fresh-1`, … that no string of the policies compared holds ([`fresh_name`]).
const FRESH_STEM: &str = "zz-toolgate-fresh";

/// A name no string of `strings` holds, as any policy compares text (case folded, and normalized
/// where the feature is on): a value built from it equals no literal, lies in no root nor any
/// deeper root's child, and names no principal — so each class it stands for is really built.
pub(super) fn fresh_name<'a>(strings: impl IntoIterator<Item = &'a str>) -> String {
    let folded: Vec<String> = strings.into_iter().map(as_compared).collect();
    (0_u64..)
        .map(|n| {
            if n == 0 {
                FRESH_STEM.to_owned()
            } else {
                format!("{FRESH_STEM}-{n}")
            }
        })
        .find(|name| !folded.iter().any(|text| text.contains(name.as_str())))
        .unwrap_or_else(|| FRESH_STEM.to_owned())
}

/// `text` as the loosest comparison a policy can ask for reads it.
pub(super) fn as_compared(text: &str) -> String {
    #[cfg(feature = "unicode")]
    let text = crate::text::normalized(text);
    crate::text::fold_case(&text)
}

/// Every string in `value`, object keys too.
pub(super) fn strings_in<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| strings_in(item, out)),
        Value::Object(map) => {
            for (key, item) in map {
                out.push(key);
                strings_in(item, out);
            }
        }
        _ => {}
    }
}
