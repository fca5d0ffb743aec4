//! Provider sign-in: the person an identity provider vouched for, found, linked or made, and given the role
//! and groups the provider's groups map to, in one transaction.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::{SqlStore, WriteTx};
use crate::{
    StoreError, StoreResult,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        access::{Role, User},
        audit::NewAuditEntry,
        provider_people::ProviderPerson,
        responders::{GROUP_MEMBERS_MAX, GROUPS_MAX},
    },
    records::to_ms,
    sql,
};

/// How many numbered usernames (`rita-2`, `rita-3`, …) are tried before one with a random part.
const NUMBERED_USERNAMES_TRIED: u32 = 20;

impl<D: Dialect> SqlStore<D> {
    /// The person `person` is here, made when new; returns them as stored before this sign-in's grant.
    async fn provider_user(
        &self,
        tx: &mut WriteTx<D>,
        person: &ProviderPerson,
        now: DateTime<Utc>,
        audit: &mut Vec<NewAuditEntry>,
    ) -> StoreResult<User> {
        let linked = tx
            .optional::<(String,)>(
                Statement::new(sql::SELECT_PROVIDER_IDENTITY)
                    .bind(&person.issuer)
                    .bind(&person.subject),
            )
            .await?;
        let verified_email = person.email.as_deref().filter(|_| person.email_verified);
        let user_id = match linked {
            Some((user_id,)) => {
                tx.execute(
                    Statement::new(sql::TOUCH_PROVIDER_IDENTITY)
                        .bind(&person.issuer)
                        .bind(&person.subject)
                        .bind(to_ms(now)),
                )
                .await?;
                user_id
            }
            None => {
                let local = match verified_email {
                    Some(email) => tx
                        .optional::<(String,)>(
                            Statement::new(sql::SELECT_LINKABLE_USER_BY_EMAIL).bind(email),
                        )
                        .await?
                        .map(|(id,)| id),
                    None => None,
                };
                let user_id = match local {
                    Some(id) => {
                        audit.push(NewAuditEntry::new(
                            &person.issuer,
                            "person.linked_to_provider",
                            id.clone(),
                            json!({"subject": person.subject, "email": verified_email}),
                        ));
                        id
                    }
                    None => self.make_provider_user(tx, person, now, audit).await?,
                };
                tx.execute(
                    Statement::new(sql::INSERT_PROVIDER_IDENTITY)
                        .bind(&person.issuer)
                        .bind(&person.subject)
                        .bind(&user_id)
                        .bind(to_ms(now)),
                )
                .await?;
                user_id
            }
        };
        let (id, username, role): (String, String, String) = tx
            .one(Statement::new(sql::SELECT_USER_BY_ID).bind(&user_id))
            .await?;
        Ok(User {
            id,
            username,
            role: Role::parse(&role).unwrap_or(Role::Viewer),
        })
    }

    /// A new person with a free username (the claim's, then numbered, then with a random part) and their
    /// e-mail when the provider verified it and nobody here has it.
    async fn make_provider_user(
        &self,
        tx: &mut WriteTx<D>,
        person: &ProviderPerson,
        now: DateTime<Utc>,
        audit: &mut Vec<NewAuditEntry>,
    ) -> StoreResult<String> {
        let mut username = None;
        for n in 1..=NUMBERED_USERNAMES_TRIED {
            let candidate = if n == 1 {
                person.username.clone()
            } else {
                format!("{}-{n}", person.username)
            };
            let (taken,): (i64,) = tx
                .one(Statement::new(sql::USERNAME_TAKEN).bind(&candidate))
                .await?;
            if taken == 0 {
                username = Some(candidate);
                break;
            }
        }
        let id = uuid::Uuid::now_v7().to_string();
        let username = username.unwrap_or_else(|| {
            format!(
                "{}-{}",
                person.username,
                id.chars().skip(28).collect::<String>()
            )
        });
        let email = match person.email.as_deref().filter(|_| person.email_verified) {
            Some(email) => {
                let (taken,): (i64,) = tx.one(Statement::new(sql::EMAIL_TAKEN).bind(email)).await?;
                (taken == 0).then(|| email.to_owned())
            }
            None => None,
        };
        tx.execute(
            Statement::new(sql::INSERT_PROVIDER_USER)
                .bind(&id)
                .bind(&username)
                .bind(person.granted.role.as_str())
                .bind(to_ms(now))
                .bind(email),
        )
        .await?;
        audit.push(NewAuditEntry::new(
            &person.issuer,
            "person.created_by_provider",
            username,
            json!({"subject": person.subject}),
        ));
        Ok(id)
    }

    /// Refuses a grant that would make a group past the team limit ([`GROUPS_MAX`]) or join one that is full
    /// ([`GROUP_MEMBERS_MAX`]): the provider's groups are held to the same limits as an admin's.
    async fn hold_to_team_limits(
        &self,
        tx: &mut WriteTx<D>,
        before: &[String],
        granted: &[String],
    ) -> StoreResult<()> {
        let joined: Vec<&String> = granted
            .iter()
            .filter(|group| !before.contains(group))
            .collect();
        let mut new_groups = 0_usize;
        for group in &joined {
            let (members,): (i64,) = tx
                .one(Statement::new(sql::COUNT_GROUP_MEMBERS).bind(group.as_str()))
                .await?;
            if members >= i64::try_from(GROUP_MEMBERS_MAX).unwrap_or(i64::MAX) {
                return Err(ManagedInputError::conflict(format!(
                    "The group {group} has {GROUP_MEMBERS_MAX} members already, Anteroom's limit; ask an admin to make room"
                ))
                .into());
            }
            if tx
                .optional::<(String,)>(Statement::new(sql::SELECT_GROUP).bind(group.as_str()))
                .await?
                .is_none()
            {
                new_groups += 1;
            }
        }
        if new_groups > 0 {
            let (groups,): (i64,) = tx.one(Statement::new(sql::COUNT_GROUPS)).await?;
            let after = usize::try_from(groups)
                .unwrap_or(usize::MAX)
                .saturating_add(new_groups);
            if after > GROUPS_MAX {
                return Err(ManagedInputError::conflict(format!(
                    "Signing you in would make more than {GROUPS_MAX} groups, Anteroom's limit; ask an admin to remove one"
                ))
                .into());
            }
        }
        Ok(())
    }

    /// Gives `user` exactly the role and groups of this sign-in's grant; records what changed.
    async fn apply_grant(
        &self,
        tx: &mut WriteTx<D>,
        user: &User,
        person: &ProviderPerson,
        now: DateTime<Utc>,
        audit: &mut Vec<NewAuditEntry>,
    ) -> StoreResult<()> {
        let granted = &person.granted;
        // Sorted here, not by the database: PostgreSQL's collation orders names unlike Rust, and an order that
        // differed would rewrite (and record) the same groups at every sign-in.
        let mut before: Vec<String> = tx
            .all::<(String,)>(Statement::new(sql::SELECT_USER_GROUPS).bind(&user.id))
            .await?
            .into_iter()
            .map(|(group,)| group)
            .collect();
        before.sort();
        if user.role != granted.role {
            tx.execute(
                Statement::new(sql::SET_USER_ROLE)
                    .bind(&user.id)
                    .bind(granted.role.as_str()),
            )
            .await?;
        }
        if before != granted.groups {
            self.hold_to_team_limits(tx, &before, &granted.groups)
                .await?;
            tx.execute(Statement::new(sql::DELETE_USER_GROUPS).bind(&user.id))
                .await?;
            for group in &granted.groups {
                let made = tx
                    .execute(
                        Statement::new(sql::INSERT_GROUP_IF_NEW)
                            .bind(group)
                            .bind(to_ms(now)),
                    )
                    .await?;
                if made == 1 {
                    audit.push(NewAuditEntry::new(
                        &person.issuer,
                        "group.created",
                        group.clone(),
                        json!({}),
                    ));
                }
                tx.execute(
                    Statement::new(sql::INSERT_USER_GROUP)
                        .bind(group)
                        .bind(&user.id),
                )
                .await?;
            }
        }
        if user.role != granted.role || before != granted.groups {
            audit.push(NewAuditEntry::new(
                &person.issuer,
                "person.access_from_provider",
                user.username.clone(),
                json!({
                    "role": {"from": user.role.as_str(), "to": granted.role.as_str()},
                    "groups": {"from": before, "to": granted.groups},
                }),
            ));
        }
        Ok(())
    }

    /// A first sign-in racing another of the same person (or of a namesake) can meet the other's new row: the
    /// transaction is rolled back and tried once more, when the other's rows are there to be found.
    pub(super) async fn provider_sign_in(&self, person: &ProviderPerson) -> StoreResult<User> {
        match self.provider_sign_in_once(person).await {
            Err(StoreError::Database(sqlx::Error::Database(error)))
                if error.is_unique_violation() =>
            {
                self.provider_sign_in_once(person).await
            }
            done => done,
        }
    }

    async fn provider_sign_in_once(&self, person: &ProviderPerson) -> StoreResult<User> {
        let now = self.clock_now();
        let mut audit = Vec::new();
        let mut tx = self.begin_write().await?;
        let user = self.provider_user(&mut tx, person, now, &mut audit).await?;
        self.apply_grant(&mut tx, &user, person, now, &mut audit)
            .await?;
        if !audit.is_empty() {
            self.audit(&mut tx, &audit, now).await?;
        }
        tx.commit().await?;
        Ok(User {
            role: person.granted.role,
            ..user
        })
    }
}

impl<D: Dialect> SqlStore<D> {
    pub(super) async fn provider_withdrawal(
        &self,
        issuer: &str,
        subject: &str,
    ) -> StoreResult<bool> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let Some((user_id,)) = tx
            .optional::<(String,)>(
                Statement::new(sql::SELECT_PROVIDER_IDENTITY)
                    .bind(issuer)
                    .bind(subject),
            )
            .await?
        else {
            tx.rollback().await?;
            return Ok(false);
        };
        let (_, username, role): (String, String, String) = tx
            .one(Statement::new(sql::SELECT_USER_BY_ID).bind(&user_id))
            .await?;
        let groups: Vec<String> = tx
            .all::<(String,)>(Statement::new(sql::SELECT_USER_GROUPS).bind(&user_id))
            .await?
            .into_iter()
            .map(|(group,)| group)
            .collect();
        tx.execute(Statement::new(sql::WITHDRAW_ROLE).bind(&user_id))
            .await?;
        tx.execute(Statement::new(sql::DELETE_USER_GROUPS).bind(&user_id))
            .await?;
        tx.execute(Statement::new(sql::DELETE_EVERY_BROWSER_SIGN_IN).bind(&user_id))
            .await?;
        tx.execute(Statement::new(sql::FORGET_PROVIDER_SIGN_IN).bind(&user_id))
            .await?;
        let entry = NewAuditEntry::new(
            issuer,
            "person.access_from_provider",
            username,
            json!({
                "role": {"from": role, "to": Role::Viewer.as_str()},
                "groups": {"from": groups, "to": []},
                "signed_out": true,
            }),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await?;
        Ok(true)
    }
}
