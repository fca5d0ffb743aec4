//! Retention: finished rounds are purged once they are old enough, and open ones never.

use anteroom_store::domain::round::{FailureCode, ResponseAction};
use chrono::Duration;

use crate::fixtures::*;
use crate::support::{self, Harness};

async fn purge_deletes_only_finished_rounds_past_retention(h: &Harness) {
    let finished = ask(h, "s1").await;
    answer(h, &finished, bare(ResponseAction::Decline), "k1")
        .await
        .expect("answer");
    let lease = h
        .store
        .claim_round(finished.round_id, owner("w"), Duration::seconds(60))
        .await
        .expect("claim");
    h.store
        .fail(
            finished.round_id,
            &owner("w"),
            &lease.lease_token,
            FailureCode::DeliveryFailed,
            "x".into(),
        )
        .await
        .expect("fail");
    let open = h
        .store
        .create_round(new_round(
            "s1",
            vec![("address", form("Still open?", None))],
        ))
        .await
        .expect("open round");
    let now = support::start_time();
    assert_eq!(
        h.store
            .purge_terminal_rounds(now - Duration::days(30))
            .await
            .expect("purge"),
        0,
        "nothing is old yet"
    );
    h.clock.advance(Duration::days(31));
    assert_eq!(
        h.store
            .purge_terminal_rounds(now + Duration::days(1))
            .await
            .expect("purge"),
        1
    );
    assert_eq!(
        refusal(h.store.get_round(finished.round_id).await).code(),
        "not_found"
    );
    assert!(
        h.store.get_round(open.round_id).await.is_ok(),
        "unfinished rounds are kept"
    );
}

crate::on_both_backends!(purge_deletes_only_finished_rounds_past_retention);
