//! Compile-fail proofs: each file in `ui-tests/` attempts one named bypass of the pipeline and
//! must be rejected by the compiler for the reason its snapshot shows.

#[test]
fn bypasses_do_not_compile() {
    trybuild::TestCases::new().compile_fail("ui-tests/*.rs");
}
