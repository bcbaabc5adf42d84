//! Kept only for `provider/request_cache.rs` (which goes with the provider rewrite).

/// Appends `value` as compact JSON.
pub fn write<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    serde_json::to_writer(out, value)
}
