//! Both backends migrate at start and treat a second migration as a no-op.

use crate::support::Harness;

async fn migrating_again_is_a_no_op(h: &Harness) {
    let applied = h
        .store
        .applied_migrations()
        .await
        .expect("count migrations");
    assert_eq!(applied, 28, "every migration is recorded");
    h.store.migrate().await.expect("second migration");
    assert_eq!(
        h.store
            .applied_migrations()
            .await
            .expect("count migrations"),
        applied,
        "migrating again applies nothing"
    );
    h.store
        .schema_version()
        .await
        .expect("the database answers after migrating");
}

crate::on_both_backends!(migrating_again_is_a_no_op);
