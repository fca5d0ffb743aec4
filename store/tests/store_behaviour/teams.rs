//! Teams: groups and members, a session's (and a server's) responders, a question handed to someone, and the
//! one rule over them (`TeamStore::may_answer`).

use std::collections::BTreeMap;

use anteroom_store::domain::{
    access::{ApiKey, Principal, Role, User},
    responders::Responder,
    session::SessionSettings,
};

use crate::fixtures::*;
use crate::support::Harness;

fn person(username: &str, role: Role) -> User {
    User {
        id: format!("u-{username}"),
        username: username.to_owned(),
        role,
    }
}

fn responder(raw: &str) -> Responder {
    Responder::parse(raw).expect("responder")
}

/// Who answers `round` as the attention queue reads it, in its one statement, checked against the team view
/// (the session page's and the answer rule's reading): the two must never disagree.
async fn queue_agrees(h: &Harness, round: &anteroom_store::domain::round::Round) -> Vec<Responder> {
    let view = h.store.team_view().await.expect("view");
    let queue = h.store.attention_queue(200).await.expect("queue");
    let item = queue
        .iter()
        .find(|item| {
            item.oldest_open
                .as_ref()
                .is_some_and(|open| open.round_id == round.round_id)
        })
        .expect("the round is its session's oldest open question");
    assert_eq!(
        item.responders,
        view.scope(round),
        "the queue and the team view agree"
    );
    item.responders.clone()
}

async fn groups_keep_their_members_and_refuse_the_unknown(h: &Harness) {
    for name in ["rita", "sam"] {
        h.store
            .create_user(&person(name, Role::Responder), "hash")
            .await
            .expect("user");
    }
    let oncall = h
        .store
        .create_group("platform-oncall", "test")
        .await
        .expect("group");
    assert!(oncall.members.is_empty());
    assert!(
        h.store
            .create_group("platform-oncall", "test")
            .await
            .expect_err("taken")
            .refusal()
            .is_some(),
    );
    assert!(h.store.create_group("has space", "test").await.is_err());
    h.store
        .add_group_member("platform-oncall", "rita", "test")
        .await
        .expect("add");
    let twice = h
        .store
        .add_group_member("platform-oncall", "rita", "test")
        .await
        .expect("again");
    assert_eq!(twice.members, vec!["rita"]);
    assert!(
        h.store
            .add_group_member("platform-oncall", "nobody", "test")
            .await
            .expect_err("no person")
            .is_not_found()
    );
    assert!(
        h.store
            .add_group_member("nowhere", "rita", "test")
            .await
            .expect_err("no group")
            .is_not_found()
    );
    h.store
        .create_group("billing", "test")
        .await
        .expect("group");
    let groups = h.store.list_groups().await.expect("list");
    assert_eq!(
        groups
            .iter()
            .map(|g| (g.name.as_str(), g.members.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("billing", vec![]),
            ("platform-oncall", vec!["rita".to_owned()])
        ]
    );
    assert_eq!(
        h.store.user_groups("u-rita").await.expect("groups"),
        vec!["platform-oncall"]
    );
    assert!(
        h.store
            .remove_group_member("platform-oncall", "rita", "test")
            .await
            .expect("remove")
    );
    assert!(
        !h.store
            .remove_group_member("platform-oncall", "rita", "test")
            .await
            .expect("gone")
    );
    assert!(
        h.store
            .delete_group("billing", "test")
            .await
            .expect("delete")
    );
    assert!(!h.store.delete_group("billing", "test").await.expect("gone"));
}

async fn only_a_questions_responders_may_answer_it(h: &Harness) {
    for (name, role) in [
        ("rita", Role::Responder),
        ("sam", Role::Responder),
        ("ada", Role::Admin),
        ("vic", Role::Viewer),
    ] {
        h.store
            .create_user(&person(name, role), "hash")
            .await
            .expect("user");
    }
    h.store.create_group("oncall", "test").await.expect("group");
    h.store
        .add_group_member("oncall", "rita", "test")
        .await
        .expect("member");
    register(h, "s1").await;
    let round = ask(h, "s1").await;
    let who = |name: &str, role| Principal::person(&person(name, role));
    let key = Principal::api_key(&ApiKey {
        id: "k1".to_owned(),
        name: "orchestrator".to_owned(),
        role: Role::Responder,
    });

    // Nobody named: every responder, never a viewer.
    assert!(
        h.store
            .answer_scope(&round)
            .await
            .expect("scope")
            .is_empty()
    );
    for (principal, may) in [
        (who("rita", Role::Responder), true),
        (who("sam", Role::Responder), true),
        (key.clone(), true),
        (who("vic", Role::Viewer), false),
    ] {
        assert_eq!(
            h.store.may_answer(&principal, &round).await.expect("rule"),
            may,
            "{principal:?}"
        );
    }

    // The session names its group: only its members, admins, and the named key.
    h.store
        .set_session_settings(
            &sid("s1"),
            &SessionSettings {
                responders: vec![responder("group:oncall"), responder("key:orchestrator")],
                server_responders: BTreeMap::from([(
                    "billing".to_owned(),
                    vec![responder("user:sam")],
                )]),
                ..SessionSettings::default()
            },
            "test",
        )
        .await
        .expect("settings");
    let read = h.store.session_settings(&sid("s1")).await.expect("read");
    assert_eq!(
        read.responders,
        vec![responder("group:oncall"), responder("key:orchestrator")]
    );
    assert_eq!(
        h.store.answer_scope(&round).await.expect("scope"),
        read.responders
    );
    for (principal, may) in [
        (who("rita", Role::Responder), true),
        (who("sam", Role::Responder), false),
        (who("ada", Role::Admin), true),
        (key.clone(), true),
        (who("vic", Role::Viewer), false),
    ] {
        assert_eq!(
            h.store.may_answer(&principal, &round).await.expect("rule"),
            may,
            "{principal:?}"
        );
    }
    // A server of its own: that server's list.
    let mut billing = round.clone();
    billing.server = Some("billing".to_owned());
    assert!(
        h.store
            .may_answer(&who("sam", Role::Responder), &billing)
            .await
            .expect("rule")
    );
    assert!(
        !h.store
            .may_answer(&who("rita", Role::Responder), &billing)
            .await
            .expect("rule")
    );

    // Handed to sam: sam only (and admins), whatever the session says.
    h.store
        .assign_round(round.round_id, Some(&responder("user:sam")), "ada")
        .await
        .expect("assign");
    assert_eq!(
        h.store.answer_scope(&round).await.expect("scope"),
        vec![responder("user:sam")]
    );
    assert!(
        h.store
            .may_answer(&who("sam", Role::Responder), &round)
            .await
            .expect("rule")
    );
    assert!(
        !h.store
            .may_answer(&who("rita", Role::Responder), &round)
            .await
            .expect("rule")
    );
    assert!(!h.store.may_answer(&key, &round).await.expect("rule"));
    let view = h.store.team_view().await.expect("view");
    assert_eq!(view.scope(&round), vec![responder("user:sam")]);
    assert_eq!(queue_agrees(h, &round).await, vec![responder("user:sam")]);
    assert_eq!(view.scope(&billing), vec![responder("user:sam")]);

    // Handed back: the session's list again.
    h.store
        .assign_round(round.round_id, None, "ada")
        .await
        .expect("unassign");
    assert!(
        h.store
            .may_answer(&who("rita", Role::Responder), &round)
            .await
            .expect("rule")
    );
    let view = h.store.team_view().await.expect("view");
    assert_eq!(view.scope(&round), read.responders);
    assert_eq!(queue_agrees(h, &round).await, read.responders);

    // Leaving the group ends the right at once.
    h.store
        .remove_group_member("oncall", "rita", "test")
        .await
        .expect("remove");
    assert!(
        !h.store
            .may_answer(&who("rita", Role::Responder), &round)
            .await
            .expect("rule")
    );

    // Only a waiting question is handed on.
    answer(
        h,
        &round,
        accept(serde_json::json!({"city": "Oslo"})),
        "done",
    )
    .await
    .expect("answered");
    assert!(
        h.store
            .assign_round(round.round_id, Some(&responder("user:rita")), "ada")
            .await
            .expect_err("answered")
            .refusal()
            .is_some()
    );
}

async fn a_question_nobody_answers_climbs_its_ladder_once_then_ends_honestly(h: &Harness) {
    use anteroom_store::domain::{
        outward::{PollAction, outward_answer},
        responders::EscalationStep,
        round::{FailureCode, RoundStatus},
        session::LostReason,
    };
    use chrono::Duration;

    for name in ["rita", "lead"] {
        h.store
            .create_user(&person(name, Role::Responder), "hash")
            .await
            .expect("user");
    }
    h.store.create_group("oncall", "test").await.expect("group");
    h.store.create_group("leads", "test").await.expect("group");
    h.store
        .add_group_member("oncall", "rita", "test")
        .await
        .expect("member");
    h.store
        .add_group_member("leads", "lead", "test")
        .await
        .expect("member");
    register(h, "s1").await;
    h.store
        .set_session_settings(
            &sid("s1"),
            &SessionSettings {
                responders: vec![responder("group:oncall")],
                escalation: vec![EscalationStep {
                    after_minutes: 5,
                    notify: vec![responder("group:leads")],
                }],
                nobody_available_after_minutes: Some(15),
                ..SessionSettings::default()
            },
            "test",
        )
        .await
        .expect("settings");
    let round = ask(h, "s1").await;
    let lead = Principal::person(&person("lead", Role::Responder));
    assert!(!h.store.may_answer(&lead, &round).await.expect("rule"));

    // Before the step: nothing. At it: two ticks at once take it once.
    h.clock.advance(Duration::minutes(4));
    assert!(h.store.escalate().await.expect("tick").climbed.is_empty());
    h.clock.advance(Duration::minutes(2));
    let (a, b) = tokio::join!(h.store.escalate(), h.store.escalate());
    let climbed = a.expect("tick").climbed.len() + b.expect("tick").climbed.len();
    assert_eq!(climbed, 1, "one step, taken once");
    assert!(h.store.escalate().await.expect("tick").climbed.is_empty());
    assert_eq!(
        h.store
            .escalations_reached(round.round_id)
            .await
            .expect("steps"),
        1
    );
    // The leads were told, so they may answer now; the queue says so too.
    assert!(h.store.may_answer(&lead, &round).await.expect("rule"));
    let view = h.store.team_view().await.expect("view");
    assert_eq!(
        view.scope(&round),
        vec![responder("group:oncall"), responder("group:leads")]
    );
    assert_eq!(
        queue_agrees(h, &round).await,
        vec![responder("group:oncall"), responder("group:leads")]
    );

    // At the ladder's end nobody answered: it ends, before its own deadline, and says so.
    h.clock.advance(Duration::minutes(10));
    let done = h.store.escalate().await.expect("tick");
    assert_eq!(done.ended.len(), 1);
    let ended = h.store.get_round(round.round_id).await.expect("read");
    assert_eq!(ended.status, RoundStatus::Failed);
    let failure = ended.failure.clone().expect("failure");
    assert_eq!(failure.code, FailureCode::NobodyAvailable);
    assert!(
        failure
            .message
            .starts_with("Nobody was available: oncall, leads were asked"),
        "{}",
        failure.message
    );
    assert!(ended.updated_at < ended.deadline);
    let outward = outward_answer(&ended, "address");
    assert_eq!(outward.action, PollAction::Expired);
    assert_eq!(outward.failure_code.as_deref(), Some("nobody_available"));
    let session = h.store.get_session(&sid("s1")).await.expect("session");
    assert_eq!(
        session.lost_elicitation.map(|lost| lost.reason),
        Some(LostReason::NobodyAvailable)
    );
    assert!(
        h.store.escalate().await.expect("tick").ended.is_empty(),
        "once"
    );
}

async fn the_same_question_is_found_by_its_summary_while_it_waits(h: &Harness) {
    use chrono::Duration;
    let first = ask(h, "s1").await;
    let second = ask(h, "s2").await;
    let found = h
        .store
        .open_rounds_asking(&first.summary, 10)
        .await
        .expect("read");
    assert_eq!(
        found.iter().map(|round| round.round_id).collect::<Vec<_>>(),
        vec![first.round_id, second.round_id]
    );
    assert!(
        h.store
            .open_rounds_asking("book_shipment: Somewhere else?", 10)
            .await
            .expect("read")
            .is_empty()
    );
    answer(h, &first, accept(serde_json::json!({"city": "Oslo"})), "k1")
        .await
        .expect("answered");
    assert_eq!(
        h.store
            .open_rounds_asking(&first.summary, 10)
            .await
            .expect("read")
            .len(),
        1
    );
    h.clock.advance(Duration::minutes(61));
    assert!(
        h.store
            .open_rounds_asking(&first.summary, 10)
            .await
            .expect("read")
            .is_empty(),
        "due"
    );
}

crate::on_both_backends!(
    groups_keep_their_members_and_refuse_the_unknown,
    only_a_questions_responders_may_answer_it,
    a_question_nobody_answers_climbs_its_ladder_once_then_ends_honestly,
    the_same_question_is_found_by_its_summary_while_it_waits,
);
