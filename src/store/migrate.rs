//! Upgrading older session files to v3 in memory (pi's `migrateSessionEntries`).
//!
//! v1 was linear (no ids; compaction pointed at `firstKeptEntryIndex`); v2 added the id tree;
//! v3 renamed the message role `hookMessage` to `custom`.

use serde_json::{Map, Value};

/// Migrates raw entry lines (header excluded) from `version` to v3. Returns whether anything
/// changed (the caller then rewrites the file).
pub fn migrate(version: u64, entries: &mut [Value], new_id: &mut dyn FnMut() -> String) -> bool {
    let mut changed = false;
    if version < 2 {
        let ids: Vec<String> = entries.iter().map(|_| new_id()).collect();
        let mut previous: Option<String> = None;
        for (entry, id) in entries.iter_mut().zip(&ids) {
            let Value::Object(map) = entry else { continue };
            map.insert("id".into(), Value::String(id.clone()));
            map.insert(
                "parentId".into(),
                previous.clone().map_or(Value::Null, Value::String),
            );
            if let Some(index) = map.remove("firstKeptEntryIndex") {
                let kept = index
                    .as_u64()
                    .and_then(|i| ids.get(i as usize))
                    .cloned()
                    .unwrap_or_default();
                map.insert("firstKeptEntryId".into(), Value::String(kept));
            }
            previous = Some(id.clone());
        }
        changed = true;
    }
    if version < 3 {
        for entry in entries.iter_mut() {
            if let Some(message) = entry.get_mut("message").and_then(Value::as_object_mut)
                && message.get("role").and_then(Value::as_str) == Some("hookMessage")
            {
                message.insert("role".into(), Value::String("custom".into()));
            }
        }
        changed = true;
    }
    changed
}

/// Sets the header's version to 3.
pub fn stamp_header(header: &mut Map<String, Value>) {
    header.insert("version".into(), Value::from(super::entry::CURRENT_VERSION));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1_entries_get_a_linear_tree_and_v3_roles() {
        let mut entries = vec![
            json!({"type": "message", "timestamp": "t", "message": {"role": "user", "content": "a", "timestamp": 1}}),
            json!({"type": "message", "timestamp": "t", "message": {"role": "hookMessage", "customType": "x", "content": "b", "display": true, "timestamp": 2}}),
            json!({"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 1, "tokensBefore": 9}),
        ];
        let mut n = 0;
        let mut next = || {
            n += 1;
            format!("{n:08x}")
        };
        assert!(migrate(1, &mut entries, &mut next));
        assert_eq!(entries[0]["parentId"], Value::Null);
        assert_eq!(entries[1]["parentId"], "00000001");
        assert_eq!(entries[1]["message"]["role"], "custom");
        assert_eq!(entries[2]["firstKeptEntryId"], "00000002");
    }
}
