//! An answer (from a browser, the API, a Slack click or `/mcp`) checked against the question's schema: the form
//! model's checks and the JSON Schema validator, with producer patterns under their size limits.
#![no_main]

use anteroom_domain::limits::Limits;
use anteroom_store::schemas::CompiledSchema;
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
struct Checked {
    schema: String,
    answer: String,
}

fuzz_target!(|checked: Checked| {
    let Ok(schema) = serde_json::from_str::<Value>(&checked.schema) else {
        return;
    };
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(&checked.answer) else {
        return;
    };
    let Ok(compiled) = CompiledSchema::compile(&schema, &Limits::default()) else {
        return;
    };
    let _ = compiled.validate("answer", &answer);
});
