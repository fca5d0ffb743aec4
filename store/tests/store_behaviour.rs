//! The store's behaviour, written once and run against SQLite and PostgreSQL: every rule of docs/lifecycle.md, docs/deadlines.md and
//! §5.3 by name. Time moves only through the harness's manual clock.

mod support;

use std::collections::BTreeMap;

use anteroom_store::{
    StoreError,
    domain::{
        ManagedInputError,
        access::{Role, User},
        answer::{PollAction, outward_answer},
        clock::Clock,
        expiry::ExpiryPolicy,
        ids::{IdempotencyKey, LeaseToken, OwnerId, RequestId, RequestKey, RoundId, SessionId},
        round::{
            AskedThrough, ElicitationRequest, ElicitationResponse, FailureCode, NewRound,
            OperationKind, ResponseAction, Round, RoundStatus, Submission,
        },
        session::{LostReason, NewSession, Session, SessionStatus},
        webhook::AttemptOutcome,
    },
};
use chrono::Duration;
use serde_json::{Value, json};
use support::Harness;

// ---------------------------------------------------------------------------------------------------------
// Fixtures

fn sid(id: &str) -> SessionId {
    SessionId::parse(id).expect("valid session id")
}

fn key(k: &str) -> RequestKey {
    RequestKey::parse(k).expect("valid request key")
}

fn idem(k: &str) -> IdempotencyKey {
    IdempotencyKey::parse(k).expect("valid idempotency key")
}

fn owner(o: &str) -> OwnerId {
    OwnerId::parse(o).expect("valid owner id")
}

fn address_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "floor": {"type": "integer", "minimum": 0}
        },
        "required": ["city"]
    })
}

fn form(message: &str, meta: Option<Value>) -> ElicitationRequest {
    ElicitationRequest::Form {
        message: message.to_owned(),
        requested_schema: address_schema(),
        meta: meta.and_then(|m| m.as_object().cloned()),
    }
}

fn new_round(session: &str, requests: Vec<(&str, ElicitationRequest)>) -> NewRound {
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

async fn register(h: &Harness, id: &str) -> Session {
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
async fn ask(h: &Harness, session: &str) -> Round {
    register(h, session).await;
    h.store
        .create_round(new_round(
            session,
            vec![("address", form("Where to?", None))],
        ))
        .await
        .expect("create round")
}

fn accept(content: Value) -> ElicitationResponse {
    ElicitationResponse {
        action: ResponseAction::Accept,
        content: content.as_object().cloned(),
    }
}

/// An answer that carries no content (a decline, a dismissal, or consent to a URL).
fn bare(action: ResponseAction) -> ElicitationResponse {
    ElicitationResponse {
        action,
        content: None,
    }
}

/// Another round of the usual question in an already registered session.
async fn ask_again(h: &Harness, session: &str) -> Round {
    h.store
        .create_round(new_round(session, vec![("address", form("?", None))]))
        .await
        .expect("create round")
}

fn only(k: &str, response: ElicitationResponse) -> BTreeMap<RequestKey, ElicitationResponse> {
    BTreeMap::from([(key(k), response)])
}

async fn answer(
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

fn refusal(result: Result<impl std::fmt::Debug, StoreError>) -> ManagedInputError {
    match result {
        Err(StoreError::Refused(error)) => error,
        other => panic!("expected a typed refusal, got {other:?}"),
    }
}

async fn session(h: &Harness, id: &str) -> Session {
    h.store.get_session(&sid(id)).await.expect("read session")
}

// ---------------------------------------------------------------------------------------------------------
// Sessions and round creation

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

// ---------------------------------------------------------------------------------------------------------
// Expiry (docs/deadlines.md)

async fn default_deadline_is_sixty_minutes(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(
        round.deadline,
        support::start_time() + Duration::minutes(60)
    );
}

async fn producer_expires_at_outranks_the_default(h: &Harness) {
    register(h, "s1").await;
    let at = support::start_time() + Duration::minutes(10);
    let meta = json!({"com.pulsemcp/expires-at": at.to_rfc3339()});
    let round = h
        .store
        .create_round(new_round("s1", vec![("a", form("?", Some(meta)))]))
        .await
        .expect("create");
    assert_eq!(round.deadline, at);
}

async fn deadlines_follow_how_far_the_asker_is_trusted(h: &Harness) {
    register(h, "s1").await;
    let now = support::start_time();
    let past = json!({"com.pulsemcp/expires-at": (now - Duration::hours(1)).to_rfc3339()});
    let refused = h
        .store
        .create_round(new_round("s1", vec![("a", form("?", Some(past.clone())))]))
        .await
        .expect_err("a trusted asker's past deadline is refused");
    assert_eq!(
        refused.refusal().map(ManagedInputError::code),
        Some("validation_error")
    );

    let mut anonymous = new_round("s1", vec![("a", form("?", Some(past)))]);
    anonymous.asked_through = AskedThrough::Anonymous;
    let round = h.store.create_round(anonymous).await.expect("create");
    assert_eq!(
        round.deadline,
        now + Duration::minutes(1),
        "an anonymous asker never mints a born-expired question"
    );
    assert_eq!(round.status, RoundStatus::Pending);

    let soon = json!({"com.pulsemcp/expires-at": (now + Duration::seconds(20)).to_rfc3339()});
    let round = h
        .store
        .create_round(new_round("s1", vec![("c", form("?", Some(soon)))]))
        .await
        .expect("create");
    assert_eq!(
        round.deadline,
        now + Duration::seconds(20),
        "the asker's own deadline ends it"
    );
    assert_eq!(round.asker_deadline, Some(round.deadline));
    assert!(round.deadline_is_askers());

    let mut far = new_round("s1", vec![("b", form("?", None))]);
    far.deadline = Some(now + Duration::days(400));
    let round = h.store.create_round(far).await.expect("create");
    assert_eq!(
        round.deadline,
        now + Duration::days(7),
        "never pinned for years"
    );
}

async fn operator_minutes_set_the_default_window(same_backend: &Harness) {
    // The operator's setting is part of the store's options, so this rule builds its own store.
    let h = same_backend
        .like_with(ExpiryPolicy {
            operator_minutes: Some(15),
        })
        .await;
    let round = ask(&h, "s1").await;
    assert_eq!(
        round.deadline,
        support::start_time() + Duration::minutes(15)
    );
    h.finish().await;
}

async fn reading_an_overdue_round_expires_it(h: &Harness) {
    let round = ask(h, "s1").await;
    h.clock.advance(Duration::minutes(61));
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(read.status, RoundStatus::Failed);
    assert_eq!(
        read.failure.as_ref().map(|f| f.code.clone()),
        Some(FailureCode::Expired)
    );
    assert_eq!(outward_answer(&read, "address").action, PollAction::Expired);

    let s = session(h, "s1").await;
    assert_eq!(
        s.status,
        SessionStatus::Running,
        "the agent went on without approval"
    );
    assert!(!s.blocked_on_elicitation);
    let lost = s.lost_elicitation.expect("lost-elicitation marker");
    assert_eq!(lost.reason, LostReason::Expired);
    assert_eq!(lost.request_id, read.request_id);
    assert_eq!(lost.summary, "book_shipment: Where to?");
}

async fn answer_after_the_deadline_is_refused_even_before_any_sweep(h: &Harness) {
    let round = ask(h, "s1").await;
    h.clock.advance(Duration::minutes(60));
    let error = refusal(answer(h, &round, accept(json!({"city": "Pune"})), "k1").await);
    assert_eq!(error.code(), "managed_input_state");
    assert!(error.message().contains("expired"), "{}", error.message());
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(
        read.status,
        RoundStatus::Failed,
        "the refusal still recorded the expiry"
    );
    assert!(read.responses.is_none());
}

async fn expiry_sweep_expires_only_due_rounds(h: &Harness) {
    let early = ask(h, "s1").await;
    register(h, "s2").await;
    let mut later = new_round("s2", vec![("a", form("?", None))]);
    later.deadline = Some(support::start_time() + Duration::minutes(90));
    let later = h.store.create_round(later).await.expect("create");

    h.clock.advance(Duration::minutes(61));
    let expired = h.store.expire_due_rounds().await.expect("sweep");
    assert_eq!(
        expired.iter().map(|r| r.round_id).collect::<Vec<_>>(),
        vec![early.round_id]
    );
    assert_eq!(
        h.store
            .get_round(later.round_id)
            .await
            .expect("read")
            .status,
        RoundStatus::Pending
    );
    assert!(
        h.store
            .expire_due_rounds()
            .await
            .expect("sweep again")
            .is_empty(),
        "one effect per round"
    );
}

async fn expiry_with_another_active_round_keeps_needs_input(h: &Harness) {
    register(h, "s1").await;
    let now = support::start_time();
    let mut short = new_round("s1", vec![("a", form("?", None))]);
    short.deadline = Some(now + Duration::minutes(5));
    h.store.create_round(short).await.expect("short");
    h.store
        .create_round(new_round("s1", vec![("b", form("?", None))]))
        .await
        .expect("long");
    h.clock.advance(Duration::minutes(6));
    h.store.expire_due_rounds().await.expect("sweep");
    let s = session(h, "s1").await;
    assert_eq!(s.status, SessionStatus::NeedsInput);
    assert!(s.blocked_on_elicitation);
    assert!(s.lost_elicitation.is_none());
}

async fn expiry_keeps_a_failed_session_failed(h: &Harness) {
    let waiting = ask(h, "s1").await;
    let delivering = h
        .store
        .create_round(new_round("s1", vec![("address", form("And?", None))]))
        .await
        .expect("second");
    let lease = h
        .store
        .claim_round(delivering.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    answer(h, &delivering, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    h.store
        .start_delivery(delivering.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("start");
    h.clock.advance(Duration::seconds(31));
    h.store.recover_leases().await.expect("recover");
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);

    h.clock.advance(Duration::minutes(60));
    assert_eq!(
        h.store
            .get_round(waiting.round_id)
            .await
            .expect("read")
            .status,
        RoundStatus::Failed
    );
    let s = session(h, "s1").await;
    assert_eq!(
        s.status,
        SessionStatus::Failed,
        "an ended session keeps its status"
    );
    assert_eq!(
        s.lost_elicitation.map(|l| l.reason),
        Some(LostReason::Expired)
    );
}

// ---------------------------------------------------------------------------------------------------------
// The outward answer (docs/protocol.md#the-outward-answer)

async fn outward_answer_follows_the_table(h: &Harness) {
    let pending = ask(h, "s1").await;
    let a = outward_answer(&pending, "address");
    assert_eq!((a.action, a.content.is_none()), (PollAction::Pending, true));

    let (accepted, _) = answer(
        h,
        &pending,
        accept(json!({"city": "Pune", "floor": 2})),
        "k1",
    )
    .await
    .expect("accept");
    let a = outward_answer(&accepted, "address");
    assert_eq!(a.action, PollAction::Accept);
    assert_eq!(
        a.content,
        json!({"city": "Pune", "floor": 2}).as_object().cloned()
    );

    let declined = ask_again(h, "s1").await;
    let (declined, _) = answer(h, &declined, bare(ResponseAction::Decline), "k2")
        .await
        .expect("decline");
    assert_eq!(
        outward_answer(&declined, "address").action,
        PollAction::Decline
    );

    let dismissed = ask_again(h, "s1").await;
    let (dismissed, _) = answer(h, &dismissed, bare(ResponseAction::Cancel), "k3")
        .await
        .expect("cancel");
    assert_eq!(
        outward_answer(&dismissed, "address").action,
        PollAction::Cancel
    );

    let failed = ask_again(h, "s1").await;
    let lease = h
        .store
        .claim_round(failed.round_id, owner("w"), Duration::seconds(60))
        .await
        .expect("claim");
    let failed = h
        .store
        .fail(
            failed.round_id,
            &owner("w"),
            &lease.lease_token,
            FailureCode::Other("tool_crashed".into()),
            "boom".into(),
        )
        .await
        .expect("fail");
    let a = outward_answer(&failed, "address");
    assert_eq!(a.action, PollAction::Cancel);
    assert_eq!(a.failure_code.as_deref(), Some("tool_crashed"));
    assert!(a.content.is_none());

    let expiring = ask_again(h, "s1").await;
    h.clock.advance(Duration::hours(2));
    let expired = h.store.get_round(expiring.round_id).await.expect("read");
    let a = outward_answer(&expired, "address");
    assert_eq!((a.action, a.failure_code), (PollAction::Expired, None));
}

// ---------------------------------------------------------------------------------------------------------
// Session markers (docs/lifecycle.md#lost-markers)

async fn answered_round_returns_session_to_running_and_clears_markers(h: &Harness) {
    let round = ask(h, "s1").await;
    answer(h, &round, bare(ResponseAction::Decline), "k1")
        .await
        .expect("decline");
    let s = session(h, "s1").await;
    assert_eq!(s.status, SessionStatus::Running);
    assert!(!s.blocked_on_elicitation);
}

async fn answering_one_of_two_open_rounds_keeps_needs_input(h: &Harness) {
    let first = ask(h, "s1").await;
    ask_again(h, "s1").await;
    answer(h, &first, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let s = session(h, "s1").await;
    assert_eq!(s.status, SessionStatus::NeedsInput);
    assert!(s.blocked_on_elicitation);
}

async fn new_round_clears_the_lost_marker(h: &Harness) {
    ask(h, "s1").await;
    h.clock.advance(Duration::minutes(61));
    assert!(session(h, "s1").await.lost_elicitation.is_some());
    h.store
        .create_round(new_round("s1", vec![("address", form("Again?", None))]))
        .await
        .expect("new round");
    let s = session(h, "s1").await;
    assert!(s.lost_elicitation.is_none());
    assert_eq!(s.status, SessionStatus::NeedsInput);
}

async fn resume_clears_the_lost_marker(h: &Harness) {
    ask(h, "s1").await;
    h.clock.advance(Duration::minutes(61));
    assert!(session(h, "s1").await.lost_elicitation.is_some());
    let s = h.store.resume_session(&sid("s1")).await.expect("resume");
    assert!(s.lost_elicitation.is_none());
    assert_eq!(s.status, SessionStatus::Running);
}

async fn stranded_needs_input_session_keeps_status_and_explains(h: &Harness) {
    let round = ask(h, "s1").await;
    // The MCP server crashed mid-round-trip and the round ended without the session hearing of it.
    h.raw(&format!(
        "UPDATE rounds SET status = 'failed', failure_code = 'delivery_failed', failed_at_ms = 0 WHERE round_id = '{}'",
        round.round_id
    ))
    .await;
    let swept = h.store.sweep_stranded().await.expect("sweep");
    assert_eq!(swept.len(), 1);
    let s = session(h, "s1").await;
    assert_eq!(
        s.status,
        SessionStatus::NeedsInput,
        "no phantom running session"
    );
    assert!(!s.blocked_on_elicitation);
    let lost = s.lost_elicitation.expect("stranded marker");
    assert_eq!(lost.reason, LostReason::Stranded);
    assert_eq!(lost.request_id, round.request_id);
    assert_eq!(lost.summary, round.summary);
    assert!(
        h.store
            .sweep_stranded()
            .await
            .expect("sweep again")
            .is_empty()
    );
}

async fn stranded_running_session_only_loses_the_marker(h: &Harness) {
    register(h, "s1").await;
    // A swallowed state race: running, yet still marked blocked, with nothing open.
    h.raw("UPDATE sessions SET blocked_on_elicitation = TRUE WHERE id = 's1'")
        .await;
    h.store.sweep_stranded().await.expect("sweep");
    let s = session(h, "s1").await;
    assert_eq!(s.status, SessionStatus::Running);
    assert!(!s.blocked_on_elicitation);
    assert!(
        s.lost_elicitation.is_none(),
        "nothing to act on, so no banner"
    );
}

async fn sweep_leaves_sessions_with_active_rounds_alone(h: &Harness) {
    ask(h, "s1").await;
    assert!(h.store.sweep_stranded().await.expect("sweep").is_empty());
    assert!(session(h, "s1").await.blocked_on_elicitation);
}

// ---------------------------------------------------------------------------------------------------------
// Workers and leases (docs/lifecycle.md#worker-leases)

async fn claim_grants_one_lease_and_a_second_claim_conflicts(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    assert_eq!(lease.owner_id, owner("w1"));
    assert_eq!(
        lease.expires_at,
        support::start_time() + Duration::seconds(30)
    );
    let error = refusal(
        h.store
            .claim_round(round.round_id, owner("w2"), Duration::seconds(30))
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("w1"));
}

async fn renew_extends_a_live_lease_and_not_an_expired_one(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    h.clock.advance(Duration::seconds(20));
    let renewed = h
        .store
        .renew(
            round.round_id,
            &owner("w1"),
            &lease.lease_token,
            Duration::seconds(30),
        )
        .await
        .expect("renew");
    assert_eq!(
        renewed.expires_at,
        support::start_time() + Duration::seconds(50)
    );
    h.clock.advance(Duration::seconds(31));
    let error = refusal(
        h.store
            .renew(
                round.round_id,
                &owner("w1"),
                &lease.lease_token,
                Duration::seconds(30),
            )
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("expired"), "{}", error.message());
}

async fn replaced_worker_cannot_write(h: &Harness) {
    let round = ask(h, "s1").await;
    let old = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(10))
        .await
        .expect("claim");
    h.clock.advance(Duration::seconds(11));
    let new = h
        .store
        .claim_round(round.round_id, owner("w2"), Duration::seconds(60))
        .await
        .expect("replacement claims");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");

    let error = refusal(
        h.store
            .start_delivery(round.round_id, &owner("w1"), &old.lease_token)
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("replaced"), "{}", error.message());
    h.store
        .start_delivery(round.round_id, &owner("w2"), &new.lease_token)
        .await
        .expect("replacement delivers");
}

async fn stale_lease_token_is_refused(h: &Harness) {
    let round = ask(h, "s1").await;
    h.store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    let forged = LeaseToken::from_secret("not-the-token");
    let error = refusal(
        h.store
            .renew(round.round_id, &owner("w1"), &forged, Duration::seconds(30))
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
}

async fn worker_lifecycle_runs_to_resolved_and_then_nothing_writes(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(300))
        .await
        .expect("claim");
    let (w, t) = (owner("w1"), lease.lease_token.clone());
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let started = h
        .store
        .start_delivery(round.round_id, &w, &t)
        .await
        .expect("start");
    assert_eq!(
        (started.status, started.delivery_attempts),
        (RoundStatus::DeliveryStarted, 1)
    );
    assert_eq!(
        h.store
            .mark_delivered(round.round_id, &w, &t)
            .await
            .expect("delivered")
            .status,
        RoundStatus::Delivered
    );
    let resolved = h
        .store
        .resolve(round.round_id, &w, &t)
        .await
        .expect("resolve");
    assert_eq!(resolved.status, RoundStatus::Resolved);
    assert_eq!(
        outward_answer(&resolved, "address").action,
        PollAction::Accept
    );

    for error in [
        refusal(
            h.store
                .claim_round(round.round_id, owner("w2"), Duration::seconds(30))
                .await,
        ),
        refusal(answer(h, &round, accept(json!({"city": "Goa"})), "k2").await),
        refusal(h.store.fail_recovery(round.round_id).await),
    ] {
        assert!(error.code().starts_with("managed_input"), "{error:?}");
    }
    assert_eq!(
        h.store.get_round(round.round_id).await.expect("read"),
        resolved,
        "a terminal round never changes"
    );
}

async fn transitions_out_of_order_are_refused(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(300))
        .await
        .expect("claim");
    let (w, t) = (owner("w1"), lease.lease_token.clone());
    let error = refusal(h.store.start_delivery(round.round_id, &w, &t).await);
    assert_eq!(
        error.code(),
        "managed_input_state",
        "no delivery before an answer"
    );
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    assert_eq!(
        refusal(h.store.mark_delivered(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
    assert_eq!(
        refusal(h.store.resolve(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
    h.store
        .start_delivery(round.round_id, &w, &t)
        .await
        .expect("start");
    assert_eq!(
        refusal(h.store.start_delivery(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
    assert_eq!(
        refusal(h.store.resolve(round.round_id, &w, &t).await).code(),
        "managed_input_state"
    );
}

async fn worker_without_lease_cannot_write(h: &Harness) {
    let round = ask(h, "s1").await;
    let error = refusal(
        h.store
            .start_delivery(round.round_id, &owner("w1"), &LeaseToken::from_secret("x"))
            .await,
    );
    assert_eq!(error.code(), "managed_input_conflict");
    assert!(error.message().contains("claim"), "{}", error.message());
}

async fn worker_fail_ends_the_round_and_settles_the_session(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(60))
        .await
        .expect("claim");
    let failed = h
        .store
        .fail(
            round.round_id,
            &owner("w1"),
            &lease.lease_token,
            FailureCode::DeliveryFailed,
            "native prompt closed".into(),
        )
        .await
        .expect("fail");
    assert_eq!(failed.status, RoundStatus::Failed);
    assert_eq!(session(h, "s1").await.status, SessionStatus::Running);
    let reserved = refusal(
        h.store
            .fail(
                round.round_id,
                &owner("w1"),
                &lease.lease_token,
                FailureCode::Expired,
                "x".into(),
            )
            .await,
    );
    assert_eq!(
        reserved.code(),
        "managed_input_state",
        "a terminal round refuses before the code is even looked at"
    );
}

async fn reserved_failure_codes_are_refused(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(60))
        .await
        .expect("claim");
    for code in [FailureCode::Expired, FailureCode::RecoveryUnavailable] {
        let error = refusal(
            h.store
                .fail(
                    round.round_id,
                    &owner("w1"),
                    &lease.lease_token,
                    code,
                    "x".into(),
                )
                .await,
        );
        assert_eq!(error.code(), "validation_error");
    }
}

// ---------------------------------------------------------------------------------------------------------
// Recovery of a vanished worker

async fn vanished_worker_mid_delivery_is_recovery_unavailable(h: &Harness) {
    let round = ask(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    h.store
        .start_delivery(round.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("start");
    assert!(
        h.store
            .recover_leases()
            .await
            .expect("too early")
            .is_empty(),
        "a live lease is left alone"
    );

    h.clock.advance(Duration::seconds(31));
    let claim_error = refusal(
        h.store
            .claim_round(round.round_id, owner("w2"), Duration::seconds(30))
            .await,
    );
    assert_eq!(
        claim_error.code(),
        "managed_input_recovery",
        "no replacement may claim it"
    );

    let recovered = h.store.recover_leases().await.expect("recover");
    assert_eq!(recovered.len(), 1);
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(read.status, RoundStatus::Failed);
    assert_eq!(
        read.failure.as_ref().map(|f| f.code.clone()),
        Some(FailureCode::RecoveryUnavailable)
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);

    let late = refusal(answer(h, &round, accept(json!({"city": "Goa"})), "k2").await);
    assert_eq!(late.code(), "managed_input_recovery");
    let reclaim = refusal(
        h.store
            .claim_round(round.round_id, owner("w3"), Duration::seconds(30))
            .await,
    );
    assert_eq!(reclaim.code(), "managed_input_recovery");
    assert!(h.store.recover_leases().await.expect("again").is_empty());
    assert!(
        h.store
            .pending_round(&sid("s1"))
            .await
            .expect("pending")
            .is_none(),
        "never pending again"
    );
}

async fn explicit_fail_recovery_needs_an_expired_lease_mid_delivery(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(
        refusal(h.store.fail_recovery(round.round_id).await).code(),
        "managed_input_state"
    );
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::seconds(30))
        .await
        .expect("claim");
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    h.store
        .start_delivery(round.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("start");
    assert_eq!(
        refusal(h.store.fail_recovery(round.round_id).await).code(),
        "managed_input_conflict"
    );
    h.clock.advance(Duration::seconds(30));
    let failed = h
        .store
        .fail_recovery(round.round_id)
        .await
        .expect("recover");
    assert_eq!(
        failed.failure.map(|f| f.code),
        Some(FailureCode::RecoveryUnavailable)
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);
}

// ---------------------------------------------------------------------------------------------------------
// Answers: validation and idempotency

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

async fn decline_and_cancel_content_is_dropped(h: &Harness) {
    let round = ask(h, "s1").await;
    let (stored, _) = answer(
        h,
        &round,
        ElicitationResponse {
            action: ResponseAction::Decline,
            content: json!({"city": "secret"}).as_object().cloned(),
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

async fn pending_round_is_single_or_none_and_several_is_a_state_error(h: &Harness) {
    register(h, "s1").await;
    assert!(
        h.store
            .pending_round(&sid("s1"))
            .await
            .expect("none")
            .is_none()
    );
    let first = h
        .store
        .create_round(new_round("s1", vec![("a", form("?", None))]))
        .await
        .expect("create");
    assert_eq!(
        h.store
            .pending_round(&sid("s1"))
            .await
            .expect("one")
            .map(|r| r.round_id),
        Some(first.round_id)
    );
    h.store
        .create_round(new_round("s1", vec![("b", form("?", None))]))
        .await
        .expect("create");
    assert_eq!(
        refusal(h.store.pending_round(&sid("s1")).await).code(),
        "managed_input_state"
    );
}

async fn rounds_are_listed_newest_first(h: &Harness) {
    let first = ask(h, "s1").await;
    h.clock.advance(Duration::seconds(1));
    let second = ask_again(h, "s1").await;
    let listed: Vec<_> = h
        .store
        .list_rounds(&sid("s1"))
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.round_id)
        .collect();
    assert_eq!(listed, vec![second.round_id, first.round_id]);
}

async fn history_pages_newest_first_and_open_rounds_oldest_first(h: &Harness) {
    let mut created = vec![ask(h, "s1").await];
    for _ in 0..4 {
        h.clock.advance(Duration::seconds(1));
        created.push(ask_again(h, "s1").await);
    }
    answer(h, &created[1], accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let ids = |rounds: Vec<Round>| rounds.into_iter().map(|r| r.round_id).collect::<Vec<_>>();
    let session = sid("s1");
    let page = |before: Option<RoundId>| h.store.list_rounds_page(&session, before, 2);
    let first = ids(page(None).await.expect("page 1"));
    assert_eq!(first, vec![created[4].round_id, created[3].round_id]);
    let second = ids(page(Some(created[3].round_id)).await.expect("page 2"));
    assert_eq!(second, vec![created[2].round_id, created[1].round_id]);
    let last = ids(page(Some(created[1].round_id)).await.expect("page 3"));
    assert_eq!(last, vec![created[0].round_id]);
    assert!(
        page(Some(anteroom_store::new_round_id()))
            .await
            .expect("unknown")
            .is_empty(),
        "an unknown cursor is an empty page"
    );
    let open = ids(h.store.open_rounds(&session, 3).await.expect("open"));
    assert_eq!(
        open,
        vec![
            created[0].round_id,
            created[2].round_id,
            created[3].round_id
        ],
        "pending only, oldest first, at most the limit"
    );
}

async fn redacted_responses_show_keys_actions_and_field_names_only(h: &Harness) {
    let round = ask(h, "s1").await;
    answer(h, &round, accept(json!({"city": "Pune", "floor": 3})), "k1")
        .await
        .expect("answer");
    let redacted = h
        .store
        .redacted_responses(round.round_id)
        .await
        .expect("redacted");
    assert_eq!(redacted.responses.len(), 1);
    assert_eq!(redacted.responses[0].request_key, key("address"));
    assert_eq!(redacted.responses[0].action, ResponseAction::Accept);
    assert_eq!(redacted.responses[0].fields, vec!["city", "floor"]);
    let text = serde_json::to_string(&redacted).expect("serialise");
    assert!(!text.contains("Pune"), "no values: {text}");
}

async fn poll_delivery_marks_delivered_and_counts_each_attempt(h: &Harness) {
    let round = ask(h, "s1").await;
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    let first = h
        .store
        .record_poll_delivery(round.round_id)
        .await
        .expect("first poll");
    assert_eq!(
        (first.status, first.delivery_attempts),
        (RoundStatus::Delivered, 1)
    );
    let second = h
        .store
        .record_poll_delivery(round.round_id)
        .await
        .expect("second poll");
    assert_eq!(second.delivery_attempts, 2);
    assert_eq!(
        outward_answer(&second, "address"),
        outward_answer(&first, "address")
    );
}

// ---------------------------------------------------------------------------------------------------------
// Sessions: cancel, finish, the attention queue

async fn cancelling_a_session_fails_its_open_rounds(h: &Harness) {
    let round = ask(h, "s1").await;
    let s = h.store.cancel_session(&sid("s1")).await.expect("cancel");
    assert_eq!(s.status, SessionStatus::Cancelled);
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(
        read.failure.as_ref().map(|f| f.code.clone()),
        Some(FailureCode::Cancelled)
    );
    let a = outward_answer(&read, "address");
    assert_eq!(
        (a.action, a.failure_code.as_deref()),
        (PollAction::Cancel, Some("cancelled"))
    );
}

async fn finishing_is_refused_while_questions_are_open(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(
        refusal(h.store.finish_session(&sid("s1")).await).code(),
        "managed_input_state"
    );
    answer(h, &round, accept(json!({"city": "Pune"})), "k1")
        .await
        .expect("answer");
    assert_eq!(
        h.store
            .finish_session(&sid("s1"))
            .await
            .expect("finish")
            .status,
        SessionStatus::Finished
    );
}

async fn unknown_ids_are_not_found(h: &Harness) {
    assert_eq!(
        refusal(h.store.get_session(&sid("ghost")).await).code(),
        "not_found"
    );
    assert_eq!(
        refusal(
            h.store
                .get_round(anteroom_store::domain::ids::RoundId(uuid::Uuid::nil()))
                .await
        )
        .code(),
        "not_found"
    );
    assert_eq!(
        refusal(
            h.store
                .get_round_by_request_id(&RequestId::parse("nope").expect("id"))
                .await
        )
        .code(),
        "not_found"
    );
    assert_eq!(
        refusal(h.store.resume_session(&sid("ghost")).await).code(),
        "not_found"
    );
}

async fn attention_queue_puts_open_questions_first_then_lost_then_the_rest(h: &Harness) {
    register(h, "quiet").await;
    register(h, "lost").await;
    let mut short = new_round("lost", vec![("address", form("Quick?", None))]);
    short.deadline = Some(support::start_time() + Duration::minutes(5));
    h.store.create_round(short).await.expect("short round");
    h.clock.advance(Duration::seconds(1));
    ask(h, "older").await;
    h.clock.advance(Duration::seconds(1));
    ask(h, "newer").await;
    h.clock.advance(Duration::minutes(5));

    let queue = h.store.list_sessions(100).await.expect("queue");
    let order: Vec<&str> = queue.iter().map(|e| e.session.id.as_str()).collect();
    assert_eq!(
        order,
        vec!["older", "newer", "lost", "quiet"],
        "oldest wait first, then lost, then the rest"
    );
    assert_eq!(queue[0].open_rounds, 1);
    assert!(queue[0].oldest_open_at < queue[1].oldest_open_at);
    assert_eq!(queue[2].open_rounds, 0);
    assert_eq!(
        queue[2].session.lost_elicitation.as_ref().map(|l| l.reason),
        Some(LostReason::AskerStopped),
        "the deadline was the asker's own"
    );
    assert_eq!(h.store.list_sessions(2).await.expect("limited").len(), 2);
}

// ---------------------------------------------------------------------------------------------------------
// The webhook outbox (two endpoints configured by the harness: one JSON, one Slack)

async fn question_events_are_queued_once_per_endpoint(h: &Harness) {
    let round = ask(h, "s1").await;
    let queued = h.store.list_webhook_deliveries(50).await.expect("log");
    assert_eq!(queued.len(), 2, "one question.created per endpoint");
    assert!(
        queued
            .iter()
            .all(|d| d.event == "question.created" && d.status == "pending")
    );
    let slack = queued
        .iter()
        .find(|d| d.endpoint.ends_with("/slack"))
        .expect("slack delivery");
    assert!(
        slack.payload["text"]
            .as_str()
            .expect("text")
            .contains("book_shipment: Where to?")
    );
    let json = queued
        .iter()
        .find(|d| d.endpoint.ends_with("/hook"))
        .expect("json delivery");
    assert_eq!(json.payload["data"]["round_id"], round.round_id.to_string());

    h.clock.advance(Duration::minutes(61));
    h.store.expire_due_rounds().await.expect("expire");
    h.store.expire_due_rounds().await.expect("expire again");
    let expired = h.store.list_webhook_deliveries(50).await.expect("log");
    assert_eq!(
        expired
            .iter()
            .filter(|d| d.event == "question.expired")
            .count(),
        2,
        "one per endpoint, never two"
    );
}

async fn deliveries_are_claimed_once_and_retried_with_backoff(h: &Harness) {
    ask(h, "s1").await;
    let claimed = h
        .store
        .claim_webhook_deliveries(10, Duration::seconds(60))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2);
    assert!(claimed.iter().all(|d| d.attempts == 1));
    assert!(
        h.store
            .claim_webhook_deliveries(10, Duration::seconds(60))
            .await
            .expect("claim")
            .is_empty(),
        "claimed ones are hidden"
    );

    let (first, second) = (&claimed[0], &claimed[1]);
    h.store
        .finish_webhook_delivery(first, AttemptOutcome::Delivered { status: 200 })
        .await
        .expect("delivered");
    h.store
        .finish_webhook_delivery(
            second,
            AttemptOutcome::Failed {
                status: Some(500),
                error: "boom".into(),
            },
        )
        .await
        .expect("failed attempt");
    assert!(
        h.store
            .claim_webhook_deliveries(10, Duration::seconds(60))
            .await
            .expect("claim")
            .is_empty(),
        "not before the backoff"
    );
    h.clock.advance(Duration::seconds(10));
    let retried = h
        .store
        .claim_webhook_deliveries(10, Duration::seconds(60))
        .await
        .expect("claim");
    assert_eq!(
        retried
            .iter()
            .map(|d| (d.id.clone(), d.attempts))
            .collect::<Vec<_>>(),
        vec![(second.id.clone(), 2)]
    );
    let log = h.store.list_webhook_deliveries(10).await.expect("log");
    let done = log.iter().find(|d| d.id == first.id).expect("first");
    assert_eq!(
        (done.status.as_str(), done.last_status),
        ("delivered", Some(200))
    );
}

async fn purge_deletes_only_finished_rounds_past_retention(h: &Harness) {
    let finished = ask(h, "s1").await;
    answer(h, &finished, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answer");
    let lease = h
        .store
        .claim_round(finished.round_id, owner("w"), Duration::seconds(60))
        .await
        .expect("claim");
    h.store
        .fail(
            finished.round_id,
            &owner("w"),
            &lease.lease_token,
            FailureCode::DeliveryFailed,
            "x".into(),
        )
        .await
        .expect("fail");
    let open = h
        .store
        .create_round(new_round(
            "s1",
            vec![("address", form("Still open?", None))],
        ))
        .await
        .expect("open round");
    let now = support::start_time();
    assert_eq!(
        h.store
            .purge_terminal_rounds(now - Duration::days(30))
            .await
            .expect("purge"),
        0,
        "nothing is old yet"
    );
    h.clock.advance(Duration::days(31));
    assert_eq!(
        h.store
            .purge_terminal_rounds(now + Duration::days(1))
            .await
            .expect("purge"),
        1
    );
    assert_eq!(
        refusal(h.store.get_round(finished.round_id).await).code(),
        "not_found"
    );
    assert!(
        h.store.get_round(open.round_id).await.is_ok(),
        "unfinished rounds are kept"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Races

async fn concurrent_answers_with_different_keys_have_exactly_one_winner(h: &Harness) {
    let round = ask(h, "s1").await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let store = h.store.clone();
        let id = round.round_id;
        tasks.push(tokio::spawn(async move {
            store
                .submit_responses(
                    id,
                    only("address", accept(json!({"city": format!("City {i}")}))),
                    idem(&format!("k{i}")),
                    Some(format!("p{i}")),
                )
                .await
        }));
    }
    let mut wins = 0;
    for task in tasks {
        match task.await.expect("task joins") {
            Ok((_, Submission::Recorded)) => wins += 1,
            Ok((_, Submission::Replayed)) => panic!("different keys never replay"),
            Err(StoreError::Refused(error)) => {
                assert!(
                    matches!(
                        error.code(),
                        "managed_input_conflict" | "managed_input_state"
                    ),
                    "{error:?}"
                );
            }
            Err(other) => panic!("unexpected failure: {other:?}"),
        }
    }
    assert_eq!(wins, 1);
    let stored = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(stored.status, RoundStatus::ResponseValidated);
}

async fn concurrent_claims_grant_exactly_one_lease(h: &Harness) {
    let round = ask(h, "s1").await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let store = h.store.clone();
        let id = round.round_id;
        tasks.push(tokio::spawn(async move {
            store
                .claim_round(id, owner(&format!("w{i}")), Duration::seconds(60))
                .await
        }));
    }
    let mut leases = Vec::new();
    for task in tasks {
        match task.await.expect("task joins") {
            Ok(lease) => leases.push(lease),
            Err(StoreError::Refused(error)) => {
                assert_eq!(error.code(), "managed_input_conflict", "{error:?}");
            }
            Err(other) => panic!("unexpected failure: {other:?}"),
        }
    }
    assert_eq!(leases.len(), 1);
    let stored = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(
        stored.lease.map(|l| l.owner_id),
        Some(leases[0].owner_id.clone())
    );
}

async fn usernames_are_unique_and_passwords_come_back_for_sign_in(h: &Harness) {
    let ada = User {
        id: "u-1".to_owned(),
        username: "ada".to_owned(),
        role: Role::Responder,
    };
    h.store
        .create_user(&ada, "hash-1")
        .await
        .expect("first user");
    let twin = User {
        id: "u-2".to_owned(),
        ..ada.clone()
    };
    let error = refusal(h.store.create_user(&twin, "hash-2").await);
    assert_eq!(error.code(), "managed_input_conflict");
    assert_eq!(h.store.count_users().await.expect("count"), 1);
    assert_eq!(
        h.store.user_with_password("ada").await.expect("read"),
        Some((ada.clone(), "hash-1".to_owned()))
    );
    assert_eq!(h.store.get_user("u-1").await.expect("read"), Some(ada));
    assert_eq!(
        h.store.user_with_password("nobody").await.expect("read"),
        None
    );
}

async fn sign_in_links_work_once_and_only_before_they_expire(h: &Harness) {
    let later = h.clock.now() + Duration::hours(1);
    for link in ["once", "late"] {
        h.store
            .create_sign_in_link(link, later)
            .await
            .expect("link");
    }
    let admin = |n: u32| User {
        id: format!("admin-{n}"),
        username: format!("admin{n}"),
        role: Role::Admin,
    };
    assert!(
        !h.store
            .create_first_admin("unknown", &admin(0), "hash")
            .await
            .expect("unknown")
    );
    h.clock.advance(Duration::hours(2));
    assert!(
        !h.store
            .create_first_admin("late", &admin(1), "hash")
            .await
            .expect("expired")
    );
    assert_eq!(h.store.count_users().await.expect("count"), 0);
}

async fn first_run_link_after_an_admin_exists_creates_nobody(h: &Harness) {
    let later = h.clock.now() + Duration::hours(1);
    for link in ["first", "second"] {
        h.store
            .create_sign_in_link(link, later)
            .await
            .expect("link");
    }
    let admin = |name: &str| User {
        id: format!("id-{name}"),
        username: name.to_owned(),
        role: Role::Admin,
    };
    assert!(
        h.store
            .create_first_admin("first", &admin("ada"), "hash")
            .await
            .expect("use")
    );
    assert!(
        !h.store
            .create_first_admin("first", &admin("eve"), "hash")
            .await
            .expect("reuse"),
        "a link works once"
    );
    // Another link, still unused and unexpired, does nothing once a person exists.
    assert!(
        !h.store
            .create_first_admin("second", &admin("mallory"), "hash")
            .await
            .expect("after")
    );
    assert_eq!(h.store.count_users().await.expect("count"), 1);
}

async fn web_sessions_are_saved_replaced_and_expire(h: &Harness) {
    let soon = h.clock.now() + Duration::minutes(30);
    assert!(
        h.store
            .create_web_session("s1", "{\"a\":1}", soon)
            .await
            .expect("create")
    );
    assert!(
        !h.store
            .create_web_session("s1", "{}", soon)
            .await
            .expect("taken id")
    );
    h.store
        .save_web_session("s1", "{\"a\":2}", soon)
        .await
        .expect("save");
    assert_eq!(
        h.store.load_web_session("s1").await.expect("load"),
        Some(("{\"a\":2}".to_owned(), soon))
    );
    h.store
        .create_web_session("s2", "{}", soon + Duration::hours(1))
        .await
        .expect("create");
    h.clock.advance(Duration::hours(1));
    assert_eq!(h.store.load_web_session("s1").await.expect("load"), None);
    assert_eq!(h.store.purge_web_sessions().await.expect("purge"), 1);
    h.store.delete_web_session("s2").await.expect("delete");
    assert_eq!(h.store.load_web_session("s2").await.expect("load"), None);
}

async fn a_poll_probe_finds_a_question_only_through_its_own_sessions_token(h: &Harness) {
    let round = ask(h, "probe-a").await;
    register(h, "probe-b").await;
    h.store
        .set_producer_token(&sid("probe-a"), Some("hash-a"))
        .await
        .expect("token");
    h.store
        .set_producer_token(&sid("probe-b"), Some("hash-b"))
        .await
        .expect("token");
    let probe = h
        .store
        .poll_probe("hash-a", round.request_id.as_str())
        .await
        .expect("probe")
        .expect("found");
    assert_eq!(probe.session_id, sid("probe-a"));
    assert_eq!(probe.status, RoundStatus::Pending);
    assert_eq!(probe.deadline, round.deadline);
    assert_eq!(
        h.store
            .poll_probe("hash-b", round.request_id.as_str())
            .await
            .expect("probe"),
        None
    );
    assert_eq!(
        h.store
            .poll_probe("hash-a", "unknown")
            .await
            .expect("probe"),
        None
    );
}

async fn the_queue_gets_each_waiting_sessions_oldest_question(h: &Harness) {
    let first = ask(h, "oldest-a").await;
    h.clock.advance(Duration::seconds(5));
    ask_again(h, "oldest-a").await;
    let other = ask(h, "oldest-b").await;
    h.clock.advance(Duration::seconds(5));
    let answered = ask_again(h, "oldest-b").await;
    answer(h, &answered, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    register(h, "oldest-c").await;
    let oldest = h
        .store
        .oldest_open_rounds(&[sid("oldest-a"), sid("oldest-b"), sid("oldest-c")])
        .await
        .expect("read");
    let ids: Vec<_> = oldest.iter().map(|round| round.round_id).collect();
    assert_eq!(ids, vec![first.round_id, other.round_id]);
    assert!(
        h.store
            .oldest_open_rounds(&[])
            .await
            .expect("read")
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------------------
// Delivery truth (docs/deadlines.md): an answer counts as delivered only when its asker picks it up

/// A question whose asker stops waiting 60 s after it was asked.
async fn ask_for_a_minute(h: &Harness, session: &str) -> Round {
    register(h, session).await;
    let until = support::start_time() + Duration::seconds(60);
    let meta = json!({"com.pulsemcp/expires-at": until.to_rfc3339()});
    h.store
        .create_round(new_round(
            session,
            vec![("address", form("Where to?", Some(meta)))],
        ))
        .await
        .expect("create round")
}

async fn an_answer_never_picked_up_ends_undelivered_when_the_asker_stops(h: &Harness) {
    let round = ask_for_a_minute(h, "s1").await;
    h.clock.advance(Duration::milliseconds(57_200));
    answer(h, &round, accept(json!({"city": "Lyon"})), "k1")
        .await
        .expect("answered before the deadline");
    h.clock.advance(Duration::seconds(3));

    // Read lazily: the first read after the deadline ends it.
    let ended = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(ended.status, RoundStatus::Failed);
    let failure = ended.failure.clone().expect("failure");
    assert_eq!(failure.code, FailureCode::Undelivered);
    assert!(
        failure.message.starts_with("ada answered at 09:00:57 UTC, but the asking server had stopped waiting at 09:01:00 UTC"),
        "{}",
        failure.message
    );
    assert_eq!(
        ended.responses.as_ref().map(BTreeMap::len),
        Some(1),
        "what was answered is kept"
    );
    let answer = outward_answer(&ended, "address");
    assert_eq!(answer.action, PollAction::Expired);
    assert_eq!(answer.failure_code.as_deref(), Some("undelivered"));

    let lost = session(h, "s1")
        .await
        .lost_elicitation
        .expect("lost marker");
    assert_eq!(lost.reason, LostReason::Undelivered);
    assert_eq!(lost.detail.as_deref(), Some(failure.message.as_str()));
    let log = h.store.list_webhook_deliveries(50).await.expect("log");
    assert_eq!(
        log.iter()
            .filter(|d| d.event == "question.undelivered")
            .count(),
        2,
        "announced once per endpoint"
    );
    assert!(
        h.store.expire_due_rounds().await.expect("sweep").is_empty(),
        "ended once"
    );
}

async fn the_sweep_ends_undelivered_answers_too(h: &Harness) {
    let round = ask_for_a_minute(h, "s1").await;
    answer(h, &round, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    h.clock.advance(Duration::seconds(61));
    let ended = h.store.expire_due_rounds().await.expect("sweep");
    assert_eq!(ended.len(), 1);
    assert_eq!(
        ended[0].failure.as_ref().map(|f| f.code.clone()),
        Some(FailureCode::Undelivered)
    );
}

async fn an_answer_picked_up_in_time_stays_delivered(h: &Harness) {
    let round = ask_for_a_minute(h, "s1").await;
    h.clock.advance(Duration::seconds(30));
    answer(h, &round, accept(json!({"city": "Lyon"})), "k1")
        .await
        .expect("answered");
    h.clock.advance(Duration::seconds(5));
    let delivered = h
        .store
        .record_poll_delivery(round.round_id)
        .await
        .expect("picked up");
    assert_eq!(delivered.status, RoundStatus::Delivered);
    h.clock.advance(Duration::minutes(5));
    assert!(h.store.expire_due_rounds().await.expect("sweep").is_empty());
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(read.status, RoundStatus::Delivered);
    assert_eq!(session(h, "s1").await.lost_elicitation, None);
}

async fn a_worker_with_a_live_lease_may_still_deliver_after_the_deadline(h: &Harness) {
    let round = ask_for_a_minute(h, "s1").await;
    let lease = h
        .store
        .claim_round(round.round_id, owner("w1"), Duration::minutes(5))
        .await
        .expect("claim");
    answer(h, &round, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    h.clock.advance(Duration::seconds(90));
    let started = h
        .store
        .start_delivery(round.round_id, &owner("w1"), &lease.lease_token)
        .await
        .expect("the worker is still there");
    assert_eq!(started.status, RoundStatus::DeliveryStarted);
}

async fn answers_after_the_askers_deadline_are_refused_with_why(h: &Harness) {
    let round = ask_for_a_minute(h, "s1").await;
    h.clock.advance(Duration::seconds(61));
    let refused = refusal(answer(h, &round, bare(ResponseAction::Decline), "k1").await);
    assert_eq!(refused.code(), "managed_input_state");
    assert!(refused.to_string().contains("stopped waiting"), "{refused}");
    let lost = session(h, "s1")
        .await
        .lost_elicitation
        .expect("lost marker");
    assert_eq!(lost.reason, LostReason::AskerStopped);
}

async fn revoking_or_rotating_a_token_ends_the_questions_asked_through_it(h: &Harness) {
    register(h, "s1").await;
    h.store
        .set_producer_token(&sid("s1"), Some("hash-1"))
        .await
        .expect("first token ends nothing");
    let pending = ask_again(h, "s1").await;
    let answered = ask_again(h, "s1").await;
    answer(h, &answered, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    let mut by_key = new_round("s1", vec![("address", form("?", None))]);
    by_key.asked_through = AskedThrough::ApiKey;
    let by_key = h.store.create_round(by_key).await.expect("create");

    let ended = h
        .store
        .set_producer_token(&sid("s1"), Some("hash-2"))
        .await
        .expect("rotate");
    let codes: BTreeMap<RoundId, String> = ended
        .iter()
        .map(|round| {
            (
                round.round_id,
                round
                    .failure
                    .as_ref()
                    .map(|f| f.code.as_str().to_owned())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        BTreeMap::from([
            (pending.round_id, "revoked".to_owned()),
            (answered.round_id, "undelivered".to_owned()),
        ])
    );
    let untouched = h.store.get_round(by_key.round_id).await.expect("read");
    assert_eq!(
        untouched.status,
        RoundStatus::Pending,
        "asked with an API key, not the token"
    );
    let refused = refusal(answer(h, &pending, bare(ResponseAction::Decline), "k2").await);
    assert_eq!(refused.code(), "managed_input_state");
    assert!(session(h, "s1").await.lost_elicitation.is_some());

    assert!(
        h.store
            .set_producer_token(&sid("s1"), None)
            .await
            .expect("revoke")
            .is_empty(),
        "nothing asked through the token is left open"
    );
}

async fn the_askers_polls_are_remembered_between_writes(h: &Harness) {
    let round = ask_for_a_minute(h, "s1").await;
    h.store
        .record_asker_poll(round.round_id)
        .await
        .expect("poll");
    h.clock.advance(Duration::seconds(5));
    h.store
        .record_asker_poll(round.round_id)
        .await
        .expect("poll");
    let read = h.store.get_round(round.round_id).await.expect("read");
    let seen = read.asker_seen.expect("seen");
    assert_eq!(
        seen.last_poll_at,
        support::start_time() + Duration::seconds(5)
    );
    assert_eq!(seen.interval_ms, Some(5_000));
    let open = h.store.open_rounds(&sid("s1"), 10).await.expect("open");
    assert_eq!(open[0].asker_seen, Some(seen));
}

async fn every_stored_time_is_what_was_acknowledged(h: &Harness) {
    register(h, "s1").await;
    h.clock.advance(Duration::nanoseconds(123_456_789));
    let until = "2026-03-01T09:30:00.123456789Z";
    let meta = json!({"com.pulsemcp/expires-at": until});
    let round = h
        .store
        .create_round(new_round("s1", vec![("address", form("?", Some(meta)))]))
        .await
        .expect("create");
    h.clock.advance(Duration::nanoseconds(987_654_321));
    let (answered, _) = answer(h, &round, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    let stored = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(stored.created_at, round.created_at);
    assert_eq!(stored.deadline, round.deadline);
    assert_eq!(stored.responded_at, answered.responded_at);
    assert_eq!(
        serde_json::to_value(&stored).expect("json")["responded_at"],
        json!("2026-03-01T09:00:01.111Z")
    );
    let (replayed, submission) = answer(h, &round, bare(ResponseAction::Decline), "k1")
        .await
        .expect("replayed");
    assert_eq!(submission, Submission::Replayed);
    assert_eq!(replayed.responded_at, answered.responded_at);
}

on_both_backends!(
    registering_a_session_twice_returns_the_first,
    created_round_is_pending_and_parks_session_in_needs_input,
    round_for_unknown_session_is_not_found,
    invalid_rounds_are_refused_and_nothing_is_stored,
    cancelled_session_takes_no_new_rounds,
    request_id_in_use_is_a_conflict,
    default_deadline_is_sixty_minutes,
    producer_expires_at_outranks_the_default,
    deadlines_follow_how_far_the_asker_is_trusted,
    an_answer_never_picked_up_ends_undelivered_when_the_asker_stops,
    the_sweep_ends_undelivered_answers_too,
    an_answer_picked_up_in_time_stays_delivered,
    a_worker_with_a_live_lease_may_still_deliver_after_the_deadline,
    answers_after_the_askers_deadline_are_refused_with_why,
    revoking_or_rotating_a_token_ends_the_questions_asked_through_it,
    the_askers_polls_are_remembered_between_writes,
    every_stored_time_is_what_was_acknowledged,
    operator_minutes_set_the_default_window,
    reading_an_overdue_round_expires_it,
    answer_after_the_deadline_is_refused_even_before_any_sweep,
    expiry_sweep_expires_only_due_rounds,
    expiry_with_another_active_round_keeps_needs_input,
    expiry_keeps_a_failed_session_failed,
    outward_answer_follows_the_table,
    answered_round_returns_session_to_running_and_clears_markers,
    answering_one_of_two_open_rounds_keeps_needs_input,
    new_round_clears_the_lost_marker,
    resume_clears_the_lost_marker,
    stranded_needs_input_session_keeps_status_and_explains,
    stranded_running_session_only_loses_the_marker,
    sweep_leaves_sessions_with_active_rounds_alone,
    claim_grants_one_lease_and_a_second_claim_conflicts,
    renew_extends_a_live_lease_and_not_an_expired_one,
    replaced_worker_cannot_write,
    stale_lease_token_is_refused,
    worker_lifecycle_runs_to_resolved_and_then_nothing_writes,
    transitions_out_of_order_are_refused,
    worker_without_lease_cannot_write,
    worker_fail_ends_the_round_and_settles_the_session,
    reserved_failure_codes_are_refused,
    vanished_worker_mid_delivery_is_recovery_unavailable,
    explicit_fail_recovery_needs_an_expired_lease_mid_delivery,
    same_key_and_same_answer_replays_the_stored_record,
    same_key_with_another_answer_conflicts,
    second_answer_is_refused_naming_the_winner,
    response_map_must_hold_exactly_the_pending_keys,
    invalid_content_leaves_the_round_pending_with_field_errors,
    decline_and_cancel_content_is_dropped,
    url_accept_records_consent_and_refuses_content,
    pending_round_is_single_or_none_and_several_is_a_state_error,
    rounds_are_listed_newest_first,
    history_pages_newest_first_and_open_rounds_oldest_first,
    redacted_responses_show_keys_actions_and_field_names_only,
    poll_delivery_marks_delivered_and_counts_each_attempt,
    cancelling_a_session_fails_its_open_rounds,
    finishing_is_refused_while_questions_are_open,
    unknown_ids_are_not_found,
    attention_queue_puts_open_questions_first_then_lost_then_the_rest,
    concurrent_answers_with_different_keys_have_exactly_one_winner,
    concurrent_claims_grant_exactly_one_lease,
    question_events_are_queued_once_per_endpoint,
    deliveries_are_claimed_once_and_retried_with_backoff,
    purge_deletes_only_finished_rounds_past_retention,
    usernames_are_unique_and_passwords_come_back_for_sign_in,
    sign_in_links_work_once_and_only_before_they_expire,
    first_run_link_after_an_admin_exists_creates_nobody,
    web_sessions_are_saved_replaced_and_expire,
    a_poll_probe_finds_a_question_only_through_its_own_sessions_token,
    the_queue_gets_each_waiting_sessions_oldest_question,
);
