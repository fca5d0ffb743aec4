//! `anteroom apikey create`: a new API key for a role, printed once (only its hash is stored).

use anteroom_domain::access::{ApiKey, Role};
use anteroom_server::{config::DatabaseArgs, credentials};
use anteroom_store::StoreOptions;
use anyhow::bail;

use super::open_store;

pub async fn create(name: &str, role: &str, database: &DatabaseArgs) -> anyhow::Result<()> {
    let Some(role) = Role::parse(role) else {
        bail!("--role must be admin, responder or viewer");
    };
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
        .create_api_key(&key, &credentials::hash(&secret))
        .await?;
    println!("{secret}");
    Ok(())
}
