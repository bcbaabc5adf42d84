//! Integration tests: loop_conformance.
