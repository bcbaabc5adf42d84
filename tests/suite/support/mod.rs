//! Shared test support: one file per helper area.
pub mod mock_provider;
