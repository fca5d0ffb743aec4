//! Session markers (docs/lifecycle.md#lost-markers): blocked and lost, set and cleared.

use anteroom_store::domain::{
    round::ResponseAction,
    session::{LostReason, SessionStatus},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

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

crate::on_both_backends!(
    answered_round_returns_session_to_running_and_clears_markers,
    answering_one_of_two_open_rounds_keeps_needs_input,
    new_round_clears_the_lost_marker,
    resume_clears_the_lost_marker,
    stranded_needs_input_session_keeps_status_and_explains,
    stranded_running_session_only_loses_the_marker,
    sweep_leaves_sessions_with_active_rounds_alone,
);
