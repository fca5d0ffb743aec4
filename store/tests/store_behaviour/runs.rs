//! Agent runs (docs/runs.md): one live run per session, its reports and output, a stop, and how its end
//! ends the session's waiting questions — with the run's reason, never left to expire.

use anteroom_store::domain::clock::Clock as _;
use anteroom_store::domain::{
    round::{FailureCode, ResponseAction, RoundStatus},
    run::{OUTPUT_KEPT, RunEnd, RunStart, RunState},
    session::SessionStatus,
};
use chrono::Duration;

use crate::fixtures::*;
use crate::support::Harness;

fn start() -> RunStart {
    RunStart {
        command: "claude -p 'deploy'".into(),
        host: "build-7".into(),
    }
}

fn exited(code: i32) -> RunEnd {
    RunEnd {
        exit_code: Some(code),
        signal: None,
        stopped: false,
    }
}

async fn a_run_takes_a_session_and_a_second_live_one_is_refused(h: &Harness) {
    register(h, "s1").await;
    let run = h
        .store
        .start_run(&sid("s1"), "r1", start())
        .await
        .expect("start");
    assert_eq!(run.state, RunState::Running);
    assert_eq!(h.store.run(&sid("s1")).await.expect("read"), Some(run));
    // The queue shows it, in the one statement that reads the queue.
    let queue = h.store.attention_queue(10).await.expect("queue");
    assert_eq!(queue[0].run_state, Some(RunState::Running));
    let refused = refusal(h.store.start_run(&sid("s1"), "r2", start()).await);
    assert_eq!(refused.code(), "managed_input_conflict");
    assert!(
        refused.message().contains("build-7"),
        "{}",
        refused.message()
    );
    // Unknown sessions have no run to start.
    assert_eq!(
        refusal(h.store.start_run(&sid("ghost"), "r3", start()).await).code(),
        "not_found"
    );
    // Once it ends, a new run takes the session over, with a fresh record.
    h.store
        .end_run(&sid("s1"), "r1", &exited(0), "bye\n")
        .await
        .expect("end");
    let second = h
        .store
        .start_run(&sid("s1"), "r2", start())
        .await
        .expect("second");
    assert_eq!(second.run_id, "r2");
    assert_eq!(
        h.store
            .run_output(&sid("s1"))
            .await
            .expect("output")
            .as_deref(),
        Some("")
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Running);
    // The old run's late words are refused.
    assert_eq!(
        refusal(h.store.report_run(&sid("s1"), "r1", "late\n").await).code(),
        "managed_input_state"
    );
}

async fn reports_keep_the_last_of_the_output_and_the_heartbeat(h: &Harness) {
    register(h, "s1").await;
    h.store
        .start_run(&sid("s1"), "r1", start())
        .await
        .expect("start");
    h.clock.advance(Duration::seconds(10));
    let line = format!("{}\n", "z".repeat(1_023));
    for _ in 0..100 {
        h.store
            .report_run(&sid("s1"), "r1", &line)
            .await
            .expect("report");
    }
    let run = h.store.run(&sid("s1")).await.expect("read").expect("run");
    assert_eq!(run.heartbeat_at, h.clock.now());
    let output = h
        .store
        .run_output(&sid("s1"))
        .await
        .expect("output")
        .expect("kept");
    assert!(output.len() <= OUTPUT_KEPT && output.len() >= OUTPUT_KEPT - 1_024);
    assert!(output.starts_with('z') && output.ends_with("z\n"));
}

async fn the_end_of_a_run_ends_its_waiting_questions_with_its_reason(h: &Harness) {
    register(h, "s1").await;
    h.store
        .start_run(&sid("s1"), "r1", start())
        .await
        .expect("start");
    let waiting = ask(h, "s1").await;
    assert_eq!(session(h, "s1").await.status, SessionStatus::NeedsInput);
    assert_eq!(
        h.store
            .run(&sid("s1"))
            .await
            .expect("read")
            .expect("run")
            .seen_with(SessionStatus::NeedsInput)
            .state,
        RunState::NeedsInput
    );
    let (run, ended) = h
        .store
        .end_run(&sid("s1"), "r1", &exited(1), "Error: boom\n")
        .await
        .expect("end");
    assert_eq!(run.state, RunState::Failed);
    assert_eq!(run.exit_code, Some(1));
    assert_eq!(ended.len(), 1);
    let round = h.store.get_round(waiting.round_id).await.expect("round");
    assert_eq!(round.status, RoundStatus::Failed);
    let failure = round.failure.expect("failure");
    assert_eq!(failure.code, FailureCode::AgentEnded);
    assert_eq!(
        failure.message,
        "The agent exited with code 1 before anyone answered."
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Failed);
    // An answer that arrives after is refused with the reason.
    let late = refusal(answer(h, &waiting, bare(ResponseAction::Decline), "late").await);
    assert!(
        late.message().contains("exited with code 1"),
        "{}",
        late.message()
    );
    // Said twice, the first word stands.
    let (again, none) = h
        .store
        .end_run(&sid("s1"), "r1", &exited(0), "")
        .await
        .expect("again");
    assert_eq!((again.state, none.len()), (RunState::Failed, 0));
}

async fn a_stop_is_recorded_with_who_asked(h: &Harness) {
    register(h, "s1").await;
    h.store
        .start_run(&sid("s1"), "r1", start())
        .await
        .expect("start");
    let waiting = ask(h, "s1").await;
    let asked = h
        .store
        .request_stop(&sid("s1"), "rita")
        .await
        .expect("stop");
    assert_eq!(asked.stop_requested_by.as_deref(), Some("rita"));
    // A second person asking does not replace the first.
    h.store
        .request_stop(&sid("s1"), "sam")
        .await
        .expect("again");
    let interrupted = RunEnd {
        exit_code: None,
        signal: Some(2),
        stopped: true,
    };
    let (run, ended) = h
        .store
        .end_run(&sid("s1"), "r1", &interrupted, "")
        .await
        .expect("end");
    assert_eq!(run.state, RunState::Stopped);
    assert_eq!(run.stopped_by.as_deref(), Some("rita"));
    assert_eq!(ended[0].round_id, waiting.round_id);
    assert_eq!(
        ended[0].failure.as_ref().map(|f| f.message.as_str()),
        Some("rita stopped the agent before anyone answered.")
    );
    assert_eq!(session(h, "s1").await.status, SessionStatus::Cancelled);
    assert_eq!(
        refusal(h.store.request_stop(&sid("s1"), "rita").await).code(),
        "managed_input_state"
    );
    h.store.seal_audit().await.expect("seal");
    let entries = h.store.audit_entries(0, None, 100).await.expect("audit");
    let stop = entries
        .iter()
        .find(|entry| entry.action == "run.stop_requested")
        .expect("the stop is in the record");
    assert_eq!(stop.actor, "rita");
}

async fn a_run_that_stops_reporting_is_lost_and_ends_its_questions(h: &Harness) {
    register(h, "s1").await;
    register(h, "s2").await;
    h.store
        .start_run(&sid("s1"), "r1", start())
        .await
        .expect("start");
    h.store
        .start_run(&sid("s2"), "r2", start())
        .await
        .expect("start");
    let waiting = ask(h, "s1").await;
    h.clock.advance(Duration::seconds(100));
    h.store
        .report_run(&sid("s2"), "r2", "")
        .await
        .expect("s2 reports");
    assert!(h.store.lose_quiet_runs().await.expect("sweep").is_empty());
    h.clock.advance(Duration::seconds(21));
    let lost = h.store.lose_quiet_runs().await.expect("sweep");
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].0, sid("s1"));
    assert_eq!(lost[0].1[0].round_id, waiting.round_id);
    assert_eq!(
        h.store
            .run(&sid("s1"))
            .await
            .expect("read")
            .expect("run")
            .state,
        RunState::Lost
    );
    assert_eq!(
        h.store
            .run(&sid("s2"))
            .await
            .expect("read")
            .expect("run")
            .state,
        RunState::Running
    );
    // A lost run that comes back and reports its end is recorded as it ended.
    let (run, _) = h
        .store
        .end_run(&sid("s1"), "r1", &exited(0), "")
        .await
        .expect("end");
    assert_eq!(run.state, RunState::Finished);
    // A new run may take a quiet session over without waiting for the sweep.
    h.clock.advance(Duration::minutes(3));
    h.store
        .start_run(&sid("s2"), "r3", start())
        .await
        .expect("takes over");
}

crate::on_both_backends!(
    a_run_takes_a_session_and_a_second_live_one_is_refused,
    reports_keep_the_last_of_the_output_and_the_heartbeat,
    the_end_of_a_run_ends_its_waiting_questions_with_its_reason,
    a_stop_is_recorded_with_who_asked,
    a_run_that_stops_reporting_is_lost_and_ends_its_questions,
);
