//! What the reach channels look up: a person by their e-mail (one person per address, compared
//! lower-cased), and where a question's Slack message is (the first one posted stays).

use anteroom_store::domain::{
    access::{Role, User},
    clock::Clock,
    ids::{RoundId, SessionId},
    reach::{
        AnswerToken, DIGEST_EVENT, DIGEST_WINDOW_SECS, Digest, EmailPreference, EmailQuestions,
        PushSubscription, QuietHours, ReachChannel, SLACK_LINK_MINUTES, SLACK_LINKS_PER_PERSON,
        digest_endpoint,
    },
    session::SessionSettings,
    webhook::{QueuedDelivery, WebhookFormat},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

fn person(id: &str, username: &str) -> User {
    User {
        id: id.to_owned(),
        username: username.to_owned(),
        role: Role::Responder,
    }
}

async fn a_person_is_found_by_their_email_and_an_address_is_one_persons(h: &Harness) {
    let rita = person("u-rita", "rita");
    let sam = person("u-sam", "sam");
    for user in [&rita, &sam] {
        h.store
            .create_user(user, "hash")
            .await
            .expect("create user");
    }
    assert_eq!(h.store.user_email("u-rita").await.expect("read"), None);
    assert!(
        h.store
            .set_user_email("u-rita", Some(" Rita@Example.com "))
            .await
            .expect("set email")
    );
    assert_eq!(
        h.store.user_email("u-rita").await.expect("read").as_deref(),
        Some("rita@example.com")
    );
    assert_eq!(
        h.store
            .user_by_email("RITA@example.COM")
            .await
            .expect("look up"),
        Some(rita.clone())
    );
    let taken = refusal(
        h.store
            .set_user_email("u-sam", Some("rita@example.com"))
            .await,
    );
    assert_eq!(taken.code(), "managed_input_conflict");
    let malformed = refusal(
        h.store
            .set_user_email("u-sam", Some("not an address"))
            .await,
    );
    assert_eq!(malformed.code(), "validation_error");
    assert!(
        !h.store
            .set_user_email("u-nobody", Some("x@example.com"))
            .await
            .expect("no such person")
    );
    assert_eq!(
        h.store
            .user_by_email("not an address")
            .await
            .expect("look up"),
        None
    );
    assert!(h.store.set_user_email("u-rita", None).await.expect("clear"));
    assert_eq!(
        h.store
            .user_by_email("rita@example.com")
            .await
            .expect("look up"),
        None
    );
}

async fn a_questions_first_slack_message_is_remembered(h: &Harness) {
    let round = ask(h, "s1").await;
    assert_eq!(
        h.store.slack_message(&round.round_id).await.expect("read"),
        None
    );
    h.store
        .remember_slack_message(&round.round_id, "C1", "1700000000.000100")
        .await
        .expect("remember");
    h.store
        .remember_slack_message(&round.round_id, "C2", "1700000000.000200")
        .await
        .expect("a second post is ignored");
    assert_eq!(
        h.store.slack_message(&round.round_id).await.expect("read"),
        Some(("C1".to_owned(), "1700000000.000100".to_owned()))
    );
}

async fn only_answering_people_who_asked_for_mail_get_it(h: &Harness) {
    for (id, name, role, email, questions) in [
        (
            "u-1",
            "ada",
            Role::Responder,
            Some("ada@example.com"),
            EmailQuestions::All,
        ),
        (
            "u-2",
            "bob",
            Role::Admin,
            Some("bob@example.com"),
            EmailQuestions::Unanswered,
        ),
        (
            "u-3",
            "cy",
            Role::Viewer,
            Some("cy@example.com"),
            EmailQuestions::All,
        ),
        ("u-4", "di", Role::Responder, None, EmailQuestions::All),
        (
            "u-5",
            "ed",
            Role::Responder,
            Some("ed@example.com"),
            EmailQuestions::Off,
        ),
    ] {
        let user = User {
            id: id.to_owned(),
            username: name.to_owned(),
            role,
        };
        h.store.create_user(&user, "hash").await.expect("user");
        h.store.set_user_email(id, email).await.expect("email");
        let preference = EmailPreference {
            questions,
            after_minutes: 5,
        };
        assert!(
            h.store
                .set_email_preference(id, preference)
                .await
                .expect("preference")
        );
    }
    assert_eq!(
        h.store.email_preference("u-2").await.expect("read"),
        EmailPreference {
            questions: EmailQuestions::Unanswered,
            after_minutes: 5
        }
    );
    assert_eq!(
        h.store.email_preference("u-none").await.expect("read"),
        EmailPreference::default()
    );
    let recipients: Vec<String> = h
        .store
        .email_recipients()
        .await
        .expect("recipients")
        .into_iter()
        .map(|recipient| recipient.user.username)
        .collect();
    assert_eq!(
        recipients,
        ["ada", "bob"],
        "viewers, no address and off get nothing"
    );
}

async fn an_answer_token_works_once_and_only_before_it_expires(h: &Harness) {
    let round = ask(h, "s1").await;
    let user = User {
        id: "u-1".to_owned(),
        username: "ada".to_owned(),
        role: Role::Responder,
    };
    h.store.create_user(&user, "hash").await.expect("user");
    let token = |hash: &str, expires_in: Duration| AnswerToken {
        token_hash: hash.to_owned(),
        user_id: "u-1".to_owned(),
        round_id: round.round_id,
        choice: 2,
        channel: ReachChannel::Email,
        expires_at: h.clock.now() + expires_in,
        used_at: None,
    };
    h.store
        .create_answer_tokens(&[
            token("once", Duration::minutes(5)),
            token("late", Duration::seconds(1)),
        ])
        .await
        .expect("tokens");
    assert_eq!(
        h.store.answer_token("once").await.expect("read"),
        Some(token("once", Duration::minutes(5)))
    );
    let used = h
        .store
        .use_answer_token("once")
        .await
        .expect("use")
        .expect("first use");
    assert_eq!(
        (used.choice, used.round_id, used.channel),
        (2, round.round_id, ReachChannel::Email)
    );
    assert_eq!(
        h.store.use_answer_token("once").await.expect("use"),
        None,
        "single use"
    );
    assert!(
        h.store
            .answer_token("once")
            .await
            .expect("read")
            .expect("kept")
            .used_at
            .is_some()
    );
    h.clock.advance(Duration::seconds(2));
    assert_eq!(
        h.store.use_answer_token("late").await.expect("use"),
        None,
        "expired"
    );
    assert_eq!(
        h.store.use_answer_token("never-made").await.expect("use"),
        None
    );
}

async fn a_fanned_out_delivery_is_queued_once_and_waits_for_its_time(h: &Harness) {
    let delivery = QueuedDelivery {
        endpoint: "user:u-1".to_owned(),
        format: WebhookFormat::Email,
        event: "question.created".to_owned(),
        dedupe_key: "question.created:r1|email:u-1".to_owned(),
        payload: json!({"data": {"round_id": "r1"}}),
        not_before: h.clock.now() + Duration::minutes(10),
    };
    h.store
        .enqueue_deliveries(&[delivery.clone(), delivery.clone()])
        .await
        .expect("queue");
    h.store
        .enqueue_deliveries(&[delivery])
        .await
        .expect("queue again");
    let claim = Duration::seconds(60);
    assert!(
        h.store
            .claim_webhook_deliveries(10, claim)
            .await
            .expect("claim")
            .is_empty(),
        "not yet due"
    );
    h.clock.advance(Duration::minutes(10));
    let claimed = h
        .store
        .claim_webhook_deliveries(10, claim)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1, "queued once");
    assert_eq!(claimed[0].format, WebhookFormat::Email);
}

async fn browsers_with_push_are_each_persons_own_and_bounded(h: &Harness) {
    for (id, name, role) in [
        ("u-1", "ada", Role::Responder),
        ("u-2", "vic", Role::Viewer),
    ] {
        let user = User {
            id: id.to_owned(),
            username: name.to_owned(),
            role,
        };
        h.store.create_user(&user, "hash").await.expect("user");
    }
    let browser = |id: &str, user: &str, endpoint: &str| PushSubscription {
        id: id.to_owned(),
        user_id: user.to_owned(),
        endpoint: endpoint.to_owned(),
        p256dh: "BKey".to_owned(),
        auth: "secret".to_owned(),
        device: "Chrome on Android".to_owned(),
        created_at: h.clock.now(),
    };
    let saved = h
        .store
        .save_push_subscription(&browser("p-1", "u-1", "https://push.example/1"))
        .await
        .expect("save");
    assert_eq!(saved, browser("p-1", "u-1", "https://push.example/1"));
    let again = h
        .store
        .save_push_subscription(&browser("p-9", "u-1", "https://push.example/1"))
        .await
        .expect("again");
    assert_eq!(
        again.id, "p-1",
        "the same browser again replaces, keeping its id"
    );
    h.store
        .save_push_subscription(&browser("p-v", "u-2", "https://push.example/v"))
        .await
        .expect("viewer");
    for n in 2..=10 {
        h.store
            .save_push_subscription(&browser(
                &format!("p-{n}"),
                "u-1",
                &format!("https://push.example/{n}"),
            ))
            .await
            .expect("save");
    }
    let eleventh = refusal(
        h.store
            .save_push_subscription(&browser("p-11", "u-1", "https://push.example/11"))
            .await,
    );
    assert_eq!(eleventh.code(), "managed_input_conflict");
    assert_eq!(
        h.store.push_subscriptions("u-1").await.expect("list").len(),
        10
    );
    let recipients = h.store.push_recipients().await.expect("recipients");
    assert_eq!(
        recipients.len(),
        10,
        "a viewer's browser is never pushed to"
    );
    assert!(
        recipients
            .iter()
            .all(|recipient| recipient.digest_after == 5 && recipient.quiet.is_none()),
        "each with its person's settings"
    );
    assert!(
        !h.store
            .remove_push_subscription("p-1", Some("u-2"))
            .await
            .expect("not theirs")
    );
    assert!(
        h.store
            .remove_push_subscription("p-1", Some("u-1"))
            .await
            .expect("own")
    );
    assert!(
        h.store
            .remove_push_subscription("p-2", None)
            .await
            .expect("gone")
    );
    assert_eq!(h.store.push_subscription("p-2").await.expect("read"), None);
    assert_eq!(
        h.store.push_subscriptions("u-1").await.expect("list").len(),
        8
    );
}

async fn quiet_hours_are_kept_and_cleared_and_reach_the_mail_list(h: &Harness) {
    let user = User {
        id: "u-1".to_owned(),
        username: "ada".to_owned(),
        role: Role::Responder,
    };
    h.store.create_user(&user, "hash").await.expect("user");
    assert_eq!(h.store.quiet_hours("u-1").await.expect("read"), None);
    let night = QuietHours::new(22 * 60, 7 * 60, "Europe/Paris").expect("quiet");
    assert!(
        h.store
            .set_quiet_hours("u-1", Some(&night))
            .await
            .expect("set")
    );
    assert_eq!(
        h.store.quiet_hours("u-1").await.expect("read"),
        Some(night.clone())
    );
    h.store
        .set_user_email("u-1", Some("ada@example.com"))
        .await
        .expect("email");
    let every = EmailPreference {
        questions: EmailQuestions::All,
        after_minutes: 0,
    };
    h.store
        .set_email_preference("u-1", every)
        .await
        .expect("preference");
    let recipients = h.store.email_recipients().await.expect("recipients");
    assert_eq!(recipients[0].quiet, Some(night));
    assert!(h.store.set_quiet_hours("u-1", None).await.expect("clear"));
    assert_eq!(h.store.quiet_hours("u-1").await.expect("read"), None);
    // The zone stays: it is also the one the person's pages show times in.
    assert_eq!(
        h.store.time_zone("u-1").await.expect("zone").as_deref(),
        Some("Europe/Paris")
    );
    assert!(
        !h.store
            .set_quiet_hours("u-none", None)
            .await
            .expect("nobody")
    );
}

async fn a_time_zone_is_set_cleared_and_shared_with_quiet_hours(h: &Harness) {
    let user = User {
        id: "u-1".to_owned(),
        username: "ada".to_owned(),
        role: Role::Responder,
    };
    h.store.create_user(&user, "hash").await.expect("user");
    assert_eq!(h.store.time_zone("u-1").await.expect("read"), None);
    assert!(
        h.store
            .set_time_zone("u-1", Some("Asia/Tokyo"))
            .await
            .expect("set")
    );
    assert_eq!(
        h.store.time_zone("u-1").await.expect("read").as_deref(),
        Some("Asia/Tokyo")
    );
    // Each signed-in request reads the person and the zone together.
    let read = h
        .store
        .signed_in("u-1")
        .await
        .expect("read")
        .expect("the user");
    assert_eq!(
        (read.user, read.time_zone.as_deref(), read.groups),
        (user.clone(), Some("Asia/Tokyo"), Vec::<String>::new())
    );
    assert!(h.store.signed_in("u-none").await.expect("nobody").is_none());
    // Quiet hours set later count in their own zone, which becomes the person's zone.
    let night = QuietHours::new(22 * 60, 7 * 60, "Europe/Paris").expect("quiet");
    assert!(
        h.store
            .set_quiet_hours("u-1", Some(&night))
            .await
            .expect("quiet")
    );
    assert_eq!(
        h.store.time_zone("u-1").await.expect("read").as_deref(),
        Some("Europe/Paris")
    );
    assert!(h.store.set_time_zone("u-1", None).await.expect("clear"));
    assert_eq!(h.store.time_zone("u-1").await.expect("read"), None);
    assert!(
        !h.store
            .set_time_zone("u-none", Some("UTC"))
            .await
            .expect("nobody")
    );
    assert_eq!(h.store.time_zone("u-none").await.expect("nobody"), None);
}

async fn an_instance_key_is_made_once(h: &Harness) {
    assert_eq!(
        h.store.instance_key("vapid", "first").await.expect("key"),
        "first"
    );
    assert_eq!(
        h.store.instance_key("vapid", "second").await.expect("key"),
        "first"
    );
}

async fn a_digest_holds_questions_once_and_is_queued_once_per_window(h: &Harness) {
    h.store
        .create_user(&person("u-1", "ada"), "hash")
        .await
        .expect("create user");
    assert_eq!(
        h.store.digest_after("u-1").await.expect("read"),
        5,
        "the default"
    );
    assert!(h.store.set_digest_after("u-1", 2).await.expect("set"));
    assert_eq!(h.store.digest_after("u-1").await.expect("read"), 2);
    assert!(!h.store.set_digest_after("u-none", 2).await.expect("nobody"));
    let sent = |n: u32| QueuedDelivery {
        endpoint: "user:u-1".to_owned(),
        format: WebhookFormat::Email,
        event: "question.created".to_owned(),
        dedupe_key: format!("email:r{n}:u-1"),
        payload: json!({}),
        not_before: h.clock.now(),
    };
    h.store
        .enqueue_deliveries(&[sent(1), sent(2)])
        .await
        .expect("queue");
    let since = h.clock.now() - Duration::seconds(DIGEST_WINDOW_SECS);
    let counts = h
        .store
        .recent_deliveries(WebhookFormat::Email, since)
        .await
        .expect("count");
    assert_eq!(counts.get("user:u-1"), Some(&2));
    assert!(
        h.store
            .recent_deliveries(WebhookFormat::Push, since)
            .await
            .expect("count")
            .is_empty()
    );
    let due = Digest::due(h.clock.now());
    let digest = QueuedDelivery {
        endpoint: digest_endpoint("u-1"),
        format: WebhookFormat::Email,
        event: DIGEST_EVENT.to_owned(),
        dedupe_key: Digest::dedupe_key(ReachChannel::Email, "u-1", due),
        payload: json!({}),
        not_before: due,
    };
    let rounds: Vec<RoundId> = (0..3).map(|_| RoundId(uuid::Uuid::now_v7())).collect();
    for round in &rounds {
        h.store
            .hold_for_digest("u-1", ReachChannel::Email, *round, &digest)
            .await
            .expect("hold");
    }
    h.store
        .hold_for_digest("u-1", ReachChannel::Email, rounds[0], &digest)
        .await
        .expect("held twice is held once");
    let held = h
        .store
        .digest_held("u-1", ReachChannel::Email, 10)
        .await
        .expect("held");
    assert_eq!(held.len(), 3);
    assert!(
        h.store
            .digest_held("u-1", ReachChannel::Push, 10)
            .await
            .expect("held")
            .is_empty(),
        "each channel its own"
    );
    h.clock.advance(Duration::seconds(DIGEST_WINDOW_SECS));
    let claimed = h
        .store
        .claim_webhook_deliveries(10, Duration::seconds(60))
        .await
        .expect("claim");
    let digests: Vec<_> = claimed
        .iter()
        .filter(|delivery| delivery.event == DIGEST_EVENT)
        .collect();
    assert_eq!(digests.len(), 1, "one digest for the window");
    h.store
        .release_digest("u-1", ReachChannel::Email, &held[..2])
        .await
        .expect("release");
    assert_eq!(
        h.store
            .digest_held("u-1", ReachChannel::Email, 10)
            .await
            .expect("held"),
        vec![held[2]]
    );
}

async fn a_slack_account_is_linked_by_its_offer_once(h: &Harness) {
    for user in [person("u-1", "ada"), person("u-2", "bea")] {
        h.store
            .create_user(&user, "hash")
            .await
            .expect("create user");
    }
    let expires = h.clock.now() + Duration::minutes(SLACK_LINK_MINUTES);
    h.store
        .offer_slack_link("hash-1", "U0ADA", expires)
        .await
        .expect("offer");
    assert_eq!(
        h.store.slack_link_offer("hash-1").await.expect("peek"),
        Some("U0ADA".to_owned())
    );
    assert_eq!(
        h.store.slack_linked_user("U0ADA").await.expect("read"),
        None
    );
    let link = h
        .store
        .link_slack("hash-1", "u-1")
        .await
        .expect("link")
        .expect("a live offer");
    assert_eq!(
        (link.slack_user.as_str(), link.user_id.as_str()),
        ("U0ADA", "u-1")
    );
    assert_eq!(
        h.store
            .slack_linked_user("U0ADA")
            .await
            .expect("read")
            .map(|user| user.username),
        Some("ada".to_owned())
    );
    assert_eq!(
        h.store.link_slack("hash-1", "u-2").await.expect("again"),
        None,
        "an offer is taken once"
    );
    for hash in ["hash-a", "hash-b"] {
        h.store
            .offer_slack_link(hash, "U0BEA", expires)
            .await
            .expect("offer");
    }
    assert_eq!(
        h.store.slack_link_offer("hash-a").await.expect("peek"),
        None,
        "a Slack user's newer offer replaces the older"
    );
    assert_eq!(
        h.store.slack_link_offer("hash-b").await.expect("peek"),
        Some("U0BEA".to_owned())
    );
    h.store
        .offer_slack_link("hash-2", "U0ADA", expires)
        .await
        .expect("offer");
    h.clock.advance(Duration::minutes(SLACK_LINK_MINUTES));
    assert_eq!(
        h.store.slack_link_offer("hash-2").await.expect("peek"),
        None
    );
    assert_eq!(
        h.store.link_slack("hash-2", "u-2").await.expect("late"),
        None,
        "an expired offer links nothing"
    );
    assert_eq!(
        h.store
            .slack_links("u-1")
            .await
            .expect("list")
            .iter()
            .map(|link| link.slack_user.as_str())
            .collect::<Vec<_>>(),
        vec!["U0ADA"]
    );
    assert!(
        !h.store
            .unlink_slack("U0ADA", "u-2")
            .await
            .expect("not bea's")
    );
    assert!(h.store.unlink_slack("U0ADA", "u-1").await.expect("ada's"));
    assert_eq!(
        h.store.slack_linked_user("U0ADA").await.expect("read"),
        None
    );
    for n in 0..SLACK_LINKS_PER_PERSON {
        let hash = format!("many-{n}");
        h.store
            .offer_slack_link(
                &hash,
                &format!("U0{n}"),
                h.clock.now() + Duration::minutes(1),
            )
            .await
            .expect("offer");
        h.store.link_slack(&hash, "u-2").await.expect("link");
    }
    h.store
        .offer_slack_link("one-more", "U0MORE", h.clock.now() + Duration::minutes(1))
        .await
        .expect("offer");
    let refused = h.store.link_slack("one-more", "u-2").await;
    assert!(refused.is_err(), "bounded per person: {refused:?}");
}

async fn a_session_keeps_its_own_slack_channel(h: &Harness) {
    let session = register(h, "s-channel").await;
    assert_eq!(
        h.store.session_settings(&session.id).await.expect("read"),
        SessionSettings::default()
    );
    let set = h
        .store
        .set_session_settings(
            &session.id,
            &SessionSettings {
                slack_channel: Some("#deploys".to_owned()),
                ..SessionSettings::default()
            },
            "test",
        )
        .await
        .expect("set");
    assert_eq!(set.slack_channel.as_deref(), Some("deploys"));
    assert_eq!(
        h.store.session_settings(&session.id).await.expect("read"),
        set
    );
    let bad = h
        .store
        .set_session_settings(
            &session.id,
            &SessionSettings {
                slack_channel: Some("<!channel>".to_owned()),
                ..SessionSettings::default()
            },
            "test",
        )
        .await;
    assert!(bad.is_err());
    let nobody = SessionId::parse("s-none").expect("id");
    for result in [
        h.store.session_settings(&nobody).await,
        h.store
            .set_session_settings(&nobody, &SessionSettings::default(), "test")
            .await,
    ] {
        assert!(
            result.as_ref().is_err_and(|error| error.is_not_found()),
            "{result:?}"
        );
    }
}

crate::on_both_backends!(
    a_digest_holds_questions_once_and_is_queued_once_per_window,
    a_slack_account_is_linked_by_its_offer_once,
    a_session_keeps_its_own_slack_channel,
    browsers_with_push_are_each_persons_own_and_bounded,
    an_instance_key_is_made_once,
    quiet_hours_are_kept_and_cleared_and_reach_the_mail_list,
    a_time_zone_is_set_cleared_and_shared_with_quiet_hours,
    a_person_is_found_by_their_email_and_an_address_is_one_persons,
    a_questions_first_slack_message_is_remembered,
    only_answering_people_who_asked_for_mail_get_it,
    an_answer_token_works_once_and_only_before_it_expires,
    a_fanned_out_delivery_is_queued_once_and_waits_for_its_time
);
