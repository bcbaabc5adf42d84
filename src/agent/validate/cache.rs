//! Compiled JSON Schema validators, cached by the schema's text.
//!
//! Compiling a tool's schema costs far more than checking a call against it (callgrind: about a
//! third of a million instructions per call for the built-in tools, ~14 % of a tool turn), and a
//! run checks the same few schemas over and over. The key is the schema's serialised text, so
//! two schemas share a validator only when they are the same document; compilation is
//! deterministic (no remote references with the features this crate enables).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::Validator;
use serde_json::Value;

/// Enough for every tool of several sessions; past it the cache starts over rather than grow
/// without bound with generated schemas.
const CAPACITY: usize = 256;

static CACHE: LazyLock<Mutex<HashMap<String, Arc<Validator>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The validator of `schema`, compiled once per distinct schema; `Err` is the compiler's text.
pub(super) fn validator(schema: &Value) -> Result<Arc<Validator>, String> {
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
    fn an_invalid_schema_is_an_error_every_time() {
        let bad = json!({"type": 12});
        assert!(validator(&bad).is_err());
        assert!(validator(&bad).is_err());
    }
}
