//! People's passkeys: added within a person's limit, found by credential id at sign-in, their counters moved on
//! by one sign-in at a time, removed by their person (or all at once by an admin).

use serde_json::json;

use super::SqlStore;
use crate::{
    NewPasskey, PASSKEYS_PER_PERSON_MAX, Passkey, PasskeyAdded, PasskeyForSignIn, PasskeyStore,
    StoreResult,
    dialect::{Dialect, Statement},
    domain::audit::NewAuditEntry,
    records::{from_ms, to_ms},
    sql,
};

#[async_trait::async_trait]
impl<D: Dialect> PasskeyStore for SqlStore<D> {
    async fn passkey_user_handle(
        &self,
        user_id: &str,
        candidate: &str,
    ) -> StoreResult<Option<String>> {
        let row = self
            .optional::<(Option<String>,)>(
                Statement::new(sql::ENSURE_PASSKEY_USER_HANDLE)
                    .bind(user_id)
                    .bind(candidate),
            )
            .await?;
        Ok(row.and_then(|(handle,)| handle))
    }

    async fn passkeys(&self, user_id: &str) -> StoreResult<Vec<Passkey>> {
        let rows = self
            .all::<(String, String, i64, Option<i64>)>(
                Statement::new(sql::SELECT_PASSKEYS).bind(user_id),
            )
            .await?;
        rows.into_iter()
            .map(|(id, name, added_at, used_at)| {
                Ok(Passkey {
                    id,
                    name,
                    added_at: from_ms(added_at)?,
                    used_at: used_at.map(from_ms).transpose()?,
                })
            })
            .collect()
    }

    async fn add_passkey(&self, passkey: &NewPasskey<'_>) -> StoreResult<PasskeyAdded> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let Some((username,)) = tx
            .optional::<(String,)>(
                Statement::new(Self::locked(sql::SELECT_PASSKEY_PERSON)).bind(passkey.user_id),
            )
            .await?
        else {
            tx.rollback().await?;
            return Ok(PasskeyAdded::NoSuchPerson);
        };
        let inserted = tx
            .execute(
                Statement::new(sql::INSERT_PASSKEY)
                    .bind(passkey.id)
                    .bind(passkey.user_id)
                    .bind(passkey.name)
                    .bind(passkey.public_key)
                    .bind(passkey.counters)
                    .bind(to_ms(now))
                    .bind(passkey.user_id)
                    .bind(PASSKEYS_PER_PERSON_MAX),
            )
            .await?;
        if inserted != 1 {
            // Which of the two refusals it was, for the person's page.
            let (taken,): (i64,) = tx
                .one(Statement::new(sql::PASSKEY_TAKEN).bind(passkey.id))
                .await?;
            tx.rollback().await?;
            return Ok(if taken > 0 {
                PasskeyAdded::Taken
            } else {
                PasskeyAdded::TooMany
            });
        }
        let entry = NewAuditEntry::new(
            username.as_str(),
            "passkey.added",
            username.as_str(),
            json!({ "name": passkey.name, "credential_id": passkey.id }),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        Ok(PasskeyAdded::Added)
    }

    async fn passkey_for_sign_in(&self, id: &str) -> StoreResult<Option<PasskeyForSignIn>> {
        let row = self
            .optional::<(String, Option<String>, String, String)>(
                Statement::new(sql::SELECT_PASSKEY_FOR_SIGN_IN).bind(id),
            )
            .await?;
        Ok(
            row.and_then(|(user_id, user_handle, public_key, counters)| {
                Some(PasskeyForSignIn {
                    user_id,
                    user_handle: user_handle?,
                    public_key,
                    counters,
                })
            }),
        )
    }

    async fn passkey_used(&self, id: &str, checked: &str, counters: &str) -> StoreResult<bool> {
        let changed = self
            .execute(
                Statement::new(sql::UPDATE_PASSKEY_USE)
                    .bind(id)
                    .bind(checked)
                    .bind(counters)
                    .bind(to_ms(self.clock_now())),
            )
            .await?;
        Ok(changed == 1)
    }

    async fn remove_passkey(&self, user_id: &str, id: &str) -> StoreResult<bool> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        // The person first, as an add takes them: two writers on one person's passkeys wait in one order.
        let Some((username,)) = tx
            .optional::<(String,)>(
                Statement::new(Self::locked(sql::SELECT_PASSKEY_PERSON)).bind(user_id),
            )
            .await?
        else {
            tx.rollback().await?;
            return Ok(false);
        };
        let Some((name,)) = tx
            .optional::<(String,)>(Statement::new(sql::DELETE_PASSKEY).bind(user_id).bind(id))
            .await?
        else {
            tx.rollback().await?;
            return Ok(false);
        };
        let entry = NewAuditEntry::new(
            username.as_str(),
            "passkey.removed",
            username.as_str(),
            json!({ "name": name, "credential_id": id }),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn remove_every_passkey(&self, user_id: &str) -> StoreResult<u64> {
        self.execute(Statement::new(sql::DELETE_EVERY_PASSKEY).bind(user_id))
            .await
    }
}
