//! Upgrading Anteroom (docs/operations.md#upgrades) through the real `anteroom` binary: a database newer than the
//! binary is refused naming both versions, instances racing the same migrations on PostgreSQL apply each once,
//! and PostgreSQL's own dump and restore move a database the server then serves.

use anteroom_store::{
    PostgresDialect, PostgresStore, Store, StoreOptions,
    dialect::Dialect,
    testing::{TestSchema, postgres_url},
};
use serde_json::Value;

use super::operations::{anteroom, serve, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_older_than_its_database_refuses_it_naming_both_versions() {
    let folder = tempfile::tempdir().expect("dir");
    let url = format!(
        "sqlite://{}",
        folder.path().join("anteroom.sqlite3").display()
    );
    // A mistyped path is an error, not a new empty database.
    let status = anteroom(&["migrate", "--status"], &[("DATABASE_URL", &url)]).await;
    assert!(!status.status.success());
    assert!(
        text(&status.stderr).contains("there is no database"),
        "{}",
        text(&status.stderr)
    );
    assert!(!folder.path().join("anteroom.sqlite3").exists());
    let migrated = anteroom(&["migrate"], &[("DATABASE_URL", &url)]).await;
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    let status = anteroom(&["migrate", "--status"], &[("DATABASE_URL", &url)]).await;
    assert!(
        text(&status.stdout).contains("Up to date."),
        "{}",
        text(&status.stdout)
    );

    // A newer Anteroom's migration, as it would have recorded it.
    let store = anteroom_store::SqliteStore::connect(&url, StoreOptions::default())
        .await
        .expect("open");
    let known = store
        .schema_status()
        .await
        .expect("status")
        .binary_version();
    let newer = known + 1;
    let status = anteroom(&["migrate", "--status"], &[("DATABASE_URL", &url)]).await;
    assert!(
        text(&status.stdout).contains(concat!("last begun:  Anteroom ", env!("CARGO_PKG_VERSION"))),
        "{}",
        text(&status.stdout)
    );
    newer_migration(store.pool(), newer).await;

    let status = anteroom(&["migrate", "--status"], &[("DATABASE_URL", &url)]).await;
    assert_eq!(status.status.code(), Some(3), "{}", text(&status.stdout));
    let listing = text(&status.stdout);
    assert!(listing.contains("unknown to this binary"), "{listing}");
    assert!(
        listing.contains(&format!("schema version {newer}")),
        "{listing}"
    );

    let refused = serve(&url, &[])
        .await
        .expect_err("an older binary must not serve");
    assert!(
        refused.contains(&format!(
            "schema version {newer} (from the future), which Anteroom 99.0.0 applied"
        )),
        "{refused}"
    );
    assert!(
        refused.contains(&format!("knows up to {known}")),
        "{refused}"
    );
    assert!(refused.contains(env!("CARGO_PKG_VERSION")), "{refused}");
}

/// Records a migration this binary does not carry, as a newer Anteroom would have.
#[expect(
    clippy::disallowed_methods,
    reason = "the test plays a newer binary's migrator"
)]
async fn newer_migration<DB: sqlx::Database>(pool: &sqlx::Pool<DB>, version: i64)
where
    for<'c> &'c sqlx::Pool<DB>: sqlx::Executor<'c, Database = DB>,
{
    sqlx::raw_sql(&format!(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ({version}, 'from the future', TRUE, X'00', 1); \
         INSERT INTO anteroom_releases (version, first_started_at_ms) VALUES ('99.0.0', 9999999999999)"
    ))
    .execute(pool)
    .await
    .expect("record a newer migration");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn two_instances_starting_together_on_an_old_postgres_database_apply_each_migration_once() {
    let Some(url) = postgres_url() else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    let schema = TestSchema::create(&url).await.expect("schema");
    // The database as an older Anteroom left it: its first half of the migrations.
    let all = PostgresDialect::migrator().migrations.clone();
    let half = all.len() / 2;
    let mut older = sqlx::migrate::Migrator::DEFAULT;
    older.migrations = std::borrow::Cow::Owned(all.iter().take(half).cloned().collect());
    assert!(half >= 10, "an older database has some of the schema");
    older.run(&schema.pool).await.expect("the older schema");

    let database_url = format!(
        "{url}{}options=-c%20search_path%3D{}",
        if url.contains('?') { "&" } else { "?" },
        schema.name()
    );
    let channel = format!("anteroom_test_{}", uuid::Uuid::now_v7().simple());
    let extra = [("ANTEROOM_EVENT_CHANNEL", channel.as_str())];
    let (first, second) = tokio::join!(serve(&database_url, &extra), serve(&database_url, &extra));
    let (first, _) = first.expect("the first instance serves");
    let (second, _) = second.expect("the second instance serves");

    let store = PostgresStore::from_pool(schema.pool.clone(), StoreOptions::default());
    let status = store.schema_status().await.expect("status");
    assert!(status.pending().is_empty(), "every migration is applied");
    assert!(status.applied.iter().all(|applied| applied.success));
    let mut versions: Vec<i64> = status
        .applied
        .iter()
        .map(|applied| applied.version)
        .collect();
    versions.dedup();
    assert_eq!(versions.len(), all.len(), "each once: {versions:?}");
    drop((first, second));
    schema.drop_schema().await.expect("drop schema");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(anteroom_postgres_tests),
    ignore = "set ANTEROOM_TEST_POSTGRES_URL to run the PostgreSQL tests"
)]
async fn the_documented_pg_dump_and_pg_restore_move_a_database_the_server_then_serves() {
    let Some(url) = postgres_url() else {
        panic!("built with ANTEROOM_TEST_POSTGRES_URL set: set it when the tests run too");
    };
    if std::process::Command::new("pg_dump")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("pg_dump is not installed: the PostgreSQL tests need PostgreSQL's client tools");
    }
    let suffix = uuid::Uuid::now_v7().simple().to_string();
    let (source, target) = (
        format!("anteroom_dump_{suffix}"),
        format!("anteroom_restore_{suffix}"),
    );
    let admin = sqlx::PgPool::connect(&url).await.expect("connect");
    create_database(&admin, &source).await;
    create_database(&admin, &target).await;
    let with_database = |name: &str| -> String {
        let mut parsed = url::Url::parse(&url).expect("url");
        parsed.set_path(&format!("/{name}"));
        parsed.to_string()
    };
    let (source_url, target_url) = (with_database(&source), with_database(&target));

    // Something to move: a session made through the CLI on the source.
    let made = anteroom(
        &[
            "session",
            "create",
            "--id",
            "moved",
            "--title",
            "Moved by pg_dump",
        ],
        &[
            ("DATABASE_URL", &source_url),
            ("ANTEROOM_PUBLIC_URL", "http://127.0.0.1:1"),
        ],
    )
    .await;
    assert!(made.status.success(), "{}", text(&made.stderr));

    // The commands of docs/operations.md#backup-and-restore, as written there.
    let folder = tempfile::tempdir().expect("dir");
    let dump = folder.path().join("anteroom.dump");
    let dumped = std::process::Command::new("pg_dump")
        .args(["--format=custom", "--file"])
        .arg(&dump)
        .arg(&source_url)
        .output()
        .expect("pg_dump");
    assert!(dumped.status.success(), "{}", text(&dumped.stderr));
    let restored = std::process::Command::new("pg_restore")
        .args(["--no-owner", "--dbname", &target_url])
        .arg(&dump)
        .output()
        .expect("pg_restore");
    assert!(restored.status.success(), "{}", text(&restored.stderr));

    let status = anteroom(&["migrate", "--status"], &[("DATABASE_URL", &target_url)]).await;
    assert!(
        text(&status.stdout).contains("Up to date."),
        "{}",
        text(&status.stdout)
    );
    let (server, base) = serve(&target_url, &[])
        .await
        .expect("serves the restored database");
    let key = anteroom(
        &["apikey", "create", "--name", "check", "--role", "viewer"],
        &[("DATABASE_URL", &target_url)],
    )
    .await;
    let session: Value = reqwest::Client::new()
        .get(format!("{base}/api/v1/sessions/moved"))
        .bearer_auth(text(&key.stdout).trim())
        .send()
        .await
        .expect("GET session")
        .json()
        .await
        .expect("JSON");
    assert_eq!(session["title"], "Moved by pg_dump", "{session}");
    drop(server);
    admin.close().await;
    let admin = sqlx::PgPool::connect(&url).await.expect("connect");
    drop_database(&admin, &source).await;
    drop_database(&admin, &target).await;
}

#[expect(
    clippy::disallowed_methods,
    reason = "the test makes databases of its own"
)]
async fn create_database(admin: &sqlx::PgPool, name: &str) {
    sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
        .execute(admin)
        .await
        .expect("create database");
}

#[expect(
    clippy::disallowed_methods,
    reason = "the test drops the databases it made"
)]
async fn drop_database(admin: &sqlx::PgPool, name: &str) {
    sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(admin)
        .await
        .expect("drop database");
}
