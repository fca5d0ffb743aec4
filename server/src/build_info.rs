//! What this binary is: its version, the commit and date it was built from, and what it can run on
//! (`anteroom --version`, `/readyz`). The build script (`server/build.rs`) stamps the commit and date.

/// The release version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit built, abbreviated, or `unknown` outside a git checkout.
pub const COMMIT: &str = env!("ANTEROOM_COMMIT");
/// The day of that commit.
pub const COMMIT_DATE: &str = env!("ANTEROOM_COMMIT_DATE");
/// When it was built (`SOURCE_DATE_EPOCH` for a reproducible build).
pub const BUILT: &str = env!("ANTEROOM_BUILT");
/// The target triple and cargo profile.
pub const TARGET: &str = env!("ANTEROOM_BUILD_TARGET");
/// The databases this binary can run on (both are always compiled in).
pub const BACKENDS: &str = "sqlite, postgres";

/// `anteroom --version`: one line for people and scripts to read, then the details.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit:   ",
    env!("ANTEROOM_COMMIT"),
    " (",
    env!("ANTEROOM_COMMIT_DATE"),
    ")\nbuilt:    ",
    env!("ANTEROOM_BUILT"),
    " (",
    env!("ANTEROOM_BUILD_TARGET"),
    ")\nbackends: sqlite, postgres"
);
