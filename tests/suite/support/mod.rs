//! Shared test support: one file per helper area.
pub mod tool_harness;
