//! People and their sign-in: accounts, one-use sign-in links and web sessions.

use anteroom_store::WebSessionOwner;
use anteroom_store::domain::{
    access::{Role, User},
    clock::Clock,
};
use chrono::Duration;

use crate::fixtures::*;
use crate::support::Harness;

async fn usernames_are_unique_and_passwords_come_back_for_sign_in(h: &Harness) {
    let ada = User {
        id: "u-1".to_owned(),
        username: "ada".to_owned(),
        role: Role::Responder,
    };
    h.store
        .create_user(&ada, "hash-1")
        .await
        .expect("first user");
    let twin = User {
        id: "u-2".to_owned(),
        ..ada.clone()
    };
    let error = refusal(h.store.create_user(&twin, "hash-2").await);
    assert_eq!(error.code(), "managed_input_conflict");
    assert_eq!(h.store.count_users().await.expect("count"), 1);
    assert_eq!(
        h.store.user_with_password("ada").await.expect("read"),
        Some((ada.clone(), "hash-1".to_owned()))
    );
    assert_eq!(h.store.get_user("u-1").await.expect("read"), Some(ada));
    assert_eq!(
        h.store.user_with_password("nobody").await.expect("read"),
        None
    );
}

async fn sign_in_links_work_once_and_only_before_they_expire(h: &Harness) {
    let later = h.clock.now() + Duration::hours(1);
    for link in ["once", "late"] {
        h.store
            .create_sign_in_link(link, later)
            .await
            .expect("link");
    }
    let admin = |n: u32| User {
        id: format!("admin-{n}"),
        username: format!("admin{n}"),
        role: Role::Admin,
    };
    assert!(
        !h.store
            .create_first_admin("unknown", &admin(0), "hash")
            .await
            .expect("unknown")
    );
    h.clock.advance(Duration::hours(2));
    assert!(
        !h.store
            .create_first_admin("late", &admin(1), "hash")
            .await
            .expect("expired")
    );
    assert_eq!(h.store.count_users().await.expect("count"), 0);
}

async fn first_run_link_after_an_admin_exists_creates_nobody(h: &Harness) {
    let later = h.clock.now() + Duration::hours(1);
    for link in ["first", "second"] {
        h.store
            .create_sign_in_link(link, later)
            .await
            .expect("link");
    }
    let admin = |name: &str| User {
        id: format!("id-{name}"),
        username: name.to_owned(),
        role: Role::Admin,
    };
    assert!(
        h.store
            .create_first_admin("first", &admin("ada"), "hash")
            .await
            .expect("use")
    );
    assert!(
        !h.store
            .create_first_admin("first", &admin("eve"), "hash")
            .await
            .expect("reuse"),
        "a link works once"
    );
    // Another link, still unused and unexpired, does nothing once a person exists.
    assert!(
        !h.store
            .create_first_admin("second", &admin("mallory"), "hash")
            .await
            .expect("after")
    );
    assert_eq!(h.store.count_users().await.expect("count"), 1);
}

async fn web_sessions_are_saved_replaced_and_expire(h: &Harness) {
    let soon = h.clock.now() + Duration::minutes(30);
    assert!(
        h.store
            .create_web_session("s1", "{\"a\":1}", soon, &WebSessionOwner::default())
            .await
            .expect("create")
    );
    assert!(
        !h.store
            .create_web_session("s1", "{}", soon, &WebSessionOwner::default())
            .await
            .expect("taken id")
    );
    h.store
        .save_web_session("s1", "{\"a\":2}", soon, &WebSessionOwner::default())
        .await
        .expect("save");
    assert_eq!(
        h.store.load_web_session("s1").await.expect("load"),
        Some(("{\"a\":2}".to_owned(), soon))
    );
    h.store
        .create_web_session(
            "s2",
            "{}",
            soon + Duration::hours(1),
            &WebSessionOwner::default(),
        )
        .await
        .expect("create");
    h.clock.advance(Duration::hours(1));
    assert_eq!(h.store.load_web_session("s1").await.expect("load"), None);
    assert_eq!(h.store.purge_web_sessions().await.expect("purge"), 1);
    h.store.delete_web_session("s2").await.expect("delete");
    assert_eq!(h.store.load_web_session("s2").await.expect("load"), None);
}

async fn a_persons_browsers_are_listed_and_signed_out_one_or_all(h: &Harness) {
    let person = User {
        id: "u-1".to_owned(),
        username: "ada".to_owned(),
        role: Role::Responder,
    };
    h.store.create_user(&person, "hash").await.expect("person");
    let now = h.clock.now();
    let soon = now + Duration::hours(1);
    let owned = |handle: &str, minutes_ago: i64| WebSessionOwner {
        user_id: Some("u-1".to_owned()),
        handle: handle.to_owned(),
        device: Some(format!("browser {handle}")),
        seen_at: Some(now - Duration::minutes(minutes_ago)),
    };
    for (id, handle, minutes_ago) in [("s1", "h1", 30), ("s2", "h2", 1), ("s3", "h3", 10)] {
        assert!(
            h.store
                .create_web_session(id, "{}", soon, &owned(handle, minutes_ago))
                .await
                .expect("create")
        );
    }
    // Someone else's session, and one not signed in yet, are not listed.
    let stranger = WebSessionOwner {
        user_id: Some("u-2".to_owned()),
        ..owned("h9", 0)
    };
    h.store
        .create_web_session("s9", "{}", soon, &stranger)
        .await
        .expect("other");
    h.store
        .create_web_session("s0", "{}", soon, &WebSessionOwner::default())
        .await
        .expect("anonymous");
    let handles = |list: Vec<anteroom_store::BrowserSignIn>| {
        list.into_iter().map(|row| row.handle).collect::<Vec<_>>()
    };
    let listed = h.store.browser_sign_ins("u-1").await.expect("list");
    assert_eq!(listed[0].device.as_deref(), Some("browser h2"));
    assert_eq!(
        handles(listed),
        ["h2", "h3", "h1"],
        "most recently seen first"
    );

    assert!(h.store.end_browser_sign_in("u-1", "h3").await.expect("end"));
    assert!(
        !h.store
            .end_browser_sign_in("u-1", "h9")
            .await
            .expect("not theirs")
    );
    assert_eq!(h.store.load_web_session("s3").await.expect("load"), None);
    assert_eq!(
        h.store.end_every_browser_sign_in("u-1").await.expect("all"),
        2
    );
    assert!(
        h.store
            .browser_sign_ins("u-1")
            .await
            .expect("list")
            .is_empty()
    );
    assert!(
        h.store
            .load_web_session("s9")
            .await
            .expect("load")
            .is_some()
    );
}

crate::on_both_backends!(
    a_persons_browsers_are_listed_and_signed_out_one_or_all,
    usernames_are_unique_and_passwords_come_back_for_sign_in,
    sign_in_links_work_once_and_only_before_they_expire,
    first_run_link_after_an_admin_exists_creates_nobody,
    web_sessions_are_saved_replaced_and_expire,
);
