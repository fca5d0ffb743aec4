//! `docs/architecture.md`, written from `cargo metadata` so that it cannot go stale: the workspace's crates,
//! each with its one job (its `description`), and the arrows between them. `cargo xtask architecture` writes
//! it; `cargo xtask test` fails when the file differs from what the manifests say.

use std::{collections::BTreeMap, fmt::Write as _};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{cargo, workspace_root};

/// Where the page lives.
const PAGE: &str = "docs/architecture.md";

/// One crate of the workspace: its folder, its one job, and the workspace crates it depends on.
#[derive(Debug, Clone, PartialEq)]
struct Crate {
    name: String,
    folder: String,
    job: String,
    /// Normal dependencies on other workspace crates, each with the features that bring it in (empty: always).
    uses: BTreeMap<String, Vec<String>>,
    /// Dependencies of its tests and benches only.
    tests_use: Vec<String>,
}

/// Writes the page.
pub fn write() -> Result<()> {
    let page = render(&crates()?);
    std::fs::write(workspace_root().join(PAGE), page)
        .with_context(|| format!("cannot write {PAGE}"))?;
    println!("xtask: wrote {PAGE}");
    Ok(())
}

/// Fails when the page is not what the manifests say now.
pub fn check() -> Result<()> {
    let expected = render(&crates()?);
    let found = std::fs::read_to_string(workspace_root().join(PAGE)).unwrap_or_default();
    if found != expected {
        bail!(
            "{PAGE} does not match the workspace's manifests (a crate, a dependency or a description changed): run \
             `cargo xtask architecture` and commit the page"
        );
    }
    println!("xtask: {PAGE} matches cargo metadata");
    Ok(())
}

/// The workspace's crates, from `cargo metadata`.
fn crates() -> Result<Vec<Crate>> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(workspace_root())
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("cargo metadata's JSON")?;
    Ok(from_metadata(&metadata))
}

fn from_metadata(metadata: &Value) -> Vec<Crate> {
    let root = metadata["workspace_root"].as_str().unwrap_or_default();
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let names: Vec<String> = packages
        .iter()
        .filter_map(|package| package["name"].as_str().map(str::to_owned))
        .collect();
    let mut crates: Vec<Crate> = packages
        .iter()
        .map(|package| {
            let manifest = package["manifest_path"].as_str().unwrap_or_default();
            let folder = manifest
                .strip_prefix(root)
                .unwrap_or(manifest)
                .trim_start_matches('/')
                .trim_end_matches("Cargo.toml")
                .to_owned();
            let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut tests_use = Vec::new();
            for dependency in package["dependencies"].as_array().into_iter().flatten() {
                let Some(name) = dependency["name"]
                    .as_str()
                    .filter(|name| names.iter().any(|n| n == name))
                else {
                    continue;
                };
                match dependency["kind"].as_str() {
                    Some("dev") => tests_use.push(name.to_owned()),
                    Some("build") => {}
                    _ => {
                        let features = if dependency["optional"].as_bool() == Some(true) {
                            features_enabling(package, name)
                        } else {
                            Vec::new()
                        };
                        uses.entry(name.to_owned()).or_default().extend(features);
                    }
                }
            }
            tests_use.sort();
            tests_use.dedup();
            let own = package["name"].as_str().unwrap_or_default();
            // A crate's tests may use the crate itself with a feature (the store's `testing`): no arrow.
            tests_use.retain(|name| !uses.contains_key(name) && name != own);
            Crate {
                name: package["name"].as_str().unwrap_or_default().to_owned(),
                folder,
                job: package["description"]
                    .as_str()
                    .unwrap_or("(no description)")
                    .to_owned(),
                uses,
                tests_use,
            }
        })
        .collect();
    crates.sort_by(|a, b| a.folder.cmp(&b.folder));
    crates
}

/// The features of `package` that turn on its optional dependency `name`.
fn features_enabling(package: &Value, name: &str) -> Vec<String> {
    let mut features: Vec<String> = package["features"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, enables)| {
            enables
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|item| {
                    item == format!("dep:{name}")
                        || item == name
                        || item.starts_with(&format!("{name}/"))
                })
        })
        .map(|(feature, _)| feature.clone())
        .collect();
    features.sort();
    features
}

fn render(crates: &[Crate]) -> String {
    let mut page = String::from(
        "# Architecture\n\n\
         Generated by `cargo xtask architecture` from `cargo metadata`; `cargo xtask test` fails when this page \
         and the manifests disagree, so it cannot go stale. Each crate's one job is its `description` in its \
         `Cargo.toml`. An arrow `A --> B` is \"A depends on B\"; a labelled arrow is a dependency only with that \
         feature; a dotted one, only for A's tests and benches.\n\n```mermaid\nflowchart LR\n",
    );
    for krate in crates {
        for (used, features) in &krate.uses {
            if features.is_empty() {
                let _ = writeln!(page, "    {} --> {}", node(&krate.name), node(used));
            } else {
                let _ = writeln!(
                    page,
                    "    {} -->|{}| {}",
                    node(&krate.name),
                    features.join(", "),
                    node(used)
                );
            }
        }
        for used in &krate.tests_use {
            let _ = writeln!(page, "    {} -.-> {}", node(&krate.name), node(used));
        }
    }
    page.push_str("```\n\n| crate | folder | its one job | depends on | its tests also use |\n| --- | --- | --- | --- | --- |\n");
    for krate in crates {
        let uses: Vec<String> = krate
            .uses
            .iter()
            .map(|(used, features)| {
                if features.is_empty() {
                    format!("`{used}`")
                } else {
                    format!("`{used}` (with {})", features.join(", "))
                }
            })
            .collect();
        let tests: Vec<String> = krate
            .tests_use
            .iter()
            .map(|used| format!("`{used}`"))
            .collect();
        let _ = writeln!(
            page,
            "| `{}` | `{}` | {} | {} | {} |",
            krate.name,
            krate.folder,
            krate.job.replace('|', "\\|"),
            if uses.is_empty() {
                "—".to_owned()
            } else {
                uses.join(", ")
            },
            if tests.is_empty() {
                "—".to_owned()
            } else {
                tests.join(", ")
            }
        );
    }
    page
}

/// A crate's node in the graph: its name without the `anteroom-` prefix.
fn node(name: &str) -> String {
    name.trim_start_matches("anteroom-").replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_arrows_and_features_are_read_from_the_metadata() {
        let metadata = serde_json::json!({
            "workspace_root": "/w",
            "packages": [
                {"name": "anteroom-app", "manifest_path": "/w/app/Cargo.toml", "description": "The pages.",
                 "features": {"ssr": ["dep:anteroom-store"], "hydrate": []},
                 "dependencies": [
                    {"name": "anteroom-domain", "kind": null, "optional": false},
                    {"name": "anteroom-store", "kind": null, "optional": true},
                    {"name": "serde", "kind": null, "optional": false}]},
                {"name": "anteroom-domain", "manifest_path": "/w/domain/Cargo.toml", "description": "The rules.",
                 "features": {}, "dependencies": [{"name": "anteroom-store", "kind": "dev", "optional": false}]},
                {"name": "anteroom-store", "manifest_path": "/w/store/Cargo.toml", "description": "The store.",
                 "features": {}, "dependencies": [{"name": "anteroom-domain", "kind": null, "optional": false}]}
            ]
        });
        let crates = from_metadata(&metadata);
        assert_eq!(crates[0].folder, "app/");
        assert_eq!(crates[0].uses["anteroom-domain"], Vec::<String>::new());
        assert_eq!(crates[0].uses["anteroom-store"], vec!["ssr".to_owned()]);
        assert!(!crates[0].uses.contains_key("serde"));
        assert_eq!(crates[1].tests_use, vec!["anteroom-store".to_owned()]);
        let page = render(&crates);
        assert!(page.contains("    app -->|ssr| store\n"), "{page}");
        assert!(page.contains("    domain -.-> store\n"), "{page}");
        assert!(
            page.contains("| `anteroom-store` | `store/` | The store. | `anteroom-domain` | — |"),
            "{page}"
        );
    }
}
