//! Marks the build when `ANTEROOM_TEST_POSTGRES_URL` is set, so the PostgreSQL twins of the tests run then and
//! are reported as ignored (never as passed) when it is not.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(anteroom_postgres_tests)");
    println!("cargo::rerun-if-env-changed=ANTEROOM_TEST_POSTGRES_URL");
    let set = std::env::var("ANTEROOM_TEST_POSTGRES_URL").is_ok_and(|url| !url.trim().is_empty());
    if set {
        println!("cargo::rustc-cfg=anteroom_postgres_tests");
    }
}
