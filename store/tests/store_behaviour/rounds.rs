//! Reading rounds back: the pending one, lists and pages, and answers with their values redacted.

use anteroom_store::domain::{
    ids::RoundId,
    round::{ResponseAction, Round},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

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

/// Hostile text in a question and in its session's title comes back as written: on PostgreSQL a create's rows
/// travel as one JSON parameter (`sql::insert_from_records`), so quotes, backslashes and escapes must survive it.
async fn hostile_text_in_a_question_comes_back_as_written(h: &Harness) {
    let hostile = "\"'\\ \\u0000 🦀 \u{202e}é {\"a\": [1]} $1 ::json";
    h.store
        .register_session(anteroom_store::domain::session::NewSession {
            id: sid("hostile"),
            title: Some(hostile.to_owned()),
            agent: Some(hostile.to_owned()),
        })
        .await
        .expect("register session");
    let mut new = new_round("hostile", vec![("a", form(hostile, None))]);
    new.operation_name = hostile.to_owned();
    new.request_state = Some(hostile.to_owned());
    let created = h.store.create_round(new).await.expect("create");
    let read = h.store.get_round(created.round_id).await.expect("read");
    assert_eq!(read, created);
    assert_eq!(read.operation_name, hostile);
    assert_eq!(read.request_state.as_deref(), Some(hostile));
    assert_eq!(
        read.requests
            .values()
            .next()
            .map(|request| request.message()),
        Some(hostile)
    );
    let session = h.store.get_session(&sid("hostile")).await.expect("session");
    assert_eq!(session.title, hostile);
    assert_eq!(session.agent.as_deref(), Some(hostile));
}

crate::on_both_backends!(
    hostile_text_in_a_question_comes_back_as_written,
    pending_round_is_single_or_none_and_several_is_a_state_error,
    rounds_are_listed_newest_first,
    history_pages_newest_first_and_open_rounds_oldest_first,
    redacted_responses_show_keys_actions_and_field_names_only,
);
