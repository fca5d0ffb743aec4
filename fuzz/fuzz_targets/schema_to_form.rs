//! A producer's `requestedSchema` → the form a person sees, and the compiled validator answers meet.
#![no_main]

use anteroom_domain::{form::FormModel, limits::Limits};
use anteroom_store::schemas::CompiledSchema;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let limits = Limits::default();
    if let Ok(model) = FormModel::from_schema(&schema, &limits) {
        let _ = model.defaults();
    }
    let _ = CompiledSchema::compile(&schema, &limits);
});
