//! Provider sign-in: people found by their provider identity or verified e-mail, made at first sign-in, and
//! given exactly the role and groups their provider groups grant, every time.

use anteroom_store::domain::{
    access::{Role, User},
    clock::Clock,
    provider_people::{Granted, ProviderPerson},
};

use crate::fixtures::audit_actions;
use crate::support::Harness;

const ISSUER: &str = "https://id.example.com";

fn person(
    subject: &str,
    email: Option<&str>,
    verified: bool,
    role: Role,
    groups: &[&str],
) -> ProviderPerson {
    ProviderPerson::new(
        ISSUER,
        subject,
        email,
        verified,
        Some("rita"),
        Granted {
            role,
            groups: groups.iter().map(|group| (*group).to_owned()).collect(),
        },
    )
}

async fn signed_in_groups(h: &Harness, id: &str) -> (Role, Vec<String>) {
    let signed_in = h.store.signed_in(id).await.expect("read").expect("person");
    (signed_in.user.role, signed_in.groups)
}

async fn a_first_sign_in_makes_the_person_and_later_ones_follow_the_provider(h: &Harness) {
    let first = h
        .store
        .sign_in_from_provider(&person(
            "sub-1",
            Some("rita@example.com"),
            true,
            Role::Responder,
            &["sre"],
        ))
        .await
        .expect("first sign-in");
    assert_eq!(
        (first.username.as_str(), first.role),
        ("rita", Role::Responder)
    );
    assert_eq!(
        signed_in_groups(h, &first.id).await,
        (Role::Responder, vec!["sre".to_owned()])
    );
    // The person has no password: the empty hash never verifies.
    assert_eq!(
        h.store
            .user_with_password("rita")
            .await
            .expect("read")
            .map(|(_, hash)| hash),
        Some(String::new())
    );

    // Removed from the provider's group: the next sign-in takes the group and the role away.
    let again = h
        .store
        .sign_in_from_provider(&person(
            "sub-1",
            Some("rita@example.com"),
            true,
            Role::Viewer,
            &[],
        ))
        .await
        .expect("second sign-in");
    assert_eq!(
        again.id, first.id,
        "the same person, found by issuer and subject"
    );
    assert_eq!(
        signed_in_groups(h, &first.id).await,
        (Role::Viewer, Vec::new())
    );
    assert_eq!(h.store.count_users().await.expect("count"), 1);

    // A sign-in that changes nothing records nothing.
    h.store
        .sign_in_from_provider(&person(
            "sub-1",
            Some("rita@example.com"),
            true,
            Role::Viewer,
            &[],
        ))
        .await
        .expect("third sign-in");
    assert_eq!(
        audit_actions(h).await,
        [
            "person.created_by_provider",
            "group.created",
            "person.access_from_provider",
            "person.access_from_provider"
        ],
        "made (and sre with them), then sre and responder taken away"
    );
}

async fn a_local_person_is_linked_only_by_an_email_vouched_for_and_verified(h: &Harness) {
    let local = User {
        id: "local-1".to_owned(),
        username: "rita".to_owned(),
        role: Role::Admin,
    };
    h.store
        .create_user(&local, "hash")
        .await
        .expect("local person");
    h.store
        .set_user_email("local-1", Some("rita@example.com"))
        .await
        .expect("email");

    // An e-mail the person typed themselves (nobody vouched for it) links nobody: a new person is made.
    let typed = h
        .store
        .sign_in_from_provider(&person(
            "sub-t",
            Some("rita@example.com"),
            true,
            Role::Viewer,
            &[],
        ))
        .await
        .expect("sign-in past a typed e-mail");
    assert_ne!(typed.id, "local-1");
    assert!(h.store.vouch_for_email("local-1").await.expect("vouch"));

    // Unverified: a new person (with a free username and without the e-mail), never the admin.
    let stranger = h
        .store
        .sign_in_from_provider(&person(
            "sub-x",
            Some("rita@example.com"),
            false,
            Role::Viewer,
            &[],
        ))
        .await
        .expect("unverified sign-in");
    assert_ne!(stranger.id, "local-1");
    assert_eq!(stranger.username, "rita-3");
    assert_eq!(h.store.user_email(&stranger.id).await.expect("email"), None);

    // Verified: the local person, whose role now comes from the provider.
    let linked = h
        .store
        .sign_in_from_provider(&person(
            "sub-r",
            Some("Rita@Example.com"),
            true,
            Role::Responder,
            &["ops"],
        ))
        .await
        .expect("verified sign-in");
    assert_eq!(linked.id, "local-1");
    assert_eq!(
        signed_in_groups(h, "local-1").await,
        (Role::Responder, vec!["ops".to_owned()])
    );
    let groups = h.store.list_groups().await.expect("groups");
    assert!(
        groups.iter().any(|group| group.name == "ops"),
        "a mapped group is made when missing"
    );
    // Linked, the local password no longer signs in: the person's rights come from the provider now.
    assert_eq!(
        h.store
            .user_with_password("rita")
            .await
            .expect("read")
            .map(|(_, hash)| hash),
        Some(String::new())
    );
    // The address handed to someone else at the provider (another subject) does not reach this account again.
    let next_holder = h
        .store
        .sign_in_from_provider(&person(
            "sub-new-hire",
            Some("rita@example.com"),
            true,
            Role::Viewer,
            &[],
        ))
        .await
        .expect("another subject");
    assert_ne!(next_holder.id, "local-1");
}

async fn someone_the_provider_no_longer_admits_keeps_nothing(h: &Harness) {
    let admitted = h
        .store
        .sign_in_from_provider(&person("sub-1", None, false, Role::Admin, &["sre"]))
        .await
        .expect("sign-in");
    h.store
        .create_web_session(
            "s1",
            "{}",
            h.clock.now() + chrono::Duration::hours(1),
            &anteroom_store::WebSessionOwner {
                user_id: Some(admitted.id.clone()),
                handle: "h1".to_owned(),
                ..Default::default()
            },
        )
        .await
        .expect("a browser");
    assert!(
        h.store
            .withdraw_provider_access(ISSUER, "sub-1")
            .await
            .expect("withdraw")
    );
    assert_eq!(
        signed_in_groups(h, &admitted.id).await,
        (Role::Viewer, Vec::new())
    );
    assert!(
        h.store
            .browser_sign_ins(&admitted.id)
            .await
            .expect("list")
            .is_empty()
    );
    // Their last provider sign-in no longer counts: what lasts as long as it (a passkey's sign-in, answers from
    // outside a page) ends with the refusal.
    assert_eq!(
        h.store
            .provider_signed_in_at(&admitted.id)
            .await
            .expect("read")
            .map(|at| at.timestamp()),
        Some(0)
    );
    assert!(
        !h.store
            .withdraw_provider_access(ISSUER, "never-seen")
            .await
            .expect("unknown")
    );
}

async fn the_providers_groups_are_held_to_the_team_limits(h: &Harness) {
    use anteroom_store::domain::responders::{GROUP_MEMBERS_MAX, GROUPS_MAX};
    // A group made by a sign-in is recorded like an admin's.
    h.store
        .sign_in_from_provider(&person("sub-1", None, false, Role::Responder, &["sre"]))
        .await
        .expect("sign-in");
    assert!(audit_actions(h).await.contains(&"group.created".to_owned()));

    // A full group is not joined: the sign-in is refused and changes nothing.
    h.store.create_group("full", "admin").await.expect("group");
    for n in 0..GROUP_MEMBERS_MAX {
        let member = User {
            id: format!("m-{n}"),
            username: format!("m{n}"),
            role: Role::Responder,
        };
        h.store.create_user(&member, "hash").await.expect("member");
        h.store
            .add_group_member("full", &member.username, "admin")
            .await
            .expect("join");
    }
    let full = h
        .store
        .sign_in_from_provider(&person("sub-2", None, false, Role::Responder, &["full"]))
        .await
        .expect_err("a full group");
    assert!(full.to_string().contains("members already"), "{full}");

    // No group is made past the limit.
    let existing = h.store.list_groups().await.expect("groups").len();
    for n in existing..GROUPS_MAX {
        h.store
            .create_group(&format!("g{n}"), "admin")
            .await
            .expect("group");
    }
    let many = h
        .store
        .sign_in_from_provider(&person(
            "sub-3",
            None,
            false,
            Role::Responder,
            &["one-too-many"],
        ))
        .await
        .expect_err("past the group limit");
    assert!(many.to_string().contains("more than 200 groups"), "{many}");
    assert_eq!(
        h.store.list_groups().await.expect("groups").len(),
        GROUPS_MAX
    );
}

crate::on_both_backends!(
    the_providers_groups_are_held_to_the_team_limits,
    a_first_sign_in_makes_the_person_and_later_ones_follow_the_provider,
    a_local_person_is_linked_only_by_an_email_vouched_for_and_verified,
    someone_the_provider_no_longer_admits_keeps_nothing,
);
