//! Teams: groups and their members, sessions' responder lists, and questions handed to someone.

use std::collections::BTreeMap;

use serde_json::json;

use super::{SqlStore, conflict_on_unique, round_not_found};
use crate::{
    StoreError, StoreResult, TeamStore,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        audit::NewAuditEntry,
        ids::{RoundId, SessionId},
        responders::{GROUP_MEMBERS_MAX, GROUPS_MAX, Group, Responder, TeamView, check_name},
        round::RoundStatus,
        session::SessionSettings,
    },
    records::to_ms,
    sql,
};

/// At most this many open assignments and configured sessions are read for one queue view.
const TEAM_VIEW_MAX: i64 = 10_000;

/// A session's lists as stored: JSON text, `NULL` for an empty list.
pub(super) fn lists_stored(
    settings: &SessionSettings,
) -> StoreResult<(Option<String>, Option<String>)> {
    let json = |value: serde_json::Result<String>| {
        value.map_err(|error| StoreError::Corrupt(format!("responder lists: {error}")))
    };
    let responders = (!settings.responders.is_empty())
        .then(|| json(serde_json::to_string(&settings.responders)))
        .transpose()?;
    let servers = (!settings.server_responders.is_empty())
        .then(|| json(serde_json::to_string(&settings.server_responders)))
        .transpose()?;
    Ok((responders, servers))
}

/// A session's list and its servers' lists.
type Lists = (Vec<Responder>, BTreeMap<String, Vec<Responder>>);

/// A session's lists read back (a list stored by an older or hand-edited row that no longer parses is a
/// corrupt row, not an empty list: an empty list would let everyone answer).
fn lists_read(responders: Option<String>, servers: Option<String>) -> StoreResult<Lists> {
    let corrupt =
        |error: serde_json::Error| StoreError::Corrupt(format!("responder lists: {error}"));
    let responders = match responders {
        Some(text) => serde_json::from_str(&text).map_err(corrupt)?,
        None => Vec::new(),
    };
    let servers = match servers {
        Some(text) => serde_json::from_str(&text).map_err(corrupt)?,
        None => BTreeMap::new(),
    };
    Ok((responders, servers))
}

fn assignee(text: &str) -> StoreResult<Responder> {
    Responder::parse(text).map_err(|error| StoreError::Corrupt(format!("assignee: {error}")))
}

impl<D: Dialect> SqlStore<D> {
    /// A session's stored settings, or `None` when nobody set any.
    pub(super) async fn stored_settings(
        &self,
        session: &SessionId,
    ) -> StoreResult<Option<SessionSettings>> {
        let row = self
            .optional::<(Option<String>, Option<String>, Option<String>)>(
                Statement::new(sql::SELECT_SESSION_SETTINGS).bind(session.to_string()),
            )
            .await?;
        row.map(|(slack_channel, responders, servers)| {
            let (responders, server_responders) = lists_read(responders, servers)?;
            Ok(SessionSettings {
                slack_channel,
                responders,
                server_responders,
            })
        })
        .transpose()
    }

    async fn group(&self, name: &str) -> StoreResult<Group> {
        self.list_groups()
            .await?
            .into_iter()
            .find(|group| group.name == name)
            .ok_or_else(|| {
                ManagedInputError::not_found(format!("No group is called {name}.")).into()
            })
    }
}

#[async_trait::async_trait]
impl<D: Dialect> TeamStore for SqlStore<D> {
    async fn team_view(&self) -> StoreResult<TeamView> {
        let assignments = self
            .all::<(String, String)>(
                Statement::new(sql::SELECT_OPEN_ASSIGNMENTS).bind(TEAM_VIEW_MAX),
            )
            .await?
            .into_iter()
            .filter_map(|(round, text)| Some((RoundId::parse(&round).ok()?, text)))
            .map(|(round, text)| Ok((round, assignee(&text)?)))
            .collect::<StoreResult<_>>()?;
        let sessions = self
            .all::<(String, Option<String>, Option<String>)>(
                Statement::new(sql::SELECT_TEAM_SETTINGS).bind(TEAM_VIEW_MAX),
            )
            .await?
            .into_iter()
            .filter_map(|(session, responders, servers)| {
                Some((SessionId::parse(session).ok()?, responders, servers))
            })
            .map(|(session, responders, servers)| {
                let (responders, server_responders) = lists_read(responders, servers)?;
                Ok((
                    session,
                    SessionSettings {
                        slack_channel: None,
                        responders,
                        server_responders,
                    },
                ))
            })
            .collect::<StoreResult<_>>()?;
        Ok(TeamView {
            assignments,
            sessions,
        })
    }

    async fn create_group(&self, name: &str, actor: &str) -> StoreResult<Group> {
        check_name(name)?;
        let (count,) = self
            .one::<(i64,)>(Statement::new(sql::COUNT_GROUPS))
            .await?;
        if count >= i64::try_from(GROUPS_MAX).unwrap_or(i64::MAX) {
            return Err(ManagedInputError::validation(format!(
                "There are already {GROUPS_MAX} groups; remove one first."
            ))
            .into());
        }
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let inserted = tx
            .execute(
                Statement::new(sql::INSERT_GROUP)
                    .bind(name)
                    .bind(to_ms(now)),
            )
            .await;
        conflict_on_unique(inserted, || format!("A group called {name} exists."))?;
        self.audit(
            &mut tx,
            &[NewAuditEntry::new(actor, "group.created", name, json!({}))],
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(Group {
            name: name.to_owned(),
            members: Vec::new(),
        })
    }

    async fn delete_group(&self, name: &str, actor: &str) -> StoreResult<bool> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let deleted = tx
            .execute(Statement::new(sql::DELETE_GROUP).bind(name))
            .await?
            == 1;
        if deleted {
            let entry = NewAuditEntry::new(actor, "group.deleted", name, json!({}));
            self.audit(&mut tx, &[entry], now).await?;
        }
        tx.commit().await?;
        Ok(deleted)
    }

    async fn add_group_member(
        &self,
        group: &str,
        username: &str,
        actor: &str,
    ) -> StoreResult<Group> {
        if self
            .optional::<(String,)>(Statement::new(sql::SELECT_GROUP).bind(group))
            .await?
            .is_none()
        {
            return Err(
                ManagedInputError::not_found(format!("No group is called {group}.")).into(),
            );
        }
        let (members,) = self
            .one::<(i64,)>(Statement::new(sql::COUNT_GROUP_MEMBERS).bind(group))
            .await?;
        if members >= i64::try_from(GROUP_MEMBERS_MAX).unwrap_or(i64::MAX) {
            return Err(ManagedInputError::validation(format!(
                "Group {group} has {GROUP_MEMBERS_MAX} members already."
            ))
            .into());
        }
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let added = tx
            .execute(
                Statement::new(sql::INSERT_GROUP_MEMBER)
                    .bind(group)
                    .bind(username),
            )
            .await?;
        if added == 1 {
            let entry = NewAuditEntry::new(
                actor,
                "group.member_added",
                group,
                json!({"member": username}),
            );
            self.audit(&mut tx, &[entry], now).await?;
        }
        tx.commit().await?;
        let found = self.group(group).await?;
        if added == 0 && !found.members.iter().any(|member| member == username) {
            return Err(
                ManagedInputError::not_found(format!("No person is called {username}.")).into(),
            );
        }
        Ok(found)
    }

    async fn remove_group_member(
        &self,
        group: &str,
        username: &str,
        actor: &str,
    ) -> StoreResult<bool> {
        let now = self.clock_now();
        let mut tx = self.begin_write().await?;
        let removed = tx
            .execute(
                Statement::new(sql::DELETE_GROUP_MEMBER)
                    .bind(group)
                    .bind(username),
            )
            .await?
            == 1;
        if removed {
            let entry = NewAuditEntry::new(
                actor,
                "group.member_removed",
                group,
                json!({"member": username}),
            );
            self.audit(&mut tx, &[entry], now).await?;
        }
        tx.commit().await?;
        Ok(removed)
    }

    async fn list_groups(&self) -> StoreResult<Vec<Group>> {
        let rows = self
            .all::<(String, Option<String>)>(Statement::new(sql::SELECT_GROUPS))
            .await?;
        let mut groups: Vec<Group> = Vec::new();
        for (name, member) in rows {
            if groups.last().is_none_or(|group| group.name != name) {
                groups.push(Group {
                    name,
                    members: Vec::new(),
                });
            }
            if let (Some(group), Some(member)) = (groups.last_mut(), member) {
                group.members.push(member);
            }
        }
        Ok(groups)
    }

    async fn user_groups(&self, user_id: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .all::<(String,)>(Statement::new(sql::SELECT_USER_GROUPS).bind(user_id))
            .await?
            .into_iter()
            .map(|(name,)| name)
            .collect())
    }

    async fn assign_round(
        &self,
        round: RoundId,
        assignee: Option<&Responder>,
        assigned_by: &str,
    ) -> StoreResult<()> {
        let found = self
            .read_round(round)
            .await?
            .ok_or_else(|| round_not_found(round))?;
        if found.status != RoundStatus::Pending {
            return Err(ManagedInputError::conflict(format!(
                "Round {round} is {}; only a question still waiting can be handed to someone.",
                found.status.as_str()
            ))
            .into());
        }
        let now = self.clock_now();
        let statement = match assignee {
            Some(assignee) => Statement::new(sql::UPSERT_ROUND_ASSIGNMENT)
                .bind(round.to_string())
                .bind(assignee.to_string())
                .bind(assigned_by)
                .bind(to_ms(now)),
            None => Statement::new(sql::DELETE_ROUND_ASSIGNMENT).bind(round.to_string()),
        };
        let mut tx = self.begin_write().await?;
        tx.execute(statement).await?;
        let entry = NewAuditEntry::new(
            assigned_by,
            "question.reassigned",
            round.to_string(),
            json!({"session_id": found.session_id, "to": assignee.map(ToString::to_string)}),
        );
        self.audit(&mut tx, &[entry], now).await?;
        tx.commit().await
    }

    async fn round_assignee(&self, round: RoundId) -> StoreResult<Option<Responder>> {
        self.optional::<(String,)>(
            Statement::new(sql::SELECT_ROUND_ASSIGNEE).bind(round.to_string()),
        )
        .await?
        .map(|(text,)| assignee(&text))
        .transpose()
    }

    async fn team_settings(&self, session: &SessionId) -> StoreResult<SessionSettings> {
        Ok(self.stored_settings(session).await?.unwrap_or_default())
    }
}
