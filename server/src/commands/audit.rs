//! `anteroom audit export|verify`: the record of decisions, printed or checked (docs/audit.md).

#![allow(
    clippy::print_stdout,
    reason = "what `audit export` and `audit verify` print on stdout is their output"
)]

use std::io::Write;

use anteroom_domain::{
    audit::{AuditEntry, GENESIS, verify_chain},
    expiry::wire_time,
};
use anteroom_server::config::AuditCommand;
use anteroom_store::{Store, StoreOptions};
use anyhow::Context;
use chrono::{DateTime, NaiveDate, Utc};

use super::open_store;

/// Entries read at a time.
const PAGE: u32 = 5_000;

/// Runs the command; returns the exit status (`verify`: 1 when the chain is broken).
pub async fn run(command: AuditCommand) -> anyhow::Result<u8> {
    match command {
        AuditCommand::Export {
            since,
            format,
            database,
        } => {
            let since = since.as_deref().map(parse_since).transpose()?;
            let store = open_store(&database, StoreOptions::default()).await?;
            // What was written but not yet sealed is sealed first, so the export is complete up to now.
            store.seal_audit().await?;
            export(store.as_ref(), since, &format).await?;
            Ok(0)
        }
        AuditCommand::Verify { database } => {
            let store = open_store(&database, StoreOptions::default()).await?;
            store.seal_audit().await?;
            verify(store.as_ref()).await
        }
    }
}

/// A moment given as RFC 3339, or a day (its start, UTC).
fn parse_since(raw: &str) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(raw) {
        return Ok(at.with_timezone(&Utc));
    }
    let day = NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .with_context(|| format!("--since {raw:?} is neither a date (2026-12-01) nor RFC 3339"))?;
    Ok(day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
}

/// Where an export goes: JSON lines, or CSV rows with a header.
enum Sink<W: Write> {
    Lines(W),
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> Sink<W> {
    fn write(&mut self, entry: &AuditEntry) -> anyhow::Result<()> {
        match self {
            Self::Lines(out) => writeln!(out, "{}", serde_json::to_string(entry)?)?,
            Self::Csv(out) => out.write_record([
                entry.seq.to_string(),
                wire_time(entry.at),
                entry.actor.clone(),
                entry.action.clone(),
                entry.subject.clone(),
                entry.detail.clone(),
                entry.prev_hash.clone(),
                entry.hash.clone(),
            ])?,
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        match self {
            Self::Lines(mut out) => out.flush()?,
            Self::Csv(mut out) => out.flush()?,
        }
        Ok(())
    }
}

async fn export(
    store: &dyn Store,
    since: Option<DateTime<Utc>>,
    format: &str,
) -> anyhow::Result<()> {
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut sink = if format == "csv" {
        let mut csv = csv::Writer::from_writer(out);
        csv.write_record([
            "seq",
            "at",
            "actor",
            "action",
            "subject",
            "detail",
            "prev_hash",
            "hash",
        ])?;
        Sink::Csv(Box::new(csv))
    } else {
        Sink::Lines(out)
    };
    let mut after = 0;
    loop {
        let entries = store.audit_entries(after, since, PAGE).await?;
        for entry in &entries {
            sink.write(entry)?;
        }
        match entries.last() {
            Some(last) if entries.len() == PAGE as usize => after = last.seq,
            _ => break,
        }
    }
    sink.finish()
}

async fn verify(store: &dyn Store) -> anyhow::Result<u8> {
    let (head_seq, head_hash, pending) = store.audit_head().await?;
    let (mut seq, mut hash) = (0, GENESIS.to_owned());
    loop {
        let entries = store.audit_entries(seq, None, PAGE).await?;
        if entries.is_empty() {
            break;
        }
        match verify_chain(&entries, seq, hash) {
            Ok((last, last_hash)) => (seq, hash) = (last, last_hash),
            Err(broken) => {
                println!(
                    "audit log BROKEN at entry {}: {}",
                    broken.seq, broken.problem
                );
                return Ok(1);
            }
        }
    }
    if (seq, hash.as_str()) != (head_seq, head_hash.as_str()) {
        println!(
            "audit log BROKEN at entry {}: entries {} to {head_seq} are missing (the log ends before its last sealed entry)",
            seq + 1,
            seq + 1
        );
        return Ok(1);
    }
    println!("audit log intact: {seq} entries, last hash {hash} ({pending} waiting to be sealed)");
    Ok(0)
}
