//! The house's conventions that no compiler checks, read from the source text by `cargo xtask test`: no Rust
//! file over [`LINE_LIMIT`] lines but the listed ones, and the escapes from `clippy.toml`'s disallowed methods
//! (the system time, SQL outside the store, `exit`) only in the product files whose job they are.
//!
//! The second closes the hole the first wave's restore went through: an `#[expect(clippy::disallowed_methods)]`
//! on a whole function excuses every disallowed call in it, whatever the reason written, so a new escape in the
//! product is refused here and has to be added to [`ESCAPES`], where a reviewer sees it.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::workspace_root;

/// The most lines a Rust source file may have: past it a file holds more than one job.
const LINE_LIMIT: usize = 800;

/// Files allowed past [`LINE_LIMIT`], each with its reason.
const LONG_FILES: &[(&str, &str)] = &[];

/// The product files (under a crate's `src/`) that may escape `clippy.toml`'s disallowed methods, and why.
/// Tests, benches, build scripts, the test kit and the task runner are not the product and may.
const ESCAPES: &[(&str, &str)] = &[
    (
        "domain/src/clock.rs",
        "the real clock: the one place that reads the system time",
    ),
    (
        "store/src/sqlite.rs",
        "the SQLite dialect: where the store's SQL is run",
    ),
    (
        "store/src/wal_checkpoints.rs",
        "SQLite's checkpoints: the file's upkeep beside the store's SQL, in no operation's count",
    ),
    (
        "store/src/postgres.rs",
        "the PostgreSQL dialect: where the store's SQL is run",
    ),
    ("server/src/main.rs", "main decides the process's exit"),
];

/// Folders never read: build output, the vendored crates (upstream's text) and the fuzz workspace's own target.
const SKIPPED: &[&str] = &["target", "vendor", "node_modules", ".git"];

/// Checks every convention; fails naming each file that breaks one and what to do.
pub fn check() -> Result<()> {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root, &mut files)?;
    let mut broken = Vec::new();
    for path in &files {
        let relative = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path)?;
        broken.extend(problems(&relative, &text));
    }
    if !broken.is_empty() {
        bail!("conventions broken:\n  {}", broken.join("\n  "));
    }
    println!(
        "xtask: {} Rust files: none over {LINE_LIMIT} lines, disallowed methods escaped only where listed",
        files.len()
    );
    Ok(())
}

/// What `text`, the file at `relative`, breaks.
fn problems(relative: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > LINE_LIMIT && !LONG_FILES.iter().any(|(file, _)| *file == relative) {
        problems.push(format!(
            "{relative}: {lines} lines, over {LINE_LIMIT}: split it by job (or list it in xtask/src/conventions.rs \
             LONG_FILES with the reason it cannot be)"
        ));
    }
    // The task runner and the test kit are never in the binary.
    let product = relative.contains("/src/")
        && !relative.starts_with("xtask/")
        && !relative.starts_with("testkit/");
    if product
        && text.contains("clippy::disallowed_methods")
        && !ESCAPES.iter().any(|(file, _)| *file == relative)
    {
        problems.push(format!(
            "{relative}: escapes clippy.toml's disallowed methods: use the Clock (anteroom_domain::clock), the \
             store's SQL, or return an ExitCode; an escape that must stay is listed in xtask/src/conventions.rs \
             ESCAPES with its reason"
        ));
    }
    problems
}

/// Every `.rs` file under `folder`, but under [`SKIPPED`] folders.
fn rust_files(folder: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        if entry.file_type()?.is_dir() {
            if !SKIPPED.iter().any(|skipped| name == *skipped) {
                rust_files(&path, files)?;
            }
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_file_and_an_unlisted_escape_are_named() {
        let long = "fn f() {}\n".repeat(LINE_LIMIT + 1);
        assert_eq!(problems("app/src/big.rs", &long).len(), 1);
        assert!(problems("app/src/big.rs", &"\n".repeat(LINE_LIMIT)).is_empty());
        let escape =
            "#[expect(clippy::disallowed_methods, reason = \"no store is open\")]\nfn f() {}";
        let found = problems("server/src/backup.rs", escape);
        assert!(
            found[0].contains("server/src/backup.rs: escapes"),
            "{found:?}"
        );
        assert!(problems("domain/src/clock.rs", escape).is_empty());
        assert!(problems("server/tests/suite/cli.rs", escape).is_empty());
    }

    #[test]
    fn the_listed_files_exist() {
        for (file, _) in LONG_FILES.iter().chain(ESCAPES) {
            assert!(workspace_root().join(file).exists(), "{file}");
        }
    }
}
