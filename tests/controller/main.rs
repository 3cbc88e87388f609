//! The controller, end to end: every path a call can take, the typestate from the outside, async
//! checks and handlers, hostile inputs, what `Debug` prints, what it lists, how it finds tools by
//! name and releases them, and a model-based run of the whole lifecycle.

#[path = "../support/common.rs"]
mod common;

mod async_checks;
mod async_handlers;
mod debug_redaction;
mod end_to_end;
mod hostile_inputs;
mod listing;
mod name_lookup;
mod reference_model;
mod tool_lifetimes;
mod typestate;
