//! Compiled JSON Schema validators, cached by the schema's text.
//!
//! Compiling a tool's schema costs far more than checking a call against it (callgrind: about a
//! third of a million instructions per call for the built-in tools, ~14 % of a tool turn), and a
//! run checks the same few schemas over and over. The key is the schema's serialised text, so
//! two schemas share a validator only when they are the same document; compilation is
//! deterministic (no remote references with the features this crate enables).
//!
//! Serialising the schema for the key costs more than the check itself (~10,000 instructions
//! for `edit`'s schema), and a tool passes the same schema value every time: a first lookup by
//! the value's address finds it, confirmed by comparing it with a copy kept with the entry
//! (keys in order, so it is the same document; another schema later at the same address is
//! told apart by that comparison).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::Validator;
use serde_json::Value;

use crate::agent::transcript::same_text;

/// Enough for every tool of several sessions; past it the cache starts over rather than grow
/// without bound with generated schemas.
const CAPACITY: usize = 256;

static CACHE: LazyLock<Mutex<HashMap<String, Arc<Validator>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A schema seen at an address: a copy of it and its validator.
struct Seen {
    schema: Value,
    validator: Arc<Validator>,
}

static BY_ADDRESS: LazyLock<Mutex<HashMap<usize, Seen>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The validator of `schema`, compiled once per distinct schema; `Err` is the compiler's text.
pub(super) fn validator(schema: &Value) -> Result<Arc<Validator>, String> {
    let address = std::ptr::from_ref(schema) as usize;
    if let Some(seen) = lock_seen().get(&address)
        && same_text(&seen.schema, schema)
    {
        return Ok(seen.validator.clone());
    }
    let found = by_text(schema)?;
    let mut seen = lock_seen();
    if seen.len() >= CAPACITY {
        seen.clear();
    }
    let entry = Seen {
        schema: schema.clone(),
        validator: found.clone(),
    };
    seen.insert(address, entry);
    Ok(found)
}

/// The validator of `schema` by its text.
fn by_text(schema: &Value) -> Result<Arc<Validator>, String> {
    let Ok(key) = serde_json::to_string(schema) else {
        return compile(schema);
    };
    if let Some(found) = lock().get(&key) {
        return Ok(found.clone());
    }
    // Compiled outside the lock; a concurrent miss compiles the same schema twice, harmlessly.
    let compiled = compile(schema)?;
    let mut cache = lock();
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(key, compiled.clone());
    Ok(compiled)
}

fn compile(schema: &Value) -> Result<Arc<Validator>, String> {
    jsonschema::validator_for(schema)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<String, Arc<Validator>>> {
    // The map is valid after any panic elsewhere (inserts are single calls).
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock_seen() -> std::sync::MutexGuard<'static, HashMap<usize, Seen>> {
    BY_ADDRESS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_same_schema_gets_the_same_validator_and_a_different_one_its_own() {
        let a = json!({"type": "object", "properties": {"v": {"type": "string"}}});
        let b = json!({"type": "object", "properties": {"v": {"type": "integer"}}});
        let first = validator(&a).unwrap();
        assert!(Arc::ptr_eq(&first, &validator(&a.clone()).unwrap()));
        let other = validator(&b).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert!(first.is_valid(&json!({"v": "x"})));
        assert!(!other.is_valid(&json!({"v": "x"})));
    }

    #[test]
    fn another_schema_at_the_same_address_gets_its_own_validator() {
        let mut schema = json!({"type": "object", "properties": {"v": {"type": "string"}}});
        let first = validator(&schema).unwrap();
        assert!(Arc::ptr_eq(&first, &validator(&schema).unwrap()));
        // The same place now holds another schema, then one with the keys in another order.
        schema = json!({"type": "object", "properties": {"v": {"type": "integer"}}});
        let other = validator(&schema).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert!(other.is_valid(&json!({"v": 1})) && !other.is_valid(&json!({"v": "x"})));
        schema = json!({"properties": {"v": {"type": "integer"}}, "type": "object"});
        let reordered = validator(&schema).unwrap();
        assert!(!Arc::ptr_eq(&other, &reordered));
        assert!(same_text(&schema, &schema.clone()));
        assert!(!same_text(&json!([1, 2]), &json!([1])));
    }

    #[test]
    fn an_invalid_schema_is_an_error_every_time() {
        let bad = json!({"type": 12});
        assert!(validator(&bad).is_err());
        assert!(validator(&bad).is_err());
    }
}
