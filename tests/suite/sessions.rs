//! Integration tests: sessions.
