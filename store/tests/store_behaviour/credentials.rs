//! People and their sign-in: accounts, one-use sign-in links and web sessions.

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
            .create_web_session("s1", "{\"a\":1}", soon)
            .await
            .expect("create")
    );
    assert!(
        !h.store
            .create_web_session("s1", "{}", soon)
            .await
            .expect("taken id")
    );
    h.store
        .save_web_session("s1", "{\"a\":2}", soon)
        .await
        .expect("save");
    assert_eq!(
        h.store.load_web_session("s1").await.expect("load"),
        Some(("{\"a\":2}".to_owned(), soon))
    );
    h.store
        .create_web_session("s2", "{}", soon + Duration::hours(1))
        .await
        .expect("create");
    h.clock.advance(Duration::hours(1));
    assert_eq!(h.store.load_web_session("s1").await.expect("load"), None);
    assert_eq!(h.store.purge_web_sessions().await.expect("purge"), 1);
    h.store.delete_web_session("s2").await.expect("delete");
    assert_eq!(h.store.load_web_session("s2").await.expect("load"), None);
}

crate::on_both_backends!(
    usernames_are_unique_and_passwords_come_back_for_sign_in,
    sign_in_links_work_once_and_only_before_they_expire,
    first_run_link_after_an_admin_exists_creates_nobody,
    web_sessions_are_saved_replaced_and_expire,
);
