//! The outward answer (docs/protocol.md#the-outward-answer) for every way a round can end.

use anteroom_store::domain::{
    outward::{PollAction, outward_answer},
    round::{FailureCode, ResponseAction},
};
use chrono::Duration;
use serde_json::json;

use crate::fixtures::*;
use crate::support::Harness;

async fn outward_answer_follows_the_table(h: &Harness) {
    let pending = ask(h, "s1").await;
    let a = outward_answer(&pending, "address");
    assert_eq!((a.action, a.content.is_none()), (PollAction::Pending, true));

    let (accepted, _) = answer(
        h,
        &pending,
        accept(json!({"city": "Pune", "floor": 2})),
        "k1",
    )
    .await
    .expect("accept");
    let a = outward_answer(&accepted, "address");
    assert_eq!(a.action, PollAction::Accept);
    assert_eq!(
        a.content,
        json!({"city": "Pune", "floor": 2}).as_object().cloned()
    );

    let declined = ask_again(h, "s1").await;
    let (declined, _) = answer(h, &declined, bare(ResponseAction::Decline), "k2")
        .await
        .expect("decline");
    assert_eq!(
        outward_answer(&declined, "address").action,
        PollAction::Decline
    );

    let dismissed = ask_again(h, "s1").await;
    let (dismissed, _) = answer(h, &dismissed, bare(ResponseAction::Cancel), "k3")
        .await
        .expect("cancel");
    assert_eq!(
        outward_answer(&dismissed, "address").action,
        PollAction::Cancel
    );

    let failed = ask_again(h, "s1").await;
    let lease = h
        .store
        .claim_round(failed.round_id, owner("w"), Duration::seconds(60))
        .await
        .expect("claim");
    let failed = h
        .store
        .fail(
            failed.round_id,
            &owner("w"),
            &lease.lease_token,
            FailureCode::Other("tool_crashed".into()),
            "boom".into(),
        )
        .await
        .expect("fail");
    let a = outward_answer(&failed, "address");
    assert_eq!(a.action, PollAction::Cancel);
    assert_eq!(a.failure_code.as_deref(), Some("tool_crashed"));
    assert!(a.content.is_none());

    let expiring = ask_again(h, "s1").await;
    h.clock.advance(Duration::hours(2));
    let expired = h.store.get_round(expiring.round_id).await.expect("read");
    let a = outward_answer(&expired, "address");
    assert_eq!((a.action, a.failure_code), (PollAction::Expired, None));
}

crate::on_both_backends!(outward_answer_follows_the_table);
