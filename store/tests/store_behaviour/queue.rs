//! Sessions from the outside: cancelling, finishing, looking up, and the attention queue.

use anteroom_store::domain::{
    ids::RequestId,
    outward::{PollAction, outward_answer},
    round::{FailureCode, ResponseAction},
    session::{LostReason, SessionStatus},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::{self, Harness};

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

    // The pages' one-statement reading agrees: the same sessions in the same order, each with the same
    // oldest question, whole (its requests included).
    let listed = h.store.list_sessions(10).await.expect("list");
    let attention = h.store.attention_queue(10).await.expect("queue");
    assert_eq!(
        attention
            .iter()
            .map(|item| item.entry.clone())
            .collect::<Vec<_>>(),
        listed
    );
    let questions: Vec<_> = attention
        .iter()
        .map(|item| item.oldest_open.as_ref().map(|round| round.round_id))
        .collect();
    assert_eq!(
        questions,
        vec![Some(first.round_id), Some(other.round_id), None]
    );
    assert_eq!(attention[0].oldest_open.as_ref(), Some(&oldest[0]));
}

/// The pages' reading never shows a question past its deadline as open: it expires first and reads again.
async fn the_attention_queue_expires_what_is_due_before_showing_it(h: &Harness) {
    let round = ask(h, "due-a").await;
    h.clock.advance(Duration::days(8));
    let attention = h.store.attention_queue(10).await.expect("queue");
    let item = attention
        .iter()
        .find(|item| item.entry.session.id.as_str() == "due-a")
        .expect("the session is listed");
    assert_eq!(
        (item.entry.open_rounds, item.oldest_open.as_ref()),
        (0, None)
    );
    let read = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(
        read.failure.map(|failure| failure.code),
        Some(FailureCode::Expired)
    );
}

async fn open_questions_are_listed_across_sessions_oldest_first(h: &Harness) {
    let first = ask(h, "across-a").await;
    h.clock.advance(Duration::seconds(5));
    let second = ask(h, "across-b").await;
    h.clock.advance(Duration::seconds(5));
    let answered = ask_again(h, "across-a").await;
    answer(h, &answered, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    let open: Vec<_> = h
        .store
        .open_rounds_everywhere(10)
        .await
        .expect("read")
        .iter()
        .map(|round| round.round_id)
        .collect();
    assert_eq!(
        open,
        vec![first.round_id, second.round_id],
        "answered ones are not open"
    );
    assert_eq!(
        h.store.open_rounds_everywhere(1).await.expect("read").len(),
        1
    );
    // Overdue questions are ended by the read itself, not listed.
    h.clock.advance(Duration::days(8));
    assert!(
        h.store
            .open_rounds_everywhere(10)
            .await
            .expect("read")
            .is_empty()
    );
}

/// The open-question count and oldest time the queue orders by are kept by the database on every write: asking,
/// answering and expiry all move them.
async fn the_queues_counts_follow_asking_answering_and_expiry(h: &Harness) {
    let counts = |queue: Vec<anteroom_store::QueueEntry>| {
        queue
            .into_iter()
            .find(|entry| entry.session.id.as_str() == "count-a")
            .map(|entry| {
                (
                    entry.open_rounds,
                    entry.oldest_open_at.map(|at| at.timestamp_millis()),
                )
            })
            .expect("the session is queued")
    };
    let first = ask(h, "count-a").await;
    h.clock.advance(Duration::seconds(5));
    let second = ask_again(h, "count-a").await;
    assert_eq!(
        counts(h.store.list_sessions(10).await.expect("queue")),
        (2, Some(first.created_at.timestamp_millis()))
    );
    answer(h, &first, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answered");
    assert_eq!(
        counts(h.store.list_sessions(10).await.expect("queue")),
        (1, Some(second.created_at.timestamp_millis())),
        "the oldest open question is now the second"
    );
    h.clock.advance(Duration::days(8));
    assert_eq!(
        counts(h.store.list_sessions(10).await.expect("queue")),
        (0, None),
        "expiry closes the last one"
    );
}

crate::on_both_backends!(
    the_queues_counts_follow_asking_answering_and_expiry,
    the_attention_queue_expires_what_is_due_before_showing_it,
    open_questions_are_listed_across_sessions_oldest_first,
    cancelling_a_session_fails_its_open_rounds,
    finishing_is_refused_while_questions_are_open,
    unknown_ids_are_not_found,
    attention_queue_puts_open_questions_first_then_lost_then_the_rest,
    the_queue_gets_each_waiting_sessions_oldest_question,
);
