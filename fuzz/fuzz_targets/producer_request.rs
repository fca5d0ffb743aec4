//! A producer's create body (the pulsemcp client's, or any stranger's) → the question, checked as a round is
//! before it is stored.
#![no_main]

use std::collections::BTreeMap;

use anteroom_domain::{
    ids::{RequestKey, SessionId},
    limits::Limits,
    producer::parse_question,
    round::{AskedThrough, NewRound, OperationKind},
};
use anteroom_store::schemas::CompiledSchema;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(question) = parse_question(&body) else {
        return;
    };
    let Ok(key) = RequestKey::parse(question.request_id.as_str()) else {
        return;
    };
    let Ok(session_id) = SessionId::parse("fuzz") else {
        return;
    };
    let limits = Limits::default();
    if let anteroom_domain::round::ElicitationRequest::Form {
        requested_schema, ..
    } = &question.request
    {
        let _ = CompiledSchema::compile(requested_schema, &limits);
    }
    let new = NewRound {
        session_id,
        request_id: Some(question.request_id.clone()),
        logical_operation_id: question.request_id.to_string(),
        server: question.server,
        operation_kind: OperationKind::Tool,
        operation_name: question.tool_name.unwrap_or_default(),
        requests: BTreeMap::from([(key, question.request)]),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: None,
        fingerprint: None,
        asked_through: AskedThrough::default(),
    };
    let _ = new.validate(&limits);
});
