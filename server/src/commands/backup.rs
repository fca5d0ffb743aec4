//! `anteroom backup --to FILE` and `anteroom restore --from FILE`: a SQLite database copied while it serves,
//! and put back while it does not (docs/operations.md#backup-and-restore).

use anteroom_server::{
    backup,
    config::{BackupArgs, RestoreArgs},
};

pub async fn back_up(args: BackupArgs) -> anyhow::Result<()> {
    // Connected, not migrated: a backup changes nothing, not even the schema of a database an older
    // Anteroom is serving.
    let store = super::connect_existing(&args.database.database_url).await?;
    let report = backup::back_up(store.as_ref(), &args.to).await?;
    eprintln!("backed up to {report}");
    Ok(())
}

pub async fn restore(args: RestoreArgs) -> anyhow::Result<()> {
    let report = backup::restore(&args.from, &args.database.database_url).await?;
    eprintln!("restored {} into {}", args.from.display(), report.restored);
    if let Some(kept) = report.kept {
        eprintln!("the database it replaced is kept as {}", kept.display());
    }
    Ok(())
}
