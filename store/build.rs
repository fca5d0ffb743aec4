//! Marks the build when `ANTEROOM_TEST_POSTGRES_URL` is set, so the PostgreSQL twins of the tests run then and
//! are reported as ignored (never as passed) when it is not; and when `ANTEROOM_TEST_MCP_SDKS` is set (by
//! `cargo xtask test`, which installs the MCP SDKs), so the tests against real SDK servers and clients run then.

pub fn main() {
    println!("cargo::rustc-check-cfg=cfg(anteroom_postgres_tests)");
    println!("cargo::rustc-check-cfg=cfg(anteroom_mcp_sdk_tests)");
    println!("cargo::rerun-if-env-changed=ANTEROOM_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=ANTEROOM_TEST_MCP_SDKS");
    // `sqlx::migrate!` embeds the migrations: a new file there must rebuild the store.
    println!("cargo::rerun-if-changed=../migrations");
    let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
    if set("ANTEROOM_TEST_POSTGRES_URL") {
        println!("cargo::rustc-cfg=anteroom_postgres_tests");
    }
    if set("ANTEROOM_TEST_MCP_SDKS") {
        println!("cargo::rustc-cfg=anteroom_mcp_sdk_tests");
    }
}
