//! Answers: validation and idempotency of what a responder submits.

use std::collections::BTreeMap;

use anteroom_store::domain::{
    outward::{PollAction, outward_answer},
    round::{ElicitationRequest, ElicitationResponse, ResponseAction, RoundStatus, Submission},
};
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

async fn same_key_and_same_answer_replays_the_stored_record(h: &Harness) {
    let round = ask(h, "s1").await;
    let (stored, first) = answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    assert_eq!(first, Submission::Recorded);
    assert_eq!(stored.responded_by.as_deref(), Some("ada"));
    let (again, second) = answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("retry");
    assert_eq!(second, Submission::Replayed);
    assert_eq!(again, stored);
}

async fn same_key_with_another_answer_conflicts(h: &Harness) {
    let round = ask(h, "s1").await;
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let error = refusal(answer(h, &round, accept(json!({"city": "Goa"})), "k1").await);
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(
        error.message().contains("idempotency key"),
        "{}",
        error.message()
    );
}

async fn second_answer_is_refused_naming_the_winner(h: &Harness) {
    let round = ask(h, "s1").await;
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let error = refusal(
        h.store
            .submit_responses(
                round.round_id,
                only("address", bare(ResponseAction::Decline)),
                idem("k2"),
                Some("bob".into()),
            )
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("ada"), "{}", error.message());
    let details = error.details().expect("details");
    assert_eq!(details["answered_by"], "ada");
    assert_eq!(details["actions"]["address"], "accept");
}

async fn response_map_must_hold_exactly_the_pending_keys(h: &Harness) {
    register(h, "s1").await;
    let round = h
        .store
        .create_round(new_round(
            "s1",
            vec![("a", form("A?", None)), ("b", form("B?", None))],
        ))
        .await
        .expect("create");
    let decline = || bare(ResponseAction::Decline);
    let missing = refusal(
        h.store
            .submit_responses(round.round_id, only("a", decline()), idem("k1"), None)
            .await,
    );
    assert_eq!(missing.code(), "validation_error");
    assert_eq!(missing.details().expect("details")["missing"], json!(["b"]));

    let extra = BTreeMap::from([
        (key("a"), decline()),
        (key("b"), decline()),
        (key("c"), decline()),
    ]);
    let unknown = refusal(
        h.store
            .submit_responses(round.round_id, extra, idem("k2"), None)
            .await,
    );
    assert_eq!(unknown.details().expect("details")["unknown"], json!(["c"]));
    assert_eq!(
        h.store
            .get_round(round.round_id)
            .await
            .expect("read")
            .status,
        RoundStatus::Pending
    );

    let both = BTreeMap::from([
        (key("a"), decline()),
        (key("b"), accept(json!({"city": "Pune"}))),
    ]);
    let (answered, _) = h
        .store
        .submit_responses(round.round_id, both, idem("k3"), None)
        .await
        .expect("exact keys");
    assert_eq!(answered.status, RoundStatus::ResponseValidated);
}

async fn invalid_content_leaves_the_round_pending_with_field_errors(h: &Harness) {
    let round = ask(h, "s1").await;
    let error = refusal(answer(h, &round, accept(json!({"city": "P", "floor": -1})), "k1").await);
    assert_eq!(error.code(), "validation_error");
    let fields = &error.details().expect("details")["fields"];
    assert_eq!(fields["city"][0], "must be at least 2 characters");
    assert_eq!(fields["floor"][0], "must be at least 0");
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(read.status, RoundStatus::Pending);
    assert!(read.idempotency_key.is_none(), "a refused key is not burnt");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("the same key works once valid");
}

/// An answer checked against the round its caller has just read (the REST and web answers read it first) is
/// refused, recorded and replayed exactly as one submitted by the round's id.
async fn an_answer_checked_against_the_round_read_first_counts_as_one_by_id(h: &Harness) {
    let round = ask(h, "s1").await;
    let submit = |content| {
        h.store.submit_responses_to(
            &round,
            only("address", accept(content)),
            idem("k1"),
            Some("ada".to_owned()),
        )
    };
    let error = refusal(submit(json!({"city": "P"})).await);
    assert_eq!(error.code(), "validation_error");
    assert_eq!(
        error.details().expect("details")["fields"]["city"][0],
        "must be at least 2 characters"
    );
    let (stored, first) = submit(json!({"city": "Pune"})).await.expect("answer");
    assert_eq!(first, Submission::Recorded);
    assert_eq!(stored.status, RoundStatus::ResponseValidated);
    assert_eq!(
        stored,
        h.store.get_round(round.round_id).await.expect("read")
    );
    // `round` is stale now; the write transaction still sees the recorded answer.
    let (again, second) = submit(json!({"city": "Pune"})).await.expect("replay");
    assert_eq!((again, second), (stored, Submission::Replayed));
    let error = refusal(answer(h, &round, accept(json!({"city": "Goa"})), "k1").await);
    assert_eq!(error.code(), "managed_input_conflict");
}

async fn decline_and_cancel_content_is_dropped(h: &Harness) {
    let round = ask(h, "s1").await;
    let (stored, _) = answer(
        h,
        &round,
        ElicitationResponse {
            action: ResponseAction::Decline,
            content: json!({"city": "secret"}).as_object().cloned(),
            reason: None,
        },
        "k1",
    )
    .await
    .expect("decline");
    let response = &stored.responses.as_ref().expect("responses")[&key("address")];
    assert!(response.content.is_none(), "never stored");
    assert!(
        outward_answer(&stored, "address").content.is_none(),
        "never replayed"
    );
    assert_eq!(
        h.store
            .get_round(round.round_id)
            .await
            .expect("read")
            .responses,
        stored.responses
    );

    let other = ask_again(h, "s1").await;
    let (stored, _) = answer(
        h,
        &other,
        ElicitationResponse {
            action: ResponseAction::Cancel,
            content: json!({"x": 1}).as_object().cloned(),
            reason: None,
        },
        "k2",
    )
    .await
    .expect("cancel");
    assert!(
        stored.responses.expect("responses")[&key("address")]
            .content
            .is_none()
    );
}

async fn url_accept_records_consent_and_refuses_content(h: &Harness) {
    register(h, "s1").await;
    let url = ElicitationRequest::Url {
        message: "Sign in to continue".into(),
        url: "https://auth.example.com/login".into(),
        elicitation_id: "e-1".into(),
        meta: None,
    };
    let round = h
        .store
        .create_round(new_round("s1", vec![("consent", url)]))
        .await
        .expect("create");
    let with_content = only("consent", accept(json!({"token": "x"})));
    let error = refusal(
        h.store
            .submit_responses(round.round_id, with_content, idem("k1"), None)
            .await,
    );
    assert_eq!(error.code(), "validation_error");
    let consent = only("consent", bare(ResponseAction::Accept));
    let (stored, _) = h
        .store
        .submit_responses(round.round_id, consent, idem("k2"), None)
        .await
        .expect("consent");
    assert_eq!(
        outward_answer(&stored, "consent").action,
        PollAction::Accept
    );
    assert!(outward_answer(&stored, "consent").content.is_none());
}

crate::on_both_backends!(
    same_key_and_same_answer_replays_the_stored_record,
    same_key_with_another_answer_conflicts,
    second_answer_is_refused_naming_the_winner,
    response_map_must_hold_exactly_the_pending_keys,
    invalid_content_leaves_the_round_pending_with_field_errors,
    an_answer_checked_against_the_round_read_first_counts_as_one_by_id,
    decline_and_cancel_content_is_dropped,
    url_accept_records_consent_and_refuses_content,
);
