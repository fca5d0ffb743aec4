//! `anteroom group add|remove|list`: the groups of people who answer together (docs/teams.md).

#![allow(
    clippy::print_stdout,
    reason = "what `group list` prints on stdout is its output"
)]

use anteroom_server::config::GroupCommand;
use anteroom_store::StoreOptions;

use super::open_store;

pub async fn run(command: GroupCommand) -> anyhow::Result<()> {
    match command {
        GroupCommand::Add {
            name,
            members,
            database,
        } => {
            let store = open_store(&database, StoreOptions::default()).await?;
            if !store
                .list_groups()
                .await?
                .iter()
                .any(|group| group.name == name)
            {
                store.create_group(&name, "cli").await?;
                eprintln!("added group {name}");
            }
            for member in &members {
                store.add_group_member(&name, member, "cli").await?;
                eprintln!("{member} is in {name}");
            }
        }
        GroupCommand::Remove {
            name,
            members,
            database,
        } => {
            let store = open_store(&database, StoreOptions::default()).await?;
            if members.is_empty() {
                if !store.delete_group(&name, "cli").await? {
                    anyhow::bail!("no group is called {name}");
                }
                eprintln!("removed group {name}");
            }
            for member in &members {
                if !store.remove_group_member(&name, member, "cli").await? {
                    anyhow::bail!("{member} is not in {name}");
                }
                eprintln!("{member} left {name}");
            }
        }
        GroupCommand::List { database } => {
            let store = open_store(&database, StoreOptions::default()).await?;
            for group in store.list_groups().await? {
                println!("{}: {}", group.name, group.members.join(" "));
            }
        }
    }
    Ok(())
}
