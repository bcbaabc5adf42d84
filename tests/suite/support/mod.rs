//! Shared test support: one file per helper area.

pub mod pi_session;
