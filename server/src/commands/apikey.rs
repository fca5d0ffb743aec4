//! `anteroom apikey create`: a new API key for a role, printed once (only its hash is stored).

#![allow(
    clippy::print_stdout,
    reason = "what this command prints on stdout is its output"
)]

use anteroom_domain::access::{ApiKey, Role};
use anteroom_server::{config::DatabaseArgs, credentials};
use anteroom_store::StoreOptions;
use anyhow::bail;

use super::open_store;

pub async fn create(name: &str, role: Role, database: &DatabaseArgs) -> anyhow::Result<()> {
    if name.trim().is_empty() || name.len() > 100 {
        bail!("--name must be 1 to 100 characters");
    }
    let store = open_store(database, StoreOptions::default()).await?;
    let secret = credentials::generate(credentials::API_KEY_PREFIX);
    let key = ApiKey {
        id: uuid::Uuid::now_v7().to_string(),
        name: name.to_owned(),
        role,
    };
    store
        .create_api_key(&key, &credentials::hash(&secret), "cli")
        .await?;
    println!("{secret}");
    Ok(())
}
