//! All integration tests, in one binary so they link once (see tests/suite/).
// Tests may unwrap: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
