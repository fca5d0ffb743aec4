//! Both backends connect, migrate, and treat a second migration as a no-op.

mod support;

use std::sync::Arc;

use anteroom_app::store::Store;

async fn migrating_twice_is_a_no_op(store: Arc<dyn Store>) {
    store.migrate().await.expect("first migration");
    let applied = store.applied_migrations().await.expect("count migrations");
    assert!(applied >= 1, "at least the initial migration is recorded");

    store.migrate().await.expect("second migration");
    assert_eq!(
        store.applied_migrations().await.expect("count migrations"),
        applied,
        "migrating again applies nothing"
    );
    store.ping().await.expect("ping after migrating");
}

#[tokio::test]
async fn sqlite_migrates_once_and_again_is_a_no_op() {
    let (store, _dir) = support::sqlite_store().await;
    migrating_twice_is_a_no_op(store).await;
}

#[tokio::test]
async fn postgres_migrates_once_and_again_is_a_no_op() {
    let Some(url) = support::postgres_url() else {
        eprintln!("skipped: ANTEROOM_TEST_POSTGRES_URL is not set");
        return;
    };
    let (store, schema) = support::postgres_store(&url).await;
    migrating_twice_is_a_no_op(store).await;
    schema.drop().await;
}
