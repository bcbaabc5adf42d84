//! Shared test support: one file per helper area.
