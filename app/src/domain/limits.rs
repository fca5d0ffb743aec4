//! Input limits of SPEC §7 (configurable; these are the defaults).

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
