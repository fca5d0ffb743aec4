//! `anteroom migrate [--status]`: brings the database's schema up to this binary's, or shows where it stands
//! (docs/operations.md#upgrades).

#![allow(
    clippy::print_stdout,
    reason = "what `migrate --status` prints on stdout is its output"
)]

use anteroom_server::{config::MigrateArgs, instance::redact};
use anteroom_store::{
    StoreOptions,
    migrations::{ANTEROOM_VERSION, SchemaStatus},
};

/// Exit status of `migrate --status` when a newer Anteroom upgraded the database (this binary must not serve it).
const EXIT_NEWER: u8 = 3;

pub async fn run(args: MigrateArgs) -> anyhow::Result<u8> {
    let url = &args.database.database_url;
    if !args.status {
        let store = super::open_store(&args.database, StoreOptions::default()).await?;
        let status = store.schema_status().await?;
        println!(
            "{}: schema version {} (Anteroom {ANTEROOM_VERSION})",
            redact(url),
            status
                .database_version()
                .map_or_else(|| "none".to_owned(), |version| version.to_string())
        );
        return Ok(0);
    }
    let store = super::connect_existing(url).await?;
    let status = store.schema_status().await?;
    print!("{}", describe(&redact(url), &status));
    Ok(if status.refusal().is_some() {
        EXIT_NEWER
    } else {
        0
    })
}

/// The status as a table, one migration a line, and what to do about it.
fn describe(database: &str, status: &SchemaStatus) -> String {
    let mut text = format!(
        "database:    {database} (schema version {})\nthis binary: Anteroom {ANTEROOM_VERSION} (knows up to \
         {})\n\n{:>8}  {:<40}  {}\n",
        status
            .database_version()
            .map_or_else(|| "none".to_owned(), |version| version.to_string()),
        status.binary_version(),
        "version",
        "description",
        "applied"
    );
    if let Some(release) = &status.newest_release {
        text.insert_str(
            text.find("\n\n").unwrap_or(text.len()),
            &format!(
                "\nlast begun:  Anteroom {release} (the newest release recorded on this database)"
            ),
        );
    }
    let mut versions: Vec<i64> = status
        .known
        .iter()
        .map(|known| known.version)
        .chain(status.applied.iter().map(|applied| applied.version))
        .collect();
    versions.sort_unstable();
    versions.dedup();
    for version in versions {
        let known = status.known.iter().find(|known| known.version == version);
        let applied = status
            .applied
            .iter()
            .find(|applied| applied.version == version);
        let description = known
            .map(|known| known.description.as_str())
            .or(applied.map(|applied| applied.description.as_str()))
            .unwrap_or_default();
        let state = match (known, applied) {
            (_, Some(applied)) if !applied.success => format!("FAILED at {}", applied.applied_at),
            (Some(_), Some(applied)) => applied.applied_at.clone(),
            (Some(_), None) => "pending".to_owned(),
            (None, Some(applied)) => format!("{} (unknown to this binary)", applied.applied_at),
            (None, None) => String::new(),
        };
        text.push_str(&format!("{version:>8}  {description:<40}  {state}\n"));
    }
    let pending = status.pending().len();
    text.push('\n');
    if let Some(refusal) = status.refusal() {
        text.push_str(&format!("REFUSED: {refusal}\n"));
    } else if pending == 0 {
        text.push_str("Up to date.\n");
    } else {
        text.push_str(&format!(
            "{pending} migration{} pending: `anteroom migrate` (or the next `anteroom serve`) applies {}.\n",
            if pending == 1 { "" } else { "s" },
            if pending == 1 { "it" } else { "them" }
        ));
    }
    text
}
