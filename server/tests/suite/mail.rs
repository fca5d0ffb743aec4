//! Questions by e-mail through a real SMTP server on loopback: the mail reaches the people who asked for it
//! (at once, or when still unanswered after their minutes; never a viewer), its answer link's GET only asks
//! to confirm, its POST answers once as that person ("rita via e-mail") and the asker's next poll gets it; a
//! used, forged, expired or overtaken link records nothing.

use anteroom_domain::{
    access::Role,
    clock::Clock,
    ids::RequestId,
    reach::{EmailPreference, EmailQuestions, ReachChannel},
};
use anteroom_reach::outbox;
use anteroom_server::{MailConfig, people::add_user};
use anteroom_testkit::{self as support, on_both_backends, smtp::SmtpSink};
use chrono::Duration;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{
    Backend, Settings, TestServer,
    pulsemcp::{Outcome, PulsemcpClient},
};

async fn start(db: Backend, sink: &SmtpSink) -> Option<TestServer> {
    let server = TestServer::start_with(
        db,
        Settings {
            mail: Some(MailConfig {
                smtp_url: sink.url.clone(),
                from: "Anteroom <anteroom@example.com>".to_owned(),
            }),
            ..Settings::default()
        },
    )
    .await?;
    for (name, role, questions) in [
        ("rita", Role::Responder, EmailQuestions::All),
        ("sam", Role::Responder, EmailQuestions::Unanswered),
        ("vic", Role::Viewer, EmailQuestions::All),
    ] {
        let user = add_user(server.store.as_ref(), name, "correct horse battery", role)
            .await
            .expect("add user");
        let email = format!("{name}@example.com");
        server
            .store
            .set_user_email(&user.id, Some(&email))
            .await
            .expect("email");
        let preference = EmailPreference {
            questions,
            after_minutes: 10,
        };
        server
            .store
            .set_email_preference(&user.id, preference)
            .await
            .expect("preference");
    }
    Some(server)
}

async fn ask(client: &PulsemcpClient, id: &str, message: &str) {
    let schema = json!({"type": "object", "properties": {"env": {"type": "string", "enum": ["dev", "stage", "prod"]}}});
    let expires = support::start_time() + Duration::hours(1);
    client
        .create(
            id,
            &client.body(id, message, schema, "deploy", &expires.to_rfc3339()),
        )
        .await
        .expect("create");
}

/// The answer links in a mail's text, by label.
fn links(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let (label, url) = line.trim().split_once(": http")?;
            url.contains("/answer/")
                .then(|| (label.to_owned(), format!("http{url}")))
        })
        .collect()
}

fn link(text: &str, label: &str) -> String {
    links(text)
        .into_iter()
        .find(|(name, _)| name == label)
        .map(|(_, url)| url)
        .expect("link")
}

async fn mails_to(sink: &SmtpSink, to: &str) -> Vec<support::smtp::ReceivedMail> {
    sink.received()
        .into_iter()
        .filter(|mail| mail.to.iter().any(|rcpt| rcpt.contains(to)))
        .collect()
}

async fn a_question_is_answered_from_its_email(db: Backend) {
    let sink = SmtpSink::start().await;
    let Some(server) = start(db, &sink).await else {
        return;
    };
    let env = server.session("s-mail").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-mail"));
    let hostile = format!(
        "<script>alert(1)</script> Deploy where?\nhttps://evil.example/approve\n{}",
        "x".repeat(9_000)
    );
    ask(&client, "req-mail", &hostile).await;
    outbox::run(server.state.clone()).await;
    let mails = mails_to(&sink, "rita@example.com").await;
    assert_eq!(mails.len(), 1, "rita asked for every question");
    assert!(
        mails_to(&sink, "vic@").await.is_empty(),
        "a viewer is never mailed"
    );
    assert!(
        mails_to(&sink, "sam@").await.is_empty(),
        "sam waits ten minutes"
    );
    let mail = &mails[0];
    let subject = mail.header("Subject").expect("subject");
    assert!(
        subject.contains("<script>alert(1)</script> Deploy where?"),
        "{subject}"
    );
    let text = mail.text();
    assert!(
        text.contains("> https://evil.example/approve"),
        "the agent's words are quoted: {text}"
    );
    assert!(
        text.len() < 8_000,
        "the agent's words are cut: {}",
        text.len()
    );
    let labels: Vec<String> = links(&text).into_iter().map(|(label, _)| label).collect();
    assert_eq!(labels, ["dev", "stage", "prod", "Decline"]);
    assert!(
        text.contains(&format!("{}/sessions/s-mail", server.base)),
        "{text}"
    );

    let prod = link(&text, "prod");
    for _ in 0..2 {
        let page = server.http.get(&prod).send().await.expect("GET");
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(
            page.headers()["cache-control"],
            "no-store",
            "{:?}",
            page.headers()
        );
        let html = page.text().await.expect("html");
        assert!(html.contains("Answer \u{201c}prod\u{201d}?"), "{html}");
        assert!(html.contains("<form method=\"post\""), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "escaped"
        );
        assert!(!html.contains("<script>"), "never a script from the agent");
    }
    assert_eq!(
        client.poll("req-mail").await.expect("poll"),
        Outcome::Pending,
        "a GET changes nothing"
    );

    let posted = server.http.post(&prod).send().await.expect("POST");
    assert_eq!(posted.status(), StatusCode::OK);
    assert!(
        posted
            .text()
            .await
            .expect("html")
            .contains("Answered \u{201c}prod\u{201d}")
    );
    assert_eq!(
        client.poll("req-mail").await.expect("poll"),
        Outcome::Accept(Some(json!({"env": "prod"})))
    );
    let round = server
        .store
        .get_round_by_request_id(&RequestId::parse("req-mail").expect("id"))
        .await
        .expect("round");
    assert_eq!(round.responded_by.as_deref(), Some("rita via e-mail"));

    let again = server
        .http
        .post(&prod)
        .header("accept", "application/json")
        .send()
        .await
        .expect("POST");
    assert_eq!(again.status(), StatusCode::CONFLICT);
    assert_eq!(again.json::<Value>().await.expect("json")["code"], "used");
    let other = server
        .http
        .post(link(&text, "dev"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("POST");
    assert_eq!(other.status(), StatusCode::CONFLICT);
    let other: Value = other.json().await.expect("json");
    assert_eq!(other["code"], "closed");
    assert!(
        other["message"]
            .as_str()
            .expect("message")
            .contains("already answered by rita via e-mail"),
        "{other}"
    );
    let forged = server
        .http
        .post(server.url(&format!("/answer/{}", "f".repeat(64))))
        .send()
        .await
        .expect("POST");
    assert_eq!(forged.status(), StatusCode::NOT_FOUND);
    let round_after = server.store.get_round(round.round_id).await.expect("round");
    assert_eq!(
        round_after.responses, round.responses,
        "nothing more was recorded"
    );

    server.clock.advance(Duration::minutes(10));
    outbox::run(server.state.clone()).await;
    assert!(
        mails_to(&sink, "sam@").await.is_empty(),
        "answered before sam's mail was due: not sent"
    );
    server.stop().await;
}

async fn an_unanswered_question_reaches_the_patient_and_its_links_die_with_it(db: Backend) {
    let sink = SmtpSink::start().await;
    let Some(server) = start(db, &sink).await else {
        return;
    };
    let env = server.session("s-late").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-late"));
    ask(&client, "req-late", "Still deploying?").await;
    outbox::run(server.state.clone()).await;
    assert!(mails_to(&sink, "sam@").await.is_empty());
    server.clock.advance(Duration::minutes(10));
    outbox::run(server.state.clone()).await;
    let mails = mails_to(&sink, "sam@example.com").await;
    assert_eq!(
        mails.len(),
        1,
        "unanswered after ten minutes: sam is mailed"
    );
    let stage = link(&mails[0].text(), "stage");
    let rita_stage = link(&mails_to(&sink, "rita@").await[0].text(), "stage");
    assert_ne!(stage, rita_stage, "each person gets their own links");

    server.clock.advance(Duration::hours(2));
    let late = server.http.get(&stage).send().await.expect("GET");
    let round = server
        .store
        .get_round_by_request_id(&RequestId::parse("req-late").expect("id"))
        .await
        .expect("round");
    assert_eq!(
        late.status(),
        StatusCode::GONE,
        "{} {:?} {}",
        server.clock.now(),
        round.deadline,
        late.text().await.unwrap_or_default()
    );
    let late = server
        .http
        .post(&stage)
        .header("accept", "application/json")
        .send()
        .await
        .expect("POST");
    assert_eq!(late.status(), StatusCode::GONE);
    assert_eq!(late.json::<Value>().await.expect("json")["code"], "expired");
    server.stop().await;
}

async fn quiet_hours_hold_a_mail_until_they_end(db: Backend) {
    let sink = SmtpSink::start().await;
    let Some(server) = start(db, &sink).await else {
        return;
    };
    // The test clock starts at 09:00 UTC: rita is quiet from 08:00 to 09:30 UTC (the question is open until 10:00).
    let (rita, _) = server
        .store
        .user_with_password("rita")
        .await
        .expect("read")
        .expect("rita");
    let quiet = anteroom_domain::reach::QuietHours::new(8 * 60, 9 * 60 + 30, "UTC").expect("quiet");
    server
        .store
        .set_quiet_hours(&rita.id, Some(&quiet))
        .await
        .expect("quiet");
    let env = server.session("s-quiet").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-quiet"));
    ask(&client, "req-quiet", "Rotate the keys?").await;
    outbox::run(server.state.clone()).await;
    assert!(
        mails_to(&sink, "rita@").await.is_empty(),
        "held while rita is quiet"
    );
    server.clock.advance(Duration::minutes(29));
    outbox::run(server.state.clone()).await;
    assert!(
        mails_to(&sink, "rita@").await.is_empty(),
        "still quiet at 09:29"
    );
    server.clock.advance(Duration::minutes(1));
    outbox::run(server.state.clone()).await;
    assert_eq!(
        mails_to(&sink, "rita@").await.len(),
        1,
        "sent when the quiet hours end, not dropped"
    );
    server.stop().await;
}

async fn a_burst_of_questions_reaches_a_person_as_one_digest(db: Backend) {
    let sink = SmtpSink::start().await;
    let Some(server) = start(db, &sink).await else {
        return;
    };
    let (rita, _) = server
        .store
        .user_with_password("rita")
        .await
        .expect("read")
        .expect("rita");
    assert!(
        server
            .store
            .set_digest_after(&rita.id, 2)
            .await
            .expect("set")
    );
    let env = server.session("s-burst").await;
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-burst"));
    for n in 1..=5 {
        ask(
            &client,
            &format!("req-burst-{n}"),
            &format!("Burst question {n}?"),
        )
        .await;
        outbox::run(server.state.clone()).await;
    }
    let one_by_one = mails_to(&sink, "rita@").await;
    assert_eq!(one_by_one.len(), 2, "two a minute one by one");
    let held = server
        .store
        .digest_held(&rita.id, ReachChannel::Email, 10)
        .await
        .expect("held");
    assert_eq!(held.len(), 3, "the rest wait for the digest");
    // One of them is answered before the digest goes: the digest leaves it out.
    let answered = server
        .respond(
            &server.responder_key,
            "req-burst-3",
            json!({"action_type": "accept", "content": {"env": "dev"}}),
        )
        .await;
    assert_eq!(answered.status(), StatusCode::OK);
    server.clock.advance(Duration::seconds(60));
    outbox::run(server.state.clone()).await;
    let mails = mails_to(&sink, "rita@").await;
    assert_eq!(mails.len(), 3, "one digest, not three mails");
    let digest = mails.last().expect("the digest");
    assert_eq!(
        digest.header("Subject").as_deref(),
        Some("2 questions wait for you in Anteroom")
    );
    let text = digest.text();
    for (n, listed) in [(3, false), (4, true), (5, true)] {
        assert_eq!(
            text.contains(&format!("Burst question {n}?")),
            listed,
            "question {n}: {text}"
        );
    }
    assert!(text.contains("/sessions/s-burst"), "each with its page");
    assert!(
        server
            .store
            .digest_held(&rita.id, ReachChannel::Email, 10)
            .await
            .expect("held")
            .is_empty(),
        "released once sent"
    );
    outbox::run(server.state.clone()).await;
    assert_eq!(mails_to(&sink, "rita@").await.len(), 3, "sent once");
    server.stop().await;
}

async fn only_a_questions_responders_are_mailed_and_their_links_follow_the_rule(db: Backend) {
    let sink = SmtpSink::start().await;
    let Some(server) = start(db, &sink).await else {
        return;
    };
    let env = server.session("s-team-mail").await;
    let set = server
        .http
        .put(server.url("/api/v1/sessions/s-team-mail/settings"))
        .bearer_auth(&server.admin_key)
        .json(&json!({"responders": ["user:rita"]}))
        .send()
        .await
        .expect("PUT settings");
    assert_eq!(set.status(), StatusCode::OK);
    // sam asked for mail about unanswered questions after ten minutes; only rita may answer this session's.
    let client = PulsemcpClient::new(&env.request_url, &env.poll_url, Some("s-team-mail"));
    ask(&client, "req-team-mail", "Deploy where?").await;
    outbox::run(server.state.clone()).await;
    server.clock.advance(Duration::minutes(11));
    outbox::run(server.state.clone()).await;
    assert!(
        mails_to(&sink, "sam@").await.is_empty(),
        "sam may not answer it"
    );
    let mails = mails_to(&sink, "rita@example.com").await;
    assert_eq!(mails.len(), 1);

    // Handed to sam after the mail went out: rita's link records nothing.
    let rounds = server
        .get_json("/api/v1/sessions/s-team-mail/rounds", &server.admin_key)
        .await;
    let round_id = rounds["rounds"][0]["round_id"].as_str().expect("round id");
    let assigned = server
        .http
        .put(server.url(&format!("/api/v1/rounds/{round_id}/assignee")))
        .bearer_auth(&server.admin_key)
        .json(&json!({"assignee": "user:sam"}))
        .send()
        .await
        .expect("PUT assignee");
    assert_eq!(assigned.status(), StatusCode::OK);
    let posted = server
        .http
        .post(link(&mails[0].text(), "prod"))
        .send()
        .await
        .expect("POST");
    assert_eq!(posted.status(), StatusCode::FORBIDDEN);
    let html = posted.text().await.expect("html");
    assert!(html.contains("This question is for sam"), "{html}");
    assert_eq!(
        client.poll("req-team-mail").await.expect("poll"),
        Outcome::Pending
    );
    server.stop().await;
}

on_both_backends!(
    only_a_questions_responders_are_mailed_and_their_links_follow_the_rule,
    a_burst_of_questions_reaches_a_person_as_one_digest,
    quiet_hours_hold_a_mail_until_they_end,
    a_question_is_answered_from_its_email,
    an_unanswered_question_reaches_the_patient_and_its_links_die_with_it
);
