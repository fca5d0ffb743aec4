//! Property tests over random operation sequences, on both backends: a terminal round never changes, at most
//! one answer is ever stored, a session needs input exactly when it has an active round, and the response-time
//! figures of every period equal a recompute from every round ever stored, whenever the ended ones were counted
//! or purged and however many days passed.

use std::collections::{BTreeMap, HashMap};

use crate::support::Harness;
use anteroom_store::{
    StoreError,
    domain::{
        clock::Clock,
        ids::{IdempotencyKey, LeaseToken, OwnerId, RequestKey, RoundId, SessionId},
        round::{
            ElicitationRequest, ElicitationResponse, FailureCode, NewRound, OperationKind,
            ResponseAction, Round,
        },
        session::{NewSession, SessionStatus},
        stats,
    },
};
use chrono::Duration;
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Op {
    Ask,
    Answer {
        round: usize,
        action: u8,
        key: u8,
    },
    Claim {
        round: usize,
        worker: u8,
    },
    StartDelivery {
        round: usize,
    },
    MarkDelivered {
        round: usize,
    },
    Resolve {
        round: usize,
    },
    Fail {
        round: usize,
    },
    Advance {
        seconds: u32,
    },
    /// Days pass: the periods' first days move, and questions leave the shorter ones.
    AdvanceDays {
        days: u32,
    },
    ExpireSweep,
    RecoverLeases,
    StrandedSweep,
    Read {
        round: usize,
    },
    /// The tally job, counting at most this many ended questions.
    Count {
        limit: u32,
    },
    /// The purge, of rounds unchanged for an hour.
    Purge,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Ask),
        3 => (0..4usize, 0..3u8, 0..3u8).prop_map(|(round, action, key)| Op::Answer { round, action, key }),
        2 => (0..4usize, 0..2u8).prop_map(|(round, worker)| Op::Claim { round, worker }),
        1 => (0..4usize).prop_map(|round| Op::StartDelivery { round }),
        1 => (0..4usize).prop_map(|round| Op::MarkDelivered { round }),
        1 => (0..4usize).prop_map(|round| Op::Resolve { round }),
        1 => (0..4usize).prop_map(|round| Op::Fail { round }),
        2 => prop_oneof![Just(20u32), Just(600), Just(3_700)].prop_map(|seconds| Op::Advance { seconds }),
        1 => prop_oneof![Just(1u32), Just(6), Just(25)].prop_map(|days| Op::AdvanceDays { days }),
        1 => Just(Op::ExpireSweep),
        1 => Just(Op::RecoverLeases),
        1 => Just(Op::StrandedSweep),
        1 => (0..4usize).prop_map(|round| Op::Read { round }),
        2 => (1..4u32).prop_map(|limit| Op::Count { limit }),
        1 => Just(Op::Purge),
    ]
}

fn session_id() -> SessionId {
    SessionId::parse("prop").expect("valid id")
}

fn address() -> RequestKey {
    RequestKey::parse("address").expect("valid key")
}

fn new_round() -> NewRound {
    NewRound {
        session_id: session_id(),
        request_id: None,
        logical_operation_id: "op".into(),
        server: None,
        operation_kind: OperationKind::Tool,
        operation_name: "tool".into(),
        requests: BTreeMap::from([(
            address(),
            ElicitationRequest::Form {
                message: "Where?".into(),
                requested_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                meta: None,
            },
        )]),
        request_state: None,
        round_index: 0,
        round_limit: 1,
        deadline: None,
        fingerprint: None,
        asked_through: Default::default(),
    }
}

/// Runs one operation; refusals are expected, any other failure is a bug.
async fn run(
    h: &Harness,
    op: &Op,
    rounds: &[RoundId],
    leases: &mut HashMap<RoundId, (OwnerId, LeaseToken)>,
) {
    let pick = |i: &usize| rounds.get(*i).copied();
    let worker = |id: &RoundId| leases.get(id).cloned();
    let result: Result<(), StoreError> = match op {
        Op::Ask => h.store.create_round(new_round()).await.map(drop),
        Op::Answer { round, action, key } => match pick(round) {
            Some(id) => {
                let action = [
                    ResponseAction::Accept,
                    ResponseAction::Decline,
                    ResponseAction::Cancel,
                ][usize::from(*action)];
                let content = (action == ResponseAction::Accept)
                    .then(|| json!({"city": "Pune"}).as_object().cloned())
                    .flatten();
                let responses =
                    BTreeMap::from([(address(), ElicitationResponse::new(action, content))]);
                let key = IdempotencyKey::parse(format!("k{key}")).expect("valid key");
                h.store
                    .submit_responses(id, responses, key, None)
                    .await
                    .map(drop)
            }
            None => Ok(()),
        },
        Op::Claim { round, worker: w } => match pick(round) {
            Some(id) => {
                let owner = OwnerId::parse(format!("w{w}")).expect("valid owner");
                match h
                    .store
                    .claim_round(id, owner.clone(), Duration::seconds(60))
                    .await
                {
                    Ok(lease) => {
                        leases.insert(id, (owner, lease.lease_token));
                        Ok(())
                    }
                    Err(error) => Err(error),
                }
            }
            None => Ok(()),
        },
        Op::StartDelivery { round }
        | Op::MarkDelivered { round }
        | Op::Resolve { round }
        | Op::Fail { round } => match pick(round).and_then(|id| worker(&id).map(|w| (id, w))) {
            Some((id, (owner, token))) => match op {
                Op::StartDelivery { .. } => {
                    h.store.start_delivery(id, &owner, &token).await.map(drop)
                }
                Op::MarkDelivered { .. } => {
                    h.store.mark_delivered(id, &owner, &token).await.map(drop)
                }
                Op::Resolve { .. } => h.store.resolve(id, &owner, &token).await.map(drop),
                _ => h
                    .store
                    .fail(id, &owner, &token, FailureCode::DeliveryFailed, "x".into())
                    .await
                    .map(drop),
            },
            None => Ok(()),
        },
        Op::Advance { seconds } => {
            h.clock.advance(Duration::seconds(i64::from(*seconds)));
            Ok(())
        }
        Op::AdvanceDays { days } => {
            h.clock.advance(Duration::days(i64::from(*days)));
            Ok(())
        }
        Op::ExpireSweep => h.store.expire_due_rounds().await.map(drop),
        Op::RecoverLeases => h.store.recover_leases().await.map(drop),
        Op::StrandedSweep => h.store.sweep_stranded().await.map(drop),
        Op::Read { round } => match pick(round) {
            Some(id) => h.store.get_round(id).await.map(drop),
            None => Ok(()),
        },
        Op::Count { limit } => h.store.count_ended_questions(*limit).await.map(drop),
        Op::Purge => h
            .store
            .purge_terminal_rounds(h.clock.now() - Duration::hours(1))
            .await
            .map(drop),
    };
    match result {
        Ok(()) | Err(StoreError::Refused(_)) => {}
        Err(other) => panic!("{op:?} failed: {other:?}"),
    }
}

async fn check_sequence(h: &Harness, ops: &[Op]) {
    h.store
        .register_session(NewSession {
            id: session_id(),
            title: None,
            agent: None,
        })
        .await
        .expect("register");
    let mut leases = HashMap::new();
    let mut seen: HashMap<RoundId, Round> = HashMap::new();
    // Every round ever listed, as last seen: what the figures must still count after the purge took it.
    let mut ever: HashMap<RoundId, Round> = HashMap::new();
    for op in ops {
        let ids: Vec<RoundId> = {
            let mut listed: Vec<Round> = h.store.list_rounds(&session_id()).await.expect("list");
            listed.sort_by_key(|r| (r.created_at, r.round_id));
            listed.into_iter().map(|r| r.round_id).collect()
        };
        run(h, op, &ids, &mut leases).await;

        let session = h.store.get_session(&session_id()).await.expect("session");
        let rounds = h.store.list_rounds(&session_id()).await.expect("list");
        for round in &rounds {
            if let Some(before) = seen.get(&round.round_id) {
                if before.status.is_terminal() {
                    assert_eq!(
                        round, before,
                        "a terminal round never changes (after {op:?})"
                    );
                }
                if let Some(answer) = &before.responses {
                    assert_eq!(
                        round.responses.as_ref(),
                        Some(answer),
                        "at most one answer is stored (after {op:?})"
                    );
                }
            }
        }
        if !matches!(
            session.status,
            SessionStatus::Failed | SessionStatus::Cancelled
        ) {
            let now = h.clock.now();
            let active = rounds.iter().any(|r| r.is_active(now));
            assert_eq!(
                session.status == SessionStatus::NeedsInput,
                active,
                "needs_input exactly when a round is active (after {op:?}): {session:?}"
            );
        }
        ever.extend(rounds.iter().map(|r| (r.round_id, r.clone())));
        let outcomes: Vec<_> = ever.values().map(outcome).collect();
        for days in stats::PERIODS {
            let since = h.clock.now() - Duration::days(i64::from(days));
            let since_day = stats::day_of(since.timestamp_millis());
            let recomputed = stats::response_times(
                days,
                stats::tally(&outcomes)
                    .into_iter()
                    .filter(|count| count.day >= since_day),
            );
            assert_eq!(
                h.store.response_times(days).await.expect("figures"),
                recomputed,
                "the figures of {days} days equal a recompute from the rounds (after {op:?})"
            );
        }
        seen = rounds.into_iter().map(|r| (r.round_id, r)).collect();
    }
}

/// A round as the response-time counts see it.
fn outcome(round: &Round) -> stats::QuestionOutcome {
    stats::QuestionOutcome {
        created_at_ms: round.created_at.timestamp_millis(),
        session_id: round.session_id.to_string(),
        server: round.server.clone(),
        responded_by: round.responded_by.clone(),
        responded_at_ms: round.responded_at.map(|at| at.timestamp_millis()),
        failure_code: round.failure.as_ref().map(|f| f.code.as_str().to_owned()),
        status: round.status.as_str().to_owned(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn sqlite_random_sequences_keep_the_invariants(ops in prop::collection::vec(op(), 1..30)) {
        runtime().block_on(async {
            let h = Harness::sqlite().await;
            check_sequence(&h, &ops).await;
            h.finish().await;
        });
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn postgres_random_sequences_keep_the_invariants(ops in prop::collection::vec(op(), 1..30)) {
        runtime().block_on(async {
            let Some(h) = Harness::postgres().await else { return };
            check_sequence(&h, &ops).await;
            h.finish().await;
        });
    }
}
