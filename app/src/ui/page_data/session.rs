//! A session page's data: its open questions as banners, their forms and its history.

use super::{answering::alike_waiting, *};

impl PageData {
    /// `viewer` stops the session's run from its page (`anteroom run` interrupts the agent within a second).
    pub async fn stop_run(&self, viewer: &Viewer, session: &str, csrf: &str) -> Result<(), String> {
        same_sign_in(viewer, csrf)?;
        if !viewer.can_answer() {
            return Err("You have the viewer role: you cannot stop an agent.".to_owned());
        }
        let session = SessionId::parse(session).map_err(|error| error.to_string())?;
        if !self
            .store
            .may_stop_run(&viewer.principal, &session)
            .await
            .map_err(said)?
        {
            return Err(
                "You are not one of this session's responders: you cannot stop its agent."
                    .to_owned(),
            );
        }
        self.store
            .request_stop(&session, &viewer.principal.label())
            .await
            .map_err(said)?;
        (self.on_session_change)(&session);
        Ok(())
    }

    /// A session page, or `None` for an unknown session.
    pub async fn session(
        &self,
        id: &str,
        viewer: Viewer,
        notice: Option<AnswerNotice>,
        older: Option<&str>,
    ) -> StoreResult<Option<SessionPage>> {
        session_page(self.store.as_ref(), id, viewer, notice, older).await
    }
}

/// The session page, or `None` for an unknown session.
async fn session_page(
    store: &dyn Store,
    id: &str,
    viewer: Viewer,
    notice: Option<AnswerNotice>,
    older: Option<&str>,
) -> StoreResult<Option<SessionPage>> {
    let Ok(id) = SessionId::parse(id) else {
        return Ok(None);
    };
    let session = match store.get_session(&id).await {
        Ok(session) => session,
        Err(error) if error.is_not_found() => return Ok(None),
        Err(error) => return Err(error),
    };
    let before = older.and_then(|older| RoundId::parse(older).ok());
    let paged = before.is_some();
    let rounds = store.list_rounds_page(&id, before, HISTORY_PAGE).await?;
    let open = store.open_rounds(&id, OPEN_ROUNDS_SHOWN).await?;
    let team = if open.is_empty() {
        TeamView::default()
    } else {
        store.team_view().await?
    };
    // Identical questions waiting elsewhere, which one answer may answer too: one small read per banner
    // that could offer it.
    let mut alike = Vec::with_capacity(open.len());
    for round in &open {
        let count = alike_waiting(store, round, &viewer, &team).await?.len();
        alike.push(u32::try_from(count).unwrap_or(u32::MAX));
    }
    let active: Vec<ActiveRound> = open
        .iter()
        .zip(alike)
        .map(|(round, alike)| ActiveRound {
            round_id: round.round_id.to_string(),
            attempt: uuid::Uuid::new_v4().simple().to_string(),
            asker: asker(round),
            asked_ms: ms(round.created_at),
            deadline_ms: ms(round.deadline),
            askers_deadline: round.deadline_is_askers(),
            asker_seen: round.asker_seen.map(|seen| AskerSeenView {
                last_poll_ms: ms(seen.last_poll_at),
                interval_ms: seen.interval_ms,
            }),
            responders: team.scope(round),
            alike,
            requests: request_views(round),
            can_stand: QuestionMatch::of(round).is_ok(),
        })
        .collect();
    let older = (rounds.len() == HISTORY_PAGE as usize)
        .then(|| rounds.last().map(|round| round.round_id.to_string()))
        .flatten();
    let history = rounds.iter().map(history_entry).collect();
    let standing = store
        .standing_answers(&session.id)
        .await?
        .into_iter()
        .map(|rule| StandingView {
            id: rule.id,
            action: rule.action.as_str().to_owned(),
            asker: Asker {
                server: (!rule.question.server.is_empty()).then(|| rule.question.server.clone()),
                kind: "tool".to_owned(),
                name: rule.question.tool.clone(),
            },
            message: rule.question.message.clone(),
            created_by: rule.created_by.clone(),
            until_ms: ms(rule.expires_at),
            uses: rule.uses,
            everywhere: rule.session_id.is_none(),
            paused: rule.paused_at.is_some(),
            prefix: rule.prefix,
            limit: rule.use_limit,
        })
        .collect();
    let run = match store.run(&session.id).await? {
        Some(run) => {
            let output = store.run_output(&session.id).await?.unwrap_or_default();
            let run = run.seen_with(session.status);
            Some(RunView {
                state: run.state,
                command: run.command,
                host: run.host,
                started_ms: ms(run.started_at),
                ended_ms: run.ended_at.map(ms),
                exit_code: run.exit_code,
                signal: run.signal,
                stop_requested_by: run.stop_requested_by,
                stopped_by: run.stopped_by,
                output,
            })
        }
        None => None,
    };
    Ok(Some(SessionPage {
        now_ms: ms(store.now()),
        session_id: session.id.as_str().to_owned(),
        title: session.title,
        agent: session.agent,
        status: session.status,
        lost: session.lost_elicitation.map(Into::into),
        active,
        history,
        older,
        paged,
        viewer,
        notice,
        standing,
        run,
    }))
}

/// The requests of a round as the browser renders them.
pub fn request_views(round: &Round) -> Vec<RequestView> {
    // Generous limits: every stored schema already passed the configured ones when it was created.
    let limits = Limits {
        schema_bytes: usize::MAX,
        schema_properties: usize::MAX,
        schema_depth: usize::MAX,
        ..Limits::default()
    };
    round
        .requests
        .iter()
        .map(|(key, request)| RequestView {
            key: key.as_str().to_owned(),
            message: request.message().to_owned(),
            body: match request {
                ElicitationRequest::Form {
                    requested_schema, ..
                } => RequestBody::Form {
                    form: FormModel::from_schema(requested_schema, &limits)
                        .map(FormModel::for_the_browser)
                        .unwrap_or(FormModel {
                            fields: Vec::new(),
                            closed: false,
                        }),
                },
                ElicitationRequest::Url { url, .. } => RequestBody::Url {
                    url: url.clone(),
                    host: crate::domain::consent_url::host(url),
                },
            },
        })
        .collect()
}

impl Outcome {
    /// The one reading of a round's outcome for the pages.
    pub fn of(round: &Round) -> Self {
        let outcome = round.outcome();
        match &outcome {
            RoundOutcome::Waiting => Self::Waiting,
            RoundOutcome::Expired => Self::Expired,
            RoundOutcome::Undelivered { message, .. } => Self::Undelivered {
                actions: outcome.actions(),
                message: (*message).to_owned(),
            },
            RoundOutcome::Revoked { message } => Self::Failed {
                code: FailureCode::Revoked.as_str().to_owned(),
                message: (*message).to_owned(),
            },
            RoundOutcome::NobodyAvailable { message } => Self::Failed {
                code: FailureCode::NobodyAvailable.as_str().to_owned(),
                message: (*message).to_owned(),
            },
            RoundOutcome::Failed { code, message } => Self::Failed {
                code: (*code).to_owned(),
                message: (*message).to_owned(),
            },
            RoundOutcome::Answered(_) => Self::Answered {
                actions: outcome.actions(),
            },
        }
    }
}

fn history_entry(round: &Round) -> HistoryEntry {
    HistoryEntry {
        round_id: round.round_id.to_string(),
        asker: asker(round),
        asked_ms: ms(round.created_at),
        messages: round
            .requests
            .values()
            .map(|request| request.message().to_owned())
            .collect(),
        outcome: Outcome::of(round),
        answered_by: round.responded_by.clone(),
        answered_ms: round.responded_at.map(ms),
        answers: round
            .responses
            .iter()
            .flat_map(|responses| responses.iter())
            .filter_map(|(key, response)| {
                let content = response.content.as_ref()?;
                let form = match round.requests.get(key) {
                    Some(ElicitationRequest::Form {
                        requested_schema, ..
                    }) => FormModel::from_schema(requested_schema, &Limits::default()).ok(),
                    _ => None,
                };
                let fields = match form {
                    Some(form) => form.shown(content),
                    None => content
                        .iter()
                        .map(|(name, value)| (name.clone(), value.to_string()))
                        .collect(),
                };
                Some(ShownAnswer {
                    key: key.as_str().to_owned(),
                    fields,
                    json: serde_json::to_string(content).unwrap_or_default(),
                })
            })
            .collect(),
    }
}
