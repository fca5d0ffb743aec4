//! The JSON-RPC lines between a harness and a server, as the wrapper reads and rewrites them.
//!
//! A line that is not a JSON object passes through unchanged; only the messages the wrapper handles are parsed
//! into anything more than a `Value`.

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use anteroom_domain::{
    ManagedInputError,
    round::{ElicitationRequest, OperationKind},
};
use serde_json::{Map, Value, json};

/// The key under which the 2026-07-28 revision carries a client's capabilities in every request's `_meta`.
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// The key under which the 2026-07-28 revision carries the protocol version in every request's `_meta`: its
/// presence is how the wrapper tells a modern request from a legacy one.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The error a server answers a tool call with when the person must first visit a URL (URL-mode elicitation).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// What a line is, by its JSON-RPC shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A request: it has a `method` and an `id`.
    Request { id: Value, method: String },
    /// A notification: a `method` and no `id`.
    Notification { method: String },
    /// A response: an `id` and a `result` or an `error`.
    Response { id: Value },
    /// Anything else (not JSON, a batch, a malformed message): passed on as it is.
    Other,
}

/// Reads `message`'s JSON-RPC shape.
pub fn classify(message: &Value) -> Line {
    let Some(object) = message.as_object() else {
        return Line::Other;
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    match (object.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Line::Request {
            id: id.clone(),
            method: method.to_owned(),
        },
        (Some(method), None) => Line::Notification {
            method: method.to_owned(),
        },
        (None, Some(id)) if object.contains_key("result") || object.contains_key("error") => {
            Line::Response { id: id.clone() }
        }
        _ => Line::Other,
    }
}

/// Adds both elicitation modes to an object of capabilities, keeping whatever else it declares (and any settings
/// of a mode the harness already declared).
fn declare_in(capabilities: &mut Map<String, Value>) -> bool {
    let entry = capabilities
        .entry("elicitation")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    let Some(modes) = entry.as_object_mut() else {
        return false;
    };
    // A bare `{}` meant form only before 2025-11-25; the wrapper answers both modes.
    let mut changed = false;
    for mode in ["form", "url"] {
        if !modes.get(mode).is_some_and(Value::is_object) {
            modes.insert(mode.to_owned(), json!({}));
            changed = true;
        }
    }
    changed
}

/// Legacy era: declares elicitation in the harness's `initialize` (many servers register their eliciting tools
/// only when the client declares it). Returns whether the message changed.
pub fn declare_elicitation_in_initialize(message: &mut Value) -> bool {
    if message.get("method").and_then(Value::as_str) != Some("initialize") {
        return false;
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return false;
    };
    let capabilities = params
        .entry("capabilities")
        .or_insert_with(|| Value::Object(Map::new()));
    match capabilities.as_object_mut() {
        Some(capabilities) => declare_in(capabilities),
        None => false,
    }
}

/// Modern era (2026-07-28): declares elicitation in a request's `_meta` client capabilities. Returns whether the
/// message changed; a message without `params` gets them.
pub fn declare_elicitation_in_meta(message: &mut Value) -> bool {
    let Some(object) = message.as_object_mut() else {
        return false;
    };
    let params = object
        .entry("params")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(params) = params.as_object_mut() else {
        return false;
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return false;
    };
    let capabilities = meta
        .entry(CLIENT_CAPABILITIES_META)
        .or_insert_with(|| Value::Object(Map::new()));
    match capabilities.as_object_mut() {
        Some(capabilities) => declare_in(capabilities),
        None => false,
    }
}

/// Whether a harness request speaks the 2026-07-28 revision (its `_meta` names the protocol version).
pub fn is_modern_request(message: &Value) -> bool {
    message
        .pointer("/params/_meta")
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_META))
}

/// The operation a question belongs to: what the banner names ("tool deploy", "prompt summary").
#[derive(Debug, Clone)]
pub struct Operation {
    pub kind: OperationKind,
    /// The tool or prompt name, or the resource URI.
    pub name: String,
    /// The harness's `_meta.progressToken`, when it asked to hear progress (and so waits while it comes).
    pub progress_token: Option<Value>,
    /// The request's `params` as the server received them, so the wrapper can retry it.
    pub params: Value,
    /// The method, for the retry.
    pub method: String,
    /// Whether the harness still waits for it: cleared when the server answers it or the harness cancels it,
    /// so progress notes for it stop (notes may only name requests still in progress).
    pub open: Arc<AtomicBool>,
    /// The last progress value the harness heard for it: every note for the call, across its questions and
    /// rounds, continues this count.
    pub progress: Arc<AtomicU64>,
}

impl Operation {
    /// The operation a harness request starts, if it is one a server may elicit during.
    pub fn of_request(method: &str, params: Option<&Value>) -> Option<Self> {
        let (kind, key) = match method {
            "tools/call" => (OperationKind::Tool, "name"),
            "prompts/get" => (OperationKind::Prompt, "name"),
            "resources/read" => (OperationKind::Resource, "uri"),
            _ => return None,
        };
        let name = params
            .and_then(|params| params.get(key))
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        let progress_token = params
            .and_then(|params| params.pointer("/_meta/progressToken"))
            .filter(|token| token.is_string() || token.is_number())
            .cloned();
        Some(Self {
            kind,
            name,
            progress_token,
            params: params.cloned().unwrap_or_else(|| json!({})),
            method: method.to_owned(),
            open: Arc::new(AtomicBool::new(true)),
            progress: Arc::default(),
        })
    }
}

/// The harness's requests the server has not answered yet that may elicit, by the harness's id.
#[derive(Debug, Default)]
pub struct Outstanding {
    by_id: HashMap<String, Operation>,
}

/// A JSON-RPC id as a map key: `1` and `"1"` are different ids.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Outstanding {
    /// Notes a harness request on its way to the server.
    pub fn started(&mut self, id: &Value, method: &str, params: Option<&Value>) {
        if let Some(operation) = Operation::of_request(method, params) {
            self.by_id.insert(id_key(id), operation);
        }
    }

    /// Forgets a request the server answered or the harness cancelled, returning the operation it was.
    pub fn finished(&mut self, id: &Value) -> Option<Operation> {
        let operation = self.by_id.remove(&id_key(id))?;
        operation.open.store(false, Ordering::Relaxed);
        Some(operation)
    }

    /// The operation a server's question belongs to: the only outstanding one, else unknown (the server asked
    /// while several calls were open, and a legacy `elicitation/create` does not say which).
    pub fn current(&self) -> Option<&Operation> {
        let mut operations = self.by_id.values();
        match (operations.next(), operations.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }
}

/// What a server's reply to a harness call needs before the call can finish, when the wrapper can supply it.
#[derive(Debug, Clone, PartialEq)]
pub enum NeedsInput {
    /// 2026-07-28: a result with `resultType: "input_required"` whose `inputRequests` are all
    /// `elicitation/create` (by the server's keys, in order), with the opaque state to echo. No requests and only a
    /// state means "retry as you are".
    InputRequired {
        requests: Vec<(String, Value)>,
        request_state: Option<String>,
    },
    /// A `-32042` error: the person must visit these URLs (`elicitation/create` params in URL mode) before the
    /// call is retried. `error` is the server's, for the harness when the person declines.
    UrlRequired {
        elicitations: Vec<Value>,
        error: Value,
    },
}

/// Reads a server's response as something the wrapper answers itself. `None` for a final result, any other
/// error, and an `input_required` that also asks for what only the harness can give (sampling, roots): those
/// pass through unchanged.
pub fn needs_input(response: &Value) -> Option<NeedsInput> {
    if let Some(error) = response.get("error") {
        if error.get("code").and_then(Value::as_i64) != Some(URL_ELICITATION_REQUIRED) {
            return None;
        }
        let elicitations = error.pointer("/data/elicitations")?.as_array()?;
        let all_urls = elicitations.iter().all(|elicitation| {
            elicitation.get("mode").and_then(Value::as_str) == Some("url")
                && elicitation.get("url").is_some_and(Value::is_string)
        });
        return (all_urls && !elicitations.is_empty()).then(|| NeedsInput::UrlRequired {
            elicitations: elicitations.clone(),
            error: error.clone(),
        });
    }
    let result = response.get("result")?;
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let request_state = match result.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(state)) => Some(state.clone()),
        Some(_) => return None,
    };
    let mut requests = Vec::new();
    if let Some(input_requests) = result.get("inputRequests") {
        for (key, request) in input_requests.as_object()? {
            if request.get("method").and_then(Value::as_str) != Some("elicitation/create") {
                return None;
            }
            requests.push((
                key.clone(),
                request.get("params").cloned().unwrap_or(Value::Null),
            ));
        }
    }
    (!requests.is_empty() || request_state.is_some()).then_some(NeedsInput::InputRequired {
        requests,
        request_state,
    })
}

/// A server's `elicitation/create` params as Anteroom's request (form or URL), checked the way a producer's are.
/// A URL question without an `elicitationId` (the 2026-07-28 shape: the server keeps track in its
/// `requestState`) gets `fallback_id` when one is given; a legacy one must carry its own.
pub fn elicitation_request(
    params: &Value,
    fallback_id: Option<&str>,
) -> Result<ElicitationRequest, ManagedInputError> {
    let invalid = |what: &str| ManagedInputError::validation(format!("elicitation/create: {what}"));
    let object = params
        .as_object()
        .ok_or_else(|| invalid("params must be an object"))?;
    let message = object
        .get("message")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("`message` is missing"))?
        .to_owned();
    // A progress token is the transport's business (the wrapper keeps it alive), not part of the question.
    let meta = object
        .get("_meta")
        .and_then(Value::as_object)
        .map(|meta| {
            let mut meta = meta.clone();
            meta.remove("progressToken");
            meta
        })
        .filter(|meta| !meta.is_empty());
    match object.get("mode").and_then(Value::as_str).unwrap_or("form") {
        "form" => Ok(ElicitationRequest::Form {
            message,
            requested_schema: object
                .get("requestedSchema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            meta,
        }),
        "url" => Ok(ElicitationRequest::Url {
            message,
            url: object
                .get("url")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("`url` is missing"))?
                .to_owned(),
            elicitation_id: object
                .get("elicitationId")
                .and_then(Value::as_str)
                .or(fallback_id)
                .ok_or_else(|| invalid("`elicitationId` is missing"))?
                .to_owned(),
            meta,
        }),
        other => Err(invalid(&format!("mode {other:?} is not form or url"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_by_their_shape() {
        assert_eq!(
            classify(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call"})),
            Line::Request {
                id: json!(7),
                method: "tools/call".into()
            }
        );
        assert_eq!(
            classify(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled"})),
            Line::Notification {
                method: "notifications/cancelled".into()
            }
        );
        assert_eq!(
            classify(&json!({"jsonrpc": "2.0", "id": "a", "result": {}})),
            Line::Response { id: json!("a") }
        );
        assert_eq!(classify(&json!([1, 2])), Line::Other);
        assert_eq!(classify(&json!({"id": 1})), Line::Other);
    }

    #[test]
    fn initialize_declares_both_modes_and_keeps_the_rest() {
        let mut message = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": true}, "elicitation": {"form": {"applyDefaults": true}}},
            "clientInfo": {"name": "harness", "version": "1"}
        }});
        assert!(declare_elicitation_in_initialize(&mut message));
        let capabilities = &message["params"]["capabilities"];
        assert_eq!(capabilities["roots"], json!({"listChanged": true}));
        assert_eq!(
            capabilities["elicitation"]["form"],
            json!({"applyDefaults": true})
        );
        assert_eq!(capabilities["elicitation"]["url"], json!({}));
        assert!(
            !declare_elicitation_in_initialize(&mut message),
            "a second pass changes nothing"
        );
        let mut other = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert!(!declare_elicitation_in_initialize(&mut other));
    }

    #[test]
    fn a_modern_request_declares_elicitation_in_its_meta() {
        let mut message = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "deploy",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      CLIENT_CAPABILITIES_META: {"sampling": {}}}
        }});
        assert!(declare_elicitation_in_meta(&mut message));
        let capabilities = &message["params"]["_meta"][CLIENT_CAPABILITIES_META];
        assert_eq!(capabilities["sampling"], json!({}));
        assert_eq!(capabilities["elicitation"], json!({"form": {}, "url": {}}));
        let mut bare = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
        assert!(
            declare_elicitation_in_meta(&mut bare),
            "a change to pass on"
        );
        assert_eq!(
            bare["params"]["_meta"][CLIENT_CAPABILITIES_META]["elicitation"],
            json!({"form": {}, "url": {}})
        );
    }

    #[test]
    fn a_question_belongs_to_the_only_open_operation() {
        let mut open = Outstanding::default();
        open.started(&json!(1), "tools/call", Some(&json!({"name": "deploy"})));
        open.started(&json!(2), "tools/list", None);
        let current = open.current().expect("one open operation");
        assert_eq!(
            (current.kind, current.name.as_str(), current.method.as_str()),
            (OperationKind::Tool, "deploy", "tools/call")
        );
        assert_eq!(current.params, json!({"name": "deploy"}));
        open.started(
            &json!("1"),
            "resources/read",
            Some(&json!({"uri": "file:///a"})),
        );
        assert!(open.current().is_none(), "two open operations: unknown");
        let finished = open.finished(&json!(1)).expect("was open");
        assert!(
            !finished.open.load(Ordering::Relaxed),
            "its progress notes stop"
        );
        assert_eq!(
            open.current().map(|operation| operation.name.as_str()),
            Some("file:///a")
        );
    }

    #[test]
    fn an_operation_keeps_the_harnesss_progress_token() {
        let operation = Operation::of_request(
            "tools/call",
            Some(&json!({"name": "deploy", "_meta": {"progressToken": "p-1"}})),
        )
        .expect("a tool call");
        assert_eq!(operation.progress_token, Some(json!("p-1")));
        let without = Operation::of_request("tools/call", Some(&json!({"name": "deploy"})));
        assert_eq!(without.and_then(|o| o.progress_token), None);
    }

    #[test]
    fn an_elicitation_only_input_required_result_is_the_wrappers_to_answer() {
        let response = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "inputRequests": {
                "env": {"method": "elicitation/create", "params": {"message": "Which?"}},
                "ok": {"method": "elicitation/create", "params": {"message": "Sure?"}}
            },
            "requestState": "opaque"
        }});
        let Some(NeedsInput::InputRequired {
            requests,
            request_state,
        }) = needs_input(&response)
        else {
            panic!("input required");
        };
        assert_eq!(requests.len(), 2);
        assert_eq!(request_state.as_deref(), Some("opaque"));
        let sampling = json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "input_required",
            "inputRequests": {
                "env": {"method": "elicitation/create", "params": {"message": "Which?"}},
                "llm": {"method": "sampling/createMessage", "params": {}}
            }
        }});
        assert_eq!(needs_input(&sampling), None, "left to the harness");
        let complete = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
        assert_eq!(needs_input(&complete), None);
        let empty = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required"}});
        assert_eq!(needs_input(&empty), None, "neither requests nor state");
    }

    #[test]
    fn a_url_elicitation_required_error_asks_for_consent() {
        let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32042, "message": "visit",
            "data": {"elicitations": [{"mode": "url", "message": "Sign in", "url": "https://example.com",
                                       "elicitationId": "e1"}]}}});
        assert!(matches!(
            needs_input(&error),
            Some(NeedsInput::UrlRequired { elicitations, .. }) if elicitations.len() == 1
        ));
        let other = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}});
        assert_eq!(needs_input(&other), None);
    }

    #[test]
    fn elicitation_create_reads_as_a_form_or_a_url_request() {
        let form = elicitation_request(
            &json!({
                "message": "Which environment?",
                "requestedSchema": {"type": "object", "properties": {"env": {"type": "string"}}},
                "_meta": {"progressToken": 7}
            }),
            None,
        )
        .expect("form");
        assert!(
            matches!(form, ElicitationRequest::Form { meta: None, .. }),
            "the progress token is not part of the question: {form:?}"
        );
        let url = elicitation_request(
            &json!({
                "mode": "url", "message": "Sign in", "url": "https://example.com/auth", "elicitationId": "e1"
            }),
            Some("unused"),
        )
        .expect("url");
        assert!(
            matches!(&url, ElicitationRequest::Url { elicitation_id, .. } if elicitation_id == "e1")
        );
        let url_only = json!({"mode": "url", "message": "x", "url": "https://example.com"});
        assert!(
            elicitation_request(&url_only, None).is_err(),
            "legacy: the id is required"
        );
        let modern = elicitation_request(&url_only, Some("login")).expect("2026-07-28 shape");
        assert!(
            matches!(&modern, ElicitationRequest::Url { elicitation_id, .. } if elicitation_id == "login")
        );
        assert!(elicitation_request(&json!({"mode": "sms", "message": "x"}), None).is_err());
        assert!(elicitation_request(&json!("nope"), None).is_err());
    }
}
