//! One path for announcing a change: what the store changed becomes events for live pages, pollers and other
//! instances, and metrics. Every web, API and job path announces through here; changes the store makes on its
//! own (expiry, undelivered answers, revoked tokens) reach [`crate::events::EventHub`] as the store's observer.

use anteroom_domain::{
    ids::SessionId,
    round::{Round, Submission},
};

use crate::{AppState, events::EventKind};

fn about_round(state: &AppState, kind: EventKind, round: &Round) {
    state.events.publish(
        kind,
        round.session_id.as_str(),
        Some(round.round_id.to_string()),
        Some(round.request_id.to_string()),
    );
}

/// A question was asked.
pub fn round_created(state: &AppState, round: &Round) {
    about_round(state, EventKind::RoundCreated, round);
}

/// An answer was recorded (a replay of the same answer announces nothing): counted, and announced to pages,
/// pollers and other instances.
pub fn answer_recorded(state: &AppState, round: &Round, submission: Submission) {
    if submission != Submission::Recorded {
        return;
    }
    let waited = round
        .responded_at
        .map(|at| (at - round.created_at).num_milliseconds() as f64 / 1000.0)
        .unwrap_or_default();
    for response in round.responses.iter().flat_map(|r| r.values()) {
        state
            .metrics
            .record_answer(response.action.as_str(), waited);
    }
    about_round(state, EventKind::RoundAnswered, round);
    session_changed(state, &round.session_id);
}

/// A round changed in a way its session's page shows (a worker's failure, a recovery).
pub fn round_changed(state: &AppState, round: &Round) {
    state.events.publish(
        EventKind::SessionChanged,
        round.session_id.as_str(),
        Some(round.round_id.to_string()),
        Some(round.request_id.to_string()),
    );
}

/// A session's run printed more output: only that session's pages fetch it (the queue is not read again).
pub fn run_output(state: &AppState, session: &SessionId) {
    state
        .events
        .publish(EventKind::RunOutput, session.as_str(), None, None);
}

/// A session changed (registered, resumed, finished, cancelled, swept).
pub fn session_changed(state: &AppState, session: &SessionId) {
    state
        .events
        .publish(EventKind::SessionChanged, session.as_str(), None, None);
}
