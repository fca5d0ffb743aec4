//! Input limits (docs/api.md#limits) (configurable; these are the defaults), and the characters no input may hold.

use serde_json::Value;

/// Bounds on what a producer may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Serialised size of one `requestedSchema`, in bytes.
    pub schema_bytes: usize,
    /// Properties in one `requestedSchema`.
    pub schema_properties: usize,
    /// Nesting depth of one `requestedSchema` (the top-level object is depth 1).
    pub schema_depth: usize,
    /// Characters in one request's `message`.
    pub message_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            schema_bytes: 64 * 1024,
            schema_properties: 100,
            schema_depth: 8,
            message_chars: 10_000,
        }
    }
}

/// Where in `value` a NUL character is (`.key[2]`; empty for `value` itself), or `None`. No database stores NUL
/// in text (PostgreSQL refuses it outright), so every backend refuses it the same way, before the database.
/// The path is built only when there is one.
pub fn nul_at(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => text.contains('\0').then(String::new),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| Some(format!("[{index}]{}", nul_at(item)?))),
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            if key.contains('\0') {
                return Some(format!(".{}", key.escape_debug()));
            }
            Some(format!(".{key}{}", nul_at(item)?))
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::nul_at;

    #[test]
    fn nul_characters_are_found_with_their_path() {
        assert_eq!(
            nul_at(&json!({"a": [1, "ok", "b\u{0}"]})).as_deref(),
            Some(".a[2]")
        );
        assert_eq!(nul_at(&json!({"k\u{0}": 1})).as_deref(), Some(".k\\0"));
        assert_eq!(nul_at(&json!({"a": "clean", "b": [true, null]})), None);
    }
}
