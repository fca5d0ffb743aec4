//! What a browser posts (name/value pairs, as the no-JavaScript form sends them) → an answer's content.
#![no_main]

use anteroom_domain::{form::FormModel, limits::Limits};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[derive(Arbitrary, Debug)]
struct Posted {
    schema: String,
    pairs: Vec<(String, String)>,
}

fuzz_target!(|posted: Posted| {
    let Ok(schema) = serde_json::from_str::<Value>(&posted.schema) else {
        return;
    };
    let Ok(model) = FormModel::from_schema(&schema, &Limits::default()) else {
        return;
    };
    // Fields are posted as `{prefix}{name}`; the fuzzer's pairs may name them with or without it.
    let _ = model.read_posted("", &posted.pairs);
    let _ = model.read_posted("q1/", &posted.pairs);
});
