//! Teams: groups and their members, sessions' responder lists, and questions handed to someone.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::{SqlStore, conflict_on_unique, round_not_found};
use crate::{
    Escalated, RoundStore, StoreError, StoreResult, TeamStore,
    dialect::{Dialect, Statement},
    domain::{
        ManagedInputError,
        audit::{ANTEROOM, NewAuditEntry},
        ids::{RoundId, SessionId},
        responders::{
            GROUP_MEMBERS_MAX, GROUPS_MAX, Group, Responder, TeamView, check_name, describe,
            scope_of,
        },
        round::Round,
        round::RoundStatus,
        session::SessionSettings,
        webhook::WebhookEvent,
    },
    records::to_ms,
    sql,
};

/// At most this many open assignments and configured sessions are read for one queue view.
const TEAM_VIEW_MAX: i64 = 10_000;

/// At most this many waiting questions of one session climb per escalation tick (the oldest first).
const ESCALATE_ROUNDS_MAX: u32 = 1_000;

/// A list as stored: JSON text, `NULL` when empty.
fn stored<T: serde::Serialize>(value: &T, empty: bool) -> StoreResult<Option<String>> {
    (!empty)
        .then(|| serde_json::to_string(value))
        .transpose()
        .map_err(|error| StoreError::Corrupt(format!("session settings: {error}")))
}

/// A list read back (one stored by an older or hand-edited row that no longer parses is a corrupt row, not
/// an empty list: an empty list would let everyone answer).
fn read<T: serde::de::DeserializeOwned + Default>(text: Option<String>) -> StoreResult<T> {
    text.map_or_else(
        || Ok(T::default()),
        |text| {
            serde_json::from_str(&text)
                .map_err(|error| StoreError::Corrupt(format!("session settings: {error}")))
        },
    )
}

/// The team columns of `session_settings` as written: responders, server responders, the ladder, the
/// "nobody available" end.
pub(super) type TeamColumns = (Option<String>, Option<String>, Option<String>, Option<i64>);

pub(super) fn team_columns(settings: &SessionSettings) -> StoreResult<TeamColumns> {
    Ok((
        stored(&settings.responders, settings.responders.is_empty())?,
        stored(
            &settings.server_responders,
            settings.server_responders.is_empty(),
        )?,
        stored(&settings.escalation, settings.escalation.is_empty())?,
        settings.nobody_available_after_minutes.map(i64::from),
    ))
}

/// A `session_settings` row as read: its channel, then its team columns.
pub(super) type SettingsRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

pub(super) fn settings_read(
    (slack_channel, responders, servers, escalation, nobody): SettingsRow,
) -> StoreResult<SessionSettings> {
    Ok(SessionSettings {
        slack_channel,
        responders: read(responders)?,
        server_responders: read(servers)?,
        escalation: read(escalation)?,
        nobody_available_after_minutes: nobody.and_then(|minutes| u32::try_from(minutes).ok()),
    })
}

/// Sessions' settings by session, read by [`sql::SELECT_TEAM_SETTINGS`] or [`sql::SELECT_LADDER_SETTINGS`].
type SessionSettingsRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

pub(super) fn assignee(text: &str) -> StoreResult<Responder> {
    Responder::parse(text).map_err(|error| StoreError::Corrupt(format!("assignee: {error}")))
}

impl<D: Dialect> SqlStore<D> {
    /// Takes step `step` of `round`'s ladder if no instance took it yet, queueing its notification and its
    /// record in the same transaction; returns whether this call took it.
    async fn climb(
        &self,
        round: &Round,
        step: usize,
        notify: &[Responder],
        now: DateTime<Utc>,
    ) -> StoreResult<bool> {
        let mut tx = self.begin_write().await?;
        let taken = tx
            .execute(
                Statement::new(sql::INSERT_ESCALATION)
                    .bind(round.round_id.to_string())
                    .bind(i64::try_from(step).unwrap_or(i64::MAX))
                    .bind(to_ms(now)),
            )
            .await?
            == 1;
        if taken {
            let notified = describe(notify);
            let event = WebhookEvent::question_escalated(round, step, &notified);
            self.enqueue(&mut tx, &[event], now).await?;
            let entry = NewAuditEntry::new(
                ANTEROOM,
                "question.escalated",
                round.round_id.to_string(),
                json!({"session_id": round.session_id, "step": step + 1, "notified": notify}),
            );
            self.audit(&mut tx, &[entry], now).await?;
        }
        tx.commit().await?;
        Ok(taken)
    }

    /// How many steps each waiting question has climbed, in one reading.
    async fn steps_reached(&self) -> StoreResult<std::collections::HashMap<RoundId, usize>> {
        Ok(self
            .all::<(String, i64)>(Statement::new(sql::SELECT_OPEN_ESCALATIONS).bind(TEAM_VIEW_MAX))
            .await?
            .into_iter()
            .filter_map(|(round, steps)| {
                Some((RoundId::parse(&round).ok()?, usize::try_from(steps).ok()?))
            })
            .collect())
    }

    /// A session's stored settings, or `None` when nobody set any.
    pub(super) async fn stored_settings(
        &self,
        session: &SessionId,
    ) -> StoreResult<Option<SessionSettings>> {
        self.optional::<SettingsRow>(
            Statement::new(sql::SELECT_SESSION_SETTINGS).bind(session.to_string()),
        )
        .await?
        .map(settings_read)
        .transpose()
    }

    /// Sessions' settings read by `sql` (bounded), by session.
    pub(super) async fn settings_of_sessions(
        &self,
        sql: &'static str,
    ) -> StoreResult<Vec<(SessionId, SessionSettings)>> {
        self.all::<SessionSettingsRow>(Statement::new(sql).bind(TEAM_VIEW_MAX))
            .await?
            .into_iter()
            .filter_map(
                |(session, slack, responders, servers, escalation, nobody)| {
                    let session = SessionId::parse(session).ok()?;
                    Some(
                        settings_read((slack, responders, servers, escalation, nobody))
                            .map(|s| (session, s)),
                    )
                },
            )
            .collect()
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
            .settings_of_sessions(sql::SELECT_TEAM_SETTINGS)
            .await?
            .into_iter()
            .collect();
        let reached = self.steps_reached().await?;
        Ok(TeamView {
            assignments,
            sessions,
            reached,
        })
    }

    async fn escalate(&self) -> StoreResult<Escalated> {
        let mut done = Escalated::default();
        // Read once per tick, not once per waiting question.
        let steps_reached = self.steps_reached().await?;
        for (session, settings) in self
            .settings_of_sessions(sql::SELECT_LADDER_SETTINGS)
            .await?
        {
            for round in self.open_rounds(&session, ESCALATE_ROUNDS_MAX).await? {
                let now = self.clock_now();
                let waited = now - round.created_at;
                let reached = steps_reached.get(&round.round_id).copied().unwrap_or(0);
                for (step, rung) in settings.escalation.iter().enumerate().skip(reached) {
                    if waited < chrono::Duration::minutes(i64::from(rung.after_minutes)) {
                        break;
                    }
                    if self.climb(&round, step, &rung.notify, now).await? {
                        done.climbed.push((round.clone(), step));
                    }
                }
                let Some(after) = settings.nobody_available_after_minutes else {
                    continue;
                };
                if waited < chrono::Duration::minutes(i64::from(after)) {
                    continue;
                }
                let everyone = scope_of(
                    None,
                    &settings,
                    round.server.as_deref(),
                    settings.escalation.len(),
                );
                let asked = if everyone.is_empty() {
                    "everyone who answers".to_owned()
                } else {
                    describe(&everyone)
                };
                let (ended, changed) = self
                    .mutate_round(round.round_id, |round, now| {
                        Ok(round.end_nobody_available(&asked, now))
                    })
                    .await?;
                if changed {
                    done.ended.push(ended);
                }
            }
        }
        Ok(done)
    }

    async fn escalations_reached(&self, round: RoundId) -> StoreResult<usize> {
        let (steps,) = self
            .one::<(i64,)>(Statement::new(sql::COUNT_ROUND_ESCALATIONS).bind(round.to_string()))
            .await?;
        Ok(usize::try_from(steps).unwrap_or(0))
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

    /// One read (the assignee, the session's settings, the ladder's steps climbed): every answer asks it before
    /// its transaction.
    async fn answer_scope(&self, round: &Round) -> StoreResult<Vec<Responder>> {
        type ScopeRow = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            i64,
        );
        let (assigned, settings_of, slack, responders, servers, escalation, nobody, reached) = self
            .one::<ScopeRow>(
                Statement::new(sql::SELECT_ANSWER_SCOPE)
                    .bind(round.round_id.to_string())
                    .bind(round.session_id.to_string()),
            )
            .await?;
        let assigned = assigned.as_deref().map(assignee).transpose()?;
        let settings = match settings_of {
            Some(_) => settings_read((slack, responders, servers, escalation, nobody))?,
            None => SessionSettings::default(),
        };
        Ok(scope_of(
            assigned.as_ref(),
            &settings,
            round.server.as_deref(),
            // Steps climbed count only while the session has a ladder.
            if settings.escalation.is_empty() {
                0
            } else {
                usize::try_from(reached).unwrap_or(0)
            },
        ))
    }

    async fn team_settings(&self, session: &SessionId) -> StoreResult<SessionSettings> {
        Ok(self.stored_settings(session).await?.unwrap_or_default())
    }
}
