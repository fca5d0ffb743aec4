//! Delivery truth (docs/deadlines.md): an answer is delivered only when its asker picks it up.

use std::collections::BTreeMap;

use anteroom_store::domain::{
    clock::Clock,
    ids::RoundId,
    outward::{PollAction, outward_answer},
    round::{AskedThrough, FailureCode, ResponseAction, Round, RoundStatus, Submission},
    session::LostReason,
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::{self, Harness};

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
        .set_producer_token(&sid("s1"), Some("hash-1"), "test")
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
        .set_producer_token(&sid("s1"), Some("hash-2"), "test")
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
            .set_producer_token(&sid("s1"), None, "test")
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

/// The polls due to be written within a second go out together, with the next poll a second on.
async fn the_askers_polls_reach_the_database_together(h: &Harness) {
    let first = ask_for_a_minute(h, "s1").await;
    let second = ask_for_a_minute(h, "s2").await;
    let stored = |round: &Round| {
        format!(
            "SELECT asker_polled_at_ms FROM rounds WHERE round_id = '{}'",
            round.round_id
        )
    };
    let start_ms = support::start_time().timestamp_millis();
    for round in [&first, &second] {
        h.store
            .record_asker_poll(round.round_id)
            .await
            .expect("poll");
    }
    assert_eq!(h.raw_integer(&stored(&first)).await, Some(start_ms));
    assert_eq!(
        h.raw_integer(&stored(&second)).await,
        None,
        "gathered, not yet written"
    );
    h.clock.advance(Duration::seconds(1));
    h.store
        .record_asker_poll(first.round_id)
        .await
        .expect("poll");
    assert_eq!(h.raw_integer(&stored(&second)).await, Some(start_ms));
    assert_eq!(
        h.raw_integer(&stored(&first)).await,
        Some(start_ms),
        "the first is not due again for ten seconds"
    );
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

/// The store records a poll's delivery in one statement when it can; what it stores must be exactly what
/// the domain's rule (`Round::record_poll_delivery`) makes of the answered round, first attempt and later.
async fn a_poll_delivery_stores_what_the_domain_rule_records(h: &Harness) {
    let round = ask(h, "s1").await;
    answer(h, &round, accept(json!({"city": "Oslo"})), "k1")
        .await
        .expect("answer");
    for attempt in 1..=2 {
        h.clock.advance(Duration::milliseconds(1_250));
        let mut expected = h.store.get_round(round.round_id).await.expect("read");
        assert!(
            expected.record_poll_delivery(h.clock.now()),
            "attempt {attempt}"
        );
        let delivered = h
            .store
            .record_poll_delivery(round.round_id)
            .await
            .expect("delivered");
        let stored = h.store.get_round(round.round_id).await.expect("read again");
        for got in [&delivered, &stored] {
            assert_eq!(
                serde_json::to_value(got).expect("json"),
                serde_json::to_value(&expected).expect("json"),
                "attempt {attempt}"
            );
        }
    }
}

async fn a_poll_probe_finds_a_question_only_through_its_own_sessions_token(h: &Harness) {
    let round = ask(h, "probe-a").await;
    register(h, "probe-b").await;
    h.store
        .set_producer_token(&sid("probe-a"), Some("hash-a"), "test")
        .await
        .expect("token");
    h.store
        .set_producer_token(&sid("probe-b"), Some("hash-b"), "test")
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

/// A pending question's probe is remembered, and whatever the store commits that changes it is seen by the
/// very next probe: an answer, a new token, a revocation, expiry.
async fn a_remembered_poll_probe_never_outlives_a_change(h: &Harness) {
    let answered = ask(h, "remember-a").await;
    let rotated = ask_again(h, "remember-a").await;
    h.store
        .set_producer_token(&sid("remember-a"), Some("hash-1"), "test")
        .await
        .expect("token");
    let probe = |hash: &'static str, round: &Round| {
        let request = round.request_id.to_string();
        async move {
            h.store
                .poll_probe(hash, &request)
                .await
                .expect("probe")
                .map(|probe| probe.status)
        }
    };
    for _ in 0..2 {
        assert_eq!(probe("hash-1", &answered).await, Some(RoundStatus::Pending));
        assert_eq!(probe("hash-1", &rotated).await, Some(RoundStatus::Pending));
    }
    answer(h, &answered, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    assert_eq!(
        probe("hash-1", &answered).await,
        Some(RoundStatus::ResponseValidated),
        "the answer is seen at once"
    );
    h.store
        .set_producer_token(&sid("remember-a"), Some("hash-2"), "test")
        .await
        .expect("rotate");
    assert_eq!(
        probe("hash-1", &rotated).await,
        None,
        "the old token is refused at once"
    );
    let reasked = ask_again(h, "remember-a").await;
    assert_eq!(probe("hash-2", &reasked).await, Some(RoundStatus::Pending));
    h.store
        .set_producer_token(&sid("remember-a"), None, "test")
        .await
        .expect("revoke");
    assert_eq!(
        probe("hash-2", &reasked).await,
        None,
        "a revoked token is refused at once"
    );
}

/// The CLI changes a token from another process, which tells no server: the database counts the change, and
/// the store reads that count at most once a second, so the old token is refused from the next check on.
async fn a_token_changed_behind_the_stores_back_is_refused_from_the_next_check(h: &Harness) {
    let round = ask(h, "elsewhere").await;
    h.store
        .set_producer_token(&sid("elsewhere"), Some("hash-1"), "test")
        .await
        .expect("token");
    let request = round.request_id.to_string();
    let probe = || async {
        h.store
            .poll_probe("hash-1", &request)
            .await
            .expect("probe")
            .map(|probe| probe.status)
    };
    assert_eq!(probe().await, Some(RoundStatus::Pending));
    h.raw("UPDATE sessions SET producer_token_hash = 'hash-cli' WHERE id = 'elsewhere'")
        .await;
    assert_eq!(
        probe().await,
        Some(RoundStatus::Pending),
        "within the second, the remembered probe is still served"
    );
    h.clock.advance(Duration::seconds(1));
    assert_eq!(probe().await, None, "refused from the next check on");
    assert_eq!(
        h.store
            .poll_probe("hash-cli", &request)
            .await
            .expect("probe")
            .map(|probe| probe.status),
        Some(RoundStatus::Pending),
        "the new token finds it"
    );
}

crate::on_both_backends!(
    a_token_changed_behind_the_stores_back_is_refused_from_the_next_check,
    a_remembered_poll_probe_never_outlives_a_change,
    an_answer_never_picked_up_ends_undelivered_when_the_asker_stops,
    the_sweep_ends_undelivered_answers_too,
    an_answer_picked_up_in_time_stays_delivered,
    a_worker_with_a_live_lease_may_still_deliver_after_the_deadline,
    answers_after_the_askers_deadline_are_refused_with_why,
    revoking_or_rotating_a_token_ends_the_questions_asked_through_it,
    the_askers_polls_are_remembered_between_writes,
    the_askers_polls_reach_the_database_together,
    every_stored_time_is_what_was_acknowledged,
    poll_delivery_marks_delivered_and_counts_each_attempt,
    a_poll_delivery_stores_what_the_domain_rule_records,
    a_poll_probe_finds_a_question_only_through_its_own_sessions_token,
);
