//! Standing answers: one use per matching question within the rule's limit and lifetime, in the rule's
//! session (or everywhere), the newest first; a revoked rule answers nothing.

use anteroom_store::domain::clock::Clock;
use anteroom_store::domain::{
    ids::SessionId,
    round::ResponseAction,
    standing::{NewStandingAnswer, QuestionMatch},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

fn question(message: &str) -> QuestionMatch {
    QuestionMatch {
        server: "claude-code".to_owned(),
        tool: "Bash".to_owned(),
        message: message.to_owned(),
        schema: r#"{"type":"object"}"#.to_owned(),
    }
}

fn rule(
    h: &Harness,
    session: Option<&str>,
    message: &str,
    limit: Option<i64>,
) -> NewStandingAnswer {
    NewStandingAnswer {
        created_by: "rita".to_owned(),
        session_id: session.map(|id| SessionId::parse(id).expect("id")),
        question: question(message),
        action: ResponseAction::Accept,
        content: json!({"reason": "fine"}).as_object().cloned(),
        expires_at: h.clock.now() + Duration::hours(1),
        use_limit: limit,
        prefix: false,
    }
}

async fn a_rule_answers_its_own_question_until_its_limit(h: &Harness) {
    register(h, "s1").await;
    register(h, "s2").await;
    let s1 = SessionId::parse("s1").expect("id");
    let s2 = SessionId::parse("s2").expect("id");
    let made = h
        .store
        .create_standing_answer(rule(h, Some("s1"), "$ npm test", Some(2)))
        .await
        .expect("create");
    assert_eq!(made.uses, 0);
    assert_eq!(made.answerer(), format!("rule #{} (rita)", made.id));
    assert_eq!(made.content, json!({"reason": "fine"}).as_object().cloned());

    // Another message, another session: not this rule's question.
    let other = question("$ npm publish");
    assert!(
        h.store
            .use_standing_answer(&s1, &other)
            .await
            .expect("use")
            .is_none()
    );
    assert!(
        h.store
            .use_standing_answer(&s2, &question("$ npm test"))
            .await
            .expect("use")
            .is_none()
    );

    for expected_uses in [1, 2] {
        let used = h
            .store
            .use_standing_answer(&s1, &question("$ npm test"))
            .await
            .expect("use")
            .expect("the rule answers");
        assert_eq!(used.id, made.id);
        assert_eq!(used.uses, expected_uses);
    }
    assert!(
        h.store
            .use_standing_answer(&s1, &question("$ npm test"))
            .await
            .expect("use")
            .is_none(),
        "its limit is spent"
    );
    assert!(
        h.store
            .standing_answers(&s1)
            .await
            .expect("list")
            .is_empty()
    );
}

async fn a_rule_for_every_session_ends_when_it_expires_or_is_revoked(h: &Harness) {
    register(h, "s1").await;
    let s1 = SessionId::parse("s1").expect("id");
    let everywhere = h
        .store
        .create_standing_answer(rule(h, None, "$ make", None))
        .await
        .expect("create");
    let listed = h.store.standing_answers(&s1).await.expect("list");
    assert_eq!(
        listed.iter().map(|rule| rule.id).collect::<Vec<_>>(),
        [everywhere.id]
    );
    assert!(
        h.store
            .use_standing_answer(&s1, &question("$ make"))
            .await
            .expect("use")
            .is_some()
    );

    h.clock.advance(Duration::hours(1));
    assert!(
        h.store
            .use_standing_answer(&s1, &question("$ make"))
            .await
            .expect("use")
            .is_none(),
        "expired at its hour"
    );

    let fresh = h
        .store
        .create_standing_answer(rule(h, Some("s1"), "$ make", None))
        .await
        .expect("create");
    let revoked = h
        .store
        .revoke_standing_answer(fresh.id, "test")
        .await
        .expect("revoke");
    assert!(revoked.revoked_at.is_some());
    assert!(
        h.store
            .use_standing_answer(&s1, &question("$ make"))
            .await
            .expect("use")
            .is_none()
    );
    let again = h
        .store
        .revoke_standing_answer(fresh.id, "test")
        .await
        .expect("again");
    assert_eq!(
        again.revoked_at, revoked.revoked_at,
        "the first revocation stands"
    );
    assert_eq!(
        h.store
            .revoke_standing_answer(fresh.id + 1000, "test")
            .await
            .err()
            .map(|error| error.to_string().contains("No standing answer")),
        Some(true)
    );
}

async fn concurrent_questions_never_take_more_than_the_limit(h: &Harness) {
    register(h, "s1").await;
    let s1 = SessionId::parse("s1").expect("id");
    h.store
        .create_standing_answer(rule(h, Some("s1"), "$ deploy", Some(3)))
        .await
        .expect("create");
    let uses = (0..12).map(|_| {
        let store = h.store.clone();
        let s1 = s1.clone();
        tokio::spawn(async move { store.use_standing_answer(&s1, &question("$ deploy")).await })
    });
    let mut answered = 0;
    for used in uses {
        if used.await.expect("task").expect("use").is_some() {
            answered += 1;
        }
    }
    assert_eq!(answered, 3);
}

async fn a_paused_rule_answers_nothing_and_a_prefix_rule_matches_beginnings(h: &Harness) {
    register(h, "s1").await;
    let s1 = SessionId::parse("s1").expect("id");
    let mut prefixed = rule(h, Some("s1"), "Allow `npm test`", None);
    prefixed.prefix = true;
    let made = h
        .store
        .create_standing_answer(prefixed)
        .await
        .expect("create");
    assert!(made.prefix);
    // A message that starts so matches; one that only contains it, or is shorter, does not.
    for (message, matches) in [
        ("Allow `npm test` in run 7f3a", true),
        ("Allow `npm test`", true),
        ("Please Allow `npm test`", false),
        ("Allow `npm", false),
    ] {
        let used = h
            .store
            .use_standing_answer(&s1, &question(message))
            .await
            .expect("use");
        assert_eq!(used.is_some(), matches, "{message}");
    }
    let paused = h
        .store
        .pause_standing_answer(made.id, true, "test")
        .await
        .expect("pause");
    assert!(paused.paused_at.is_some());
    assert!(
        h.store
            .use_standing_answer(&s1, &question("Allow `npm test` again"))
            .await
            .expect("use")
            .is_none(),
        "paused"
    );
    // Listed while paused, with its hits.
    let live = h.store.live_standing_answers(10).await.expect("list");
    assert_eq!(
        live.iter()
            .map(|rule| (rule.id, rule.uses))
            .collect::<Vec<_>>(),
        vec![(made.id, 2)]
    );
    h.store
        .pause_standing_answer(made.id, false, "test")
        .await
        .expect("resume");
    assert!(
        h.store
            .use_standing_answer(&s1, &question("Allow `npm test` once more"))
            .await
            .expect("use")
            .is_some()
    );
    h.store
        .revoke_standing_answer(made.id, "test")
        .await
        .expect("revoke");
    assert!(
        h.store
            .pause_standing_answer(made.id, false, "test")
            .await
            .is_err(),
        "ended"
    );
    assert!(
        h.store
            .live_standing_answers(10)
            .await
            .expect("list")
            .is_empty()
    );
}

/// A rule costs a question a read only in its own place (session, server, tool): elsewhere what this process
/// last read of the rules in force answers, and a rule made here is in it at once.
async fn a_rule_costs_a_question_a_read_only_in_its_place(h: &Harness) {
    register(h, "s1").await;
    register(h, "s2").await;
    let s1 = SessionId::parse("s1").expect("id");
    let s2 = SessionId::parse("s2").expect("id");
    assert!(!h.store.standing_answers_in_force().await.expect("read"));
    let made = h
        .store
        .create_standing_answer(rule(h, Some("s1"), "$ npm test", None))
        .await
        .expect("create");
    let elsewhere = [
        (&s2, question("$ npm test")),
        (
            &s1,
            QuestionMatch {
                tool: "Read".to_owned(),
                ..question("$ npm test")
            },
        ),
    ];
    for (session, asked) in &elsewhere {
        // Read again just before, so the remembered places are fresh (they are trusted for a second).
        assert!(h.store.standing_answers_in_force().await.expect("read"));
        let before = h.store.round_trips();
        let used = h.store.use_standing_answer(session, asked).await;
        assert!(used.expect("use").is_none());
        assert_eq!(h.store.round_trips(), before, "{session} {asked:?}");
    }
    assert!(h.store.standing_answers_in_force().await.expect("read"));
    let used = h
        .store
        .use_standing_answer(&s1, &question("$ npm test"))
        .await
        .expect("use")
        .expect("the rule answers in its place");
    assert_eq!(used.id, made.id);
}

crate::on_both_backends!(
    a_rule_answers_its_own_question_until_its_limit,
    a_rule_for_every_session_ends_when_it_expires_or_is_revoked,
    concurrent_questions_never_take_more_than_the_limit,
    a_paused_rule_answers_nothing_and_a_prefix_rule_matches_beginnings,
    a_rule_costs_a_question_a_read_only_in_its_place,
);
