//! The shared fixtures: valid ids, the usual address form, and one-line ways to ask and answer.

use std::collections::BTreeMap;

use anteroom_store::{
    StoreError,
    domain::{
        ManagedInputError,
        ids::{IdempotencyKey, OwnerId, RequestKey, SessionId},
        round::{
            ElicitationRequest, ElicitationResponse, NewRound, OperationKind, ResponseAction,
            Round, Submission,
        },
        session::{NewSession, Session},
    },
};
use serde_json::{Value, json};

use crate::support::Harness;

pub(crate) fn sid(id: &str) -> SessionId {
    SessionId::parse(id).expect("valid session id")
}

pub(crate) fn key(k: &str) -> RequestKey {
    RequestKey::parse(k).expect("valid request key")
}

pub(crate) fn idem(k: &str) -> IdempotencyKey {
    IdempotencyKey::parse(k).expect("valid idempotency key")
}

pub(crate) fn owner(o: &str) -> OwnerId {
    OwnerId::parse(o).expect("valid owner id")
}

pub(crate) fn address_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "floor": {"type": "integer", "minimum": 0}
        },
        "required": ["city"]
    })
}

pub(crate) fn form(message: &str, meta: Option<Value>) -> ElicitationRequest {
    ElicitationRequest::Form {
        message: message.to_owned(),
        requested_schema: address_schema(),
        meta: meta.and_then(|m| m.as_object().cloned()),
    }
}

pub(crate) fn new_round(session: &str, requests: Vec<(&str, ElicitationRequest)>) -> NewRound {
    NewRound {
        session_id: sid(session),
        request_id: None,
        logical_operation_id: "op-1".to_owned(),
        server: Some("shipping".to_owned()),
        operation_kind: OperationKind::Tool,
        operation_name: "book_shipment".to_owned(),
        requests: requests.into_iter().map(|(k, r)| (key(k), r)).collect(),
        request_state: Some("opaque-state".to_owned()),
        round_index: 0,
        round_limit: 3,
        deadline: None,
        fingerprint: None,
        asked_through: Default::default(),
    }
}

pub(crate) async fn register(h: &Harness, id: &str) -> Session {
    h.store
        .register_session(NewSession {
            id: sid(id),
            title: Some(format!("Session {id}")),
            agent: Some("claude-code".to_owned()),
        })
        .await
        .expect("register session")
}

/// A registered session with one open single-request form round.
pub(crate) async fn ask(h: &Harness, session: &str) -> Round {
    register(h, session).await;
    h.store
        .create_round(new_round(
            session,
            vec![("address", form("Where to?", None))],
        ))
        .await
        .expect("create round")
}

pub(crate) fn accept(content: Value) -> ElicitationResponse {
    ElicitationResponse {
        action: ResponseAction::Accept,
        content: content.as_object().cloned(),
        reason: None,
    }
}

/// An answer that carries no content (a decline, a dismissal, or consent to a URL).
pub(crate) fn bare(action: ResponseAction) -> ElicitationResponse {
    ElicitationResponse::new(action, None)
}

/// Another round of the usual question in an already registered session.
pub(crate) async fn ask_again(h: &Harness, session: &str) -> Round {
    h.store
        .create_round(new_round(session, vec![("address", form("?", None))]))
        .await
        .expect("create round")
}

pub(crate) fn only(
    k: &str,
    response: ElicitationResponse,
) -> BTreeMap<RequestKey, ElicitationResponse> {
    BTreeMap::from([(key(k), response)])
}

pub(crate) async fn answer(
    h: &Harness,
    round: &Round,
    response: ElicitationResponse,
    k: &str,
) -> Result<(Round, Submission), StoreError> {
    h.store
        .submit_responses(
            round.round_id,
            only("address", response),
            idem(k),
            Some("ada".to_owned()),
        )
        .await
}

pub(crate) fn refusal(result: Result<impl std::fmt::Debug, StoreError>) -> ManagedInputError {
    match result {
        Err(StoreError::Refused(error)) => error,
        other => panic!("expected a typed refusal, got {other:?}"),
    }
}

pub(crate) async fn session(h: &Harness, id: &str) -> Session {
    h.store.get_session(&sid(id)).await.expect("read session")
}

/// The actions of every audit entry so far, oldest first (the pending ones sealed first).
pub(crate) async fn audit_actions(h: &Harness) -> Vec<String> {
    h.store.seal_audit().await.expect("seal");
    h.store
        .audit_entries(0, None, 100)
        .await
        .expect("audit")
        .into_iter()
        .map(|entry| entry.action)
        .collect()
}
