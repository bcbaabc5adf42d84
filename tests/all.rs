//! All integration tests, in one binary so they link once (see tests/suite/).

mod suite;
