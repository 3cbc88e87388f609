//! How long a controller holds its tools: tools (and what their handlers hold) are released when
//! the controller is dropped or its registry replaced, even on a thread that keeps a copy of the
//! gate for speed; the generation counts each replacement in force and nothing else.

use std::sync::Arc;

use crate::common::*;
use serde_json::{Value, json};
use toolgate::*;

/// A tool whose handler holds `token`: while the tool lives, the token has one more owner.
fn holding(name: &str, token: &Arc<()>) -> ToolDefinition {
    let token = Arc::clone(token);
    ToolDefinition::new(
        ToolSpec::new(name, "Holds a resource.", json!({"type": "object"})),
        move |_: &Value| -> Result<String, ToolError> {
            Ok(format!("{}", Arc::strong_count(&token)))
        },
    )
    .unwrap()
}

#[test]
fn dropping_a_controller_releases_its_tools_on_the_thread_that_called_it() {
    let token = Arc::new(());
    let controller =
        ToolController::new(registry([holding("hold", &token)]), policy(&["hold"], &[]));
    let Outcome::Completed(result) = controller.handle(ToolCall::new("c", "hold", json!({})))
    else {
        panic!("hold is allowed");
    };
    assert_eq!(result.content, "2");
    assert_eq!(Arc::strong_count(&token), 2);
    drop(controller);
    assert_eq!(
        Arc::strong_count(&token),
        1,
        "the tool outlived its controller"
    );
}

#[test]
fn a_replaced_registry_is_released_after_the_next_call_on_that_thread() {
    let (old, new) = (Arc::new(()), Arc::new(()));
    let controller = ToolController::new(registry([holding("hold", &old)]), policy(&["hold"], &[]));
    let _ = controller.handle(ToolCall::new("c1", "hold", json!({})));
    controller
        .replace_registry(registry([holding("hold", &new)]))
        .unwrap();
    let _ = controller.handle(ToolCall::new("c2", "hold", json!({})));
    assert_eq!(
        Arc::strong_count(&old),
        1,
        "the replaced tool is still held"
    );
    assert_eq!(Arc::strong_count(&new), 2);
}

#[test]
fn one_controller_dropped_leaves_another_on_the_same_thread_working() {
    let (first, second) = (Arc::new(()), Arc::new(()));
    let a = ToolController::new(registry([holding("hold", &first)]), policy(&["hold"], &[]));
    let b = ToolController::new(registry([holding("hold", &second)]), policy(&["hold"], &[]));
    let _ = a.handle(ToolCall::new("a", "hold", json!({})));
    let _ = b.handle(ToolCall::new("b", "hold", json!({})));
    drop(a);
    assert_eq!(Arc::strong_count(&first), 1);
    assert_eq!(Arc::strong_count(&second), 2);
    let Outcome::Completed(result) = b.handle(ToolCall::new("b2", "hold", json!({}))) else {
        panic!("hold is allowed");
    };
    assert!(!result.is_error);
}

#[test]
fn generation_counts_each_replacement_in_force_and_nothing_else() {
    let token = Arc::new(());
    let controller =
        ToolController::new(registry([holding("hold", &token)]), policy(&["hold"], &[]));
    let start = controller.generation();
    let _ = controller.handle(ToolCall::new("c", "hold", json!({})));
    assert_eq!(controller.generation(), start, "a call replaces nothing");
    controller
        .replace_registry(registry([holding("hold", &token)]))
        .unwrap();
    assert_eq!(controller.generation(), start + 1);
    controller.replace_policy(policy(&[], &["hold"])).unwrap();
    assert_eq!(controller.generation(), start + 2);
}
