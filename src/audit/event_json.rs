//! An audit event's canonical JSON, written field by field.
//!
//! Every sink hashes and stores an event in canonical form (keys in byte order, no whitespace,
//! strings escaped as `serde_json` escapes them). Going through a `serde_json::Value` first built
//! a map of owned keys and values only to walk and free it: about a fifth of the CPU an audited
//! call cost. An event is a flat struct of strings, integers and string-valued enums, so its
//! canonical form can be written directly. Debug builds (every test) check each event written
//! here against the general path, so a field added to [`AuditEvent`] and not here fails the first
//! test that records it.

use serde::Serialize;

use super::AuditEvent;
use crate::canonical::{push_string, push_unsigned};

/// `event` in canonical JSON, as `canonical_json(&serde_json::to_value(event)?)` writes it.
pub(super) fn canonical_event(event: &AuditEvent) -> Result<String, serde_json::Error> {
    let mut object = Object {
        out: String::with_capacity(512),
        members: 0,
    };
    // In byte order of the keys.
    object.serialized("action", event.action.as_ref())?;
    object.serialized("approval_id", event.approval_id.as_ref())?;
    object.string("approver", event.approver.as_deref());
    let commitment = Some(event.argument_commitment.as_str()).filter(|text| !text.is_empty());
    object.string("argument_commitment", commitment);
    object.string("argument_digest", event.argument_digest.as_deref());
    object.string("call_id", Some(&event.call_id));
    object.string("definition_digest", event.definition_digest.as_deref());
    if let Some(flag) = event.is_error {
        object.key("is_error");
        object.out.push_str(if flag { "true" } else { "false" });
    }
    object.serialized("kind", Some(&event.kind))?;
    object.string("layer", event.layer.as_deref());
    object.string("note", event.note.as_deref());
    object.string("policy_digest", event.policy_digest.as_deref());
    object.string("principal", event.principal.as_deref());
    object.string("reason", event.reason.as_deref());
    object.string("rule_id", event.rule_id.as_deref());
    object.key("time_ms");
    push_unsigned(&mut object.out, event.time_ms);
    object.string("tool", Some(&event.tool));
    let mut text = object.out;
    text.push('}');
    if cfg!(debug_assertions) {
        let general = crate::canonical::canonical_json(&serde_json::to_value(event)?);
        assert_eq!(
            text, general,
            "an AuditEvent field is missing from event_json.rs"
        );
    }
    Ok(text)
}

struct Object {
    out: String,
    members: usize,
}

impl Object {
    fn key(&mut self, key: &str) {
        self.out.push(if self.members == 0 { '{' } else { ',' });
        self.members += 1;
        push_string(&mut self.out, key);
        self.out.push(':');
    }

    fn string(&mut self, key: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.key(key);
            push_string(&mut self.out, value);
        }
    }

    /// A member whose value serializes to a JSON string (an enum's name, an id).
    fn serialized<T: Serialize>(
        &mut self,
        key: &str,
        value: Option<&T>,
    ) -> Result<(), serde_json::Error> {
        if let Some(value) = value {
            self.key(key);
            let text = serde_json::to_value(value)?;
            let serde_json::Value::String(text) = text else {
                return Err(serde::ser::Error::custom(format!("{key} is not a string")));
            };
            push_string(&mut self.out, &text);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_field_is_written_as_the_general_path_writes_it() {
        let every_field = json!({
            "action": "ask", "approval_id": "00112233445566778899aabbccddeeff",
            "approver": "ops\u{1}\"lead\"", "argument_commitment": "salted-sha256:ab",
            "argument_digest": "sha256:cd", "call_id": "c\n1\u{2028}", "definition_digest": "sha256:ef",
            "is_error": false, "kind": "approval_requested", "layer": "team",
            "note": "naïve \\ note", "policy_digest": "sha256:01", "principal": "alice",
            "reason": "because", "rule_id": "r-1", "time_ms": 18446744073709551615_u64,
            "tool": "shell"
        });
        let event: AuditEvent = serde_json::from_value(every_field.clone()).unwrap();
        let general = serde_json::to_value(&event).unwrap();
        assert_eq!(
            general.as_object().unwrap().len(),
            every_field.as_object().unwrap().len(),
            "AuditEvent has a field this fixture does not set: add it here and to canonical_event"
        );
        let text = canonical_event(&event).unwrap();
        assert_eq!(text, crate::canonical::canonical_json(&general));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            general
        );

        // And with every optional field absent.
        let bare: AuditEvent = serde_json::from_value(
            json!({"call_id": "", "kind": "call_received", "time_ms": 0, "tool": ""}),
        )
        .unwrap();
        assert_eq!(
            canonical_event(&bare).unwrap(),
            r#"{"call_id":"","kind":"call_received","time_ms":0,"tool":""}"#
        );
    }
}
