//! What the reach channels look up: a person by their e-mail (one person per address, compared
//! lower-cased), and where a question's Slack message is (the first one posted stays).

use anteroom_store::domain::access::{Role, User};

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

crate::on_both_backends!(
    a_person_is_found_by_their_email_and_an_address_is_one_persons,
    a_questions_first_slack_message_is_remembered
);
