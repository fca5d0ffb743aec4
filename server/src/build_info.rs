//! What this binary is: its version, the commit and date it was built from, and what it can run on
//! (`anteroom --version`, `/readyz`). The build script (`server/build.rs`) stamps the commit and date.

/// The release version (the workspace's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit built, abbreviated, or `unknown` outside a git checkout.
pub const COMMIT: &str = env!("ANTEROOM_COMMIT");
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
