//! Marks test builds as the store's build script does (shared), and stamps the binary with the commit it was
//! built from and when (`anteroom --version`, `/readyz`).

#[path = "../store/build.rs"]
mod test_flags;

use std::{path::Path, process::Command};

fn main() {
    test_flags::main();
    stamp_version();
}

/// `ANTEROOM_BUILD_COMMIT` (a build from a source archive has no git to ask) or the checkout's HEAD;
/// `SOURCE_DATE_EPOCH` (reproducible builds) or now for the build date. The script runs again when HEAD
/// moves, so a commit restamps the binary and an edit alone does not rebuild it.
#[expect(
    clippy::disallowed_methods,
    reason = "the build's own date is the wall clock's, not the store's injected one"
)]
fn stamp_version() {
    println!("cargo::rerun-if-env-changed=ANTEROOM_BUILD_COMMIT");
    println!("cargo::rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
            .filter(|text| !text.is_empty())
    };
    let commit = std::env::var("ANTEROOM_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_owned());
    let commit_date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown".to_owned());
    // HEAD, the branch it names and the packed refs: what a commit or checkout changes.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
            if path.exists() {
                println!("cargo::rerun-if-changed={}", path.display());
            }
        }
    }
    let built = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|seconds| seconds.trim().parse::<i64>().ok())
        .and_then(|seconds| chrono::DateTime::from_timestamp(seconds, 0))
        .unwrap_or_else(chrono::Utc::now);
    println!("cargo::rustc-env=ANTEROOM_COMMIT={commit}");
    println!("cargo::rustc-env=ANTEROOM_COMMIT_DATE={commit_date}");
    println!(
        "cargo::rustc-env=ANTEROOM_BUILT={}",
        built.format("%Y-%m-%d %H:%M UTC")
    );
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".to_owned());
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo::rustc-env=ANTEROOM_BUILD_TARGET={target}, {profile}");
}
