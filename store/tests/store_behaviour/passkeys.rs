//! Passkeys: added within a person's limit, found by credential id at sign-in, their counters moved on by one
//! sign-in at a time, removed only by their own person (or all at once by an admin), and recorded in the audit
//! log.

use anteroom_store::domain::{
    access::{Role, User},
    clock::Clock,
};
use anteroom_store::{NewPasskey, PASSKEYS_PER_PERSON_MAX, PasskeyAdded, PasskeyForSignIn};
use chrono::Duration;

use crate::fixtures::audit_actions;
use crate::support::Harness;

async fn person(h: &Harness, id: &str) {
    let user = User {
        id: id.to_owned(),
        username: format!("name-{id}"),
        role: Role::Responder,
    };
    h.store.create_user(&user, "hash").await.expect("person");
}

fn passkey<'a>(id: &'a str, user_id: &'a str, name: &'a str) -> NewPasskey<'a> {
    NewPasskey {
        id,
        user_id,
        name,
        public_key: "public-key",
        counters: "counters-0",
    }
}

async fn a_passkey_is_added_found_used_and_removed_by_its_person(h: &Harness) {
    person(h, "u-1").await;
    person(h, "u-2").await;
    // A person's user handle is made once, by their first passkey's start, and never changes.
    for candidate in ["handle-1", "handle-2"] {
        assert_eq!(
            h.store
                .passkey_user_handle("u-1", candidate)
                .await
                .expect("handle")
                .as_deref(),
            Some("handle-1")
        );
    }
    assert_eq!(
        h.store
            .passkey_user_handle("nobody", "handle-3")
            .await
            .expect("handle"),
        None
    );
    let added = h
        .store
        .add_passkey(&passkey("cred-1", "u-1", "Phone"))
        .await
        .expect("add");
    assert_eq!(added, PasskeyAdded::Added);
    // A credential id is one passkey, whoever tries to add it again.
    let again = h
        .store
        .add_passkey(&passkey("cred-1", "u-2", "Stolen"))
        .await
        .expect("add");
    assert_eq!(again, PasskeyAdded::Taken);
    assert_eq!(
        h.store.passkey_for_sign_in("cred-1").await.expect("read"),
        Some(PasskeyForSignIn {
            user_id: "u-1".to_owned(),
            user_handle: "handle-1".to_owned(),
            public_key: "public-key".to_owned(),
            counters: "counters-0".to_owned(),
        })
    );
    h.clock.advance(Duration::minutes(5));
    assert!(
        h.store
            .passkey_used("cred-1", "counters-0", "counters-1")
            .await
            .expect("used")
    );
    // A second sign-in checked against the same counters lost the race: it changes nothing.
    assert!(
        !h.store
            .passkey_used("cred-1", "counters-0", "counters-9")
            .await
            .expect("used")
    );
    let listed = h.store.passkeys("u-1").await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "Phone");
    assert_eq!(listed[0].used_at, Some(h.clock.now()));
    assert!(listed[0].added_at < h.clock.now());
    assert_eq!(
        h.store
            .passkey_for_sign_in("cred-1")
            .await
            .expect("read")
            .map(|found| found.counters)
            .as_deref(),
        Some("counters-1")
    );
    // Someone else cannot remove it; its person can, once.
    assert!(
        !h.store
            .remove_passkey("u-2", "cred-1")
            .await
            .expect("remove")
    );
    assert!(
        h.store
            .remove_passkey("u-1", "cred-1")
            .await
            .expect("remove")
    );
    assert!(
        !h.store
            .remove_passkey("u-1", "cred-1")
            .await
            .expect("remove")
    );
    assert_eq!(
        h.store.passkey_for_sign_in("cred-1").await.expect("read"),
        None
    );
    assert!(h.store.passkeys("u-1").await.expect("list").is_empty());
    let actions = audit_actions(h).await;
    assert_eq!(
        actions
            .iter()
            .filter(|action| action.starts_with("passkey."))
            .collect::<Vec<_>>(),
        ["passkey.added", "passkey.removed"]
    );
}

async fn an_admin_removes_every_passkey_of_a_person(h: &Harness) {
    person(h, "u-1").await;
    person(h, "u-2").await;
    for (id, user) in [("a", "u-1"), ("b", "u-1"), ("c", "u-2")] {
        h.store
            .add_passkey(&passkey(id, user, "Key"))
            .await
            .expect("add");
    }
    assert_eq!(
        h.store.remove_every_passkey("u-1").await.expect("remove"),
        2
    );
    assert!(h.store.passkeys("u-1").await.expect("list").is_empty());
    assert_eq!(h.store.passkeys("u-2").await.expect("list").len(), 1);
}

async fn a_person_has_at_most_twenty_passkeys_even_added_at_once(h: &Harness) {
    person(h, "u-1").await;
    let mut tasks = Vec::new();
    for n in 0..PASSKEYS_PER_PERSON_MAX + 5 {
        let store = h.store.clone();
        tasks.push(tokio::spawn(async move {
            let id = format!("cred-{n}");
            store.add_passkey(&passkey(&id, "u-1", "Key")).await
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task joins"));
    }
    let added = results
        .iter()
        .filter(|result| matches!(result, Ok(PasskeyAdded::Added)))
        .count();
    assert_eq!(
        added,
        usize::try_from(PASSKEYS_PER_PERSON_MAX).expect("small")
    );
    assert!(
        results
            .iter()
            .all(|result| matches!(result, Ok(PasskeyAdded::Added | PasskeyAdded::TooMany))),
        "{results:?}"
    );
    assert_eq!(
        h.store
            .add_passkey(&passkey("cred-x", "nobody", "Key"))
            .await
            .expect("add"),
        PasskeyAdded::NoSuchPerson
    );
}

crate::on_both_backends!(
    a_passkey_is_added_found_used_and_removed_by_its_person,
    a_person_has_at_most_twenty_passkeys_even_added_at_once,
    an_admin_removes_every_passkey_of_a_person
);
