//! Integration tests: agent_core.
