//! Registering sessions and creating rounds in them: what is stored, and what is refused.

use anteroom_store::domain::{
    ids::RequestId,
    round::{ElicitationRequest, RoundStatus},
    session::{NewSession, SessionStatus},
};
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

async fn registering_a_session_twice_returns_the_first(h: &Harness) {
    let first = register(h, "s1").await;
    assert_eq!(first.status, SessionStatus::Running);
    let again = h
        .store
        .register_session(NewSession {
            id: sid("s1"),
            title: Some("other".into()),
            agent: None,
        })
        .await
        .expect("register again");
    assert_eq!(again, first);
}

async fn created_round_is_pending_and_parks_session_in_needs_input(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(round.status, RoundStatus::Pending);
    assert_eq!(round.request_state.as_deref(), Some("opaque-state"));
    assert_eq!(round.summary, "book_shipment: Where to?");
    assert_eq!(
        h.store.get_round(round.round_id).await.expect("read"),
        round
    );
    let s = session(h, "s1").await;
    assert_eq!(s.status, SessionStatus::NeedsInput);
    assert!(s.blocked_on_elicitation);
}

async fn round_for_unknown_session_is_not_found(h: &Harness) {
    let error = refusal(
        h.store
            .create_round(new_round("ghost", vec![("a", form("?", None))]))
            .await,
    );
    assert_eq!(error.code(), "not_found");
    assert!(error.message().contains("ghost"));
}

async fn invalid_rounds_are_refused_and_nothing_is_stored(h: &Harness) {
    register(h, "s1").await;
    let empty = new_round("s1", vec![]);
    assert_eq!(
        refusal(h.store.create_round(empty).await).code(),
        "validation_error"
    );

    let mut past_limit = new_round("s1", vec![("a", form("?", None))]);
    past_limit.round_index = 3;
    assert_eq!(
        refusal(h.store.create_round(past_limit).await).code(),
        "validation_error"
    );

    let bad_schema = new_round(
        "s1",
        vec![(
            "a",
            ElicitationRequest::Form {
                message: "?".into(),
                requested_schema: json!({"type": "object", "properties": {"x": {"type": "strung"}}}),
                meta: None,
            },
        )],
    );
    let error = refusal(h.store.create_round(bad_schema).await);
    assert_eq!(error.code(), "validation_error");
    assert!(
        error.message().contains("requestedSchema"),
        "{}",
        error.message()
    );

    assert!(
        h.store
            .list_rounds(&sid("s1"))
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Running);
}

async fn cancelled_session_takes_no_new_rounds(h: &Harness) {
    register(h, "s1").await;
    h.store.cancel_session(&sid("s1")).await.expect("cancel");
    let error = refusal(
        h.store
            .create_round(new_round("s1", vec![("a", form("?", None))]))
            .await,
    );
    assert_eq!(error.code(), "managed_input_state");
}

async fn request_id_in_use_is_a_conflict(h: &Harness) {
    register(h, "s1").await;
    let mut first = new_round("s1", vec![("a", form("?", None))]);
    first.request_id = Some(RequestId::parse("req-1").expect("id"));
    h.store.create_round(first.clone()).await.expect("first");
    assert_eq!(
        refusal(h.store.create_round(first).await).code(),
        "managed_input_conflict"
    );
    let found = h
        .store
        .get_round_by_request_id(&RequestId::parse("req-1").expect("id"))
        .await
        .expect("by request id");
    assert_eq!(found.request_id.as_str(), "req-1");
}

crate::on_both_backends!(
    registering_a_session_twice_returns_the_first,
    created_round_is_pending_and_parks_session_in_needs_input,
    round_for_unknown_session_is_not_found,
    invalid_rounds_are_refused_and_nothing_is_stored,
    cancelled_session_takes_no_new_rounds,
    request_id_in_use_is_a_conflict,
);
