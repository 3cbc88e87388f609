//! Compile-fail proofs: each file in `ui-tests/` attempts one named bypass of the pipeline and
//! must be rejected by the compiler for the reason its snapshot shows.
//!
//! Run without optional features (`cargo test --test ui`; `.ci/run` does): the bypasses are of
//! the core's types, and trybuild builds the crate again with every feature the test run enabled —
//! with all of them, a second build of SQLite's C sources, PostgreSQL, rmcp and axum that took
//! 125 s of CI's 14 minutes.
#![cfg(not(feature = "sqlite"))]

#[test]
fn bypasses_do_not_compile() {
    trybuild::TestCases::new().compile_fail("ui-tests/*.rs");
}
