//! Sessions persisted as JSONL in pi's session format v3.
