//! The queue page's data: the attention queue, read once for every page that shows it.

use super::*;

impl PageData {
    /// The attention queue, with each waiting session's oldest question.
    pub async fn queue(&self) -> StoreResult<QueueView> {
        queue_view(self.store.as_ref()).await
    }
}

/// The most sessions the queue shows at once.
const QUEUE_LIMIT: u32 = 200;

/// The attention queue, with each waiting session's oldest question.
async fn queue_view(store: &dyn Store) -> StoreResult<QueueView> {
    // One statement: who answers each question comes with it.
    let queue = store.attention_queue(QUEUE_LIMIT).await?;
    let items = queue
        .into_iter()
        .map(
            |AttentionItem {
                 entry,
                 oldest_open,
                 responders,
                 run_state,
             }| {
                let question = oldest_open.as_ref().map(|round| QuestionPreview {
                    round_id: round.round_id.to_string(),
                    message: round
                        .requests
                        .values()
                        .next()
                        .map(|request| request.message().to_owned())
                        .unwrap_or_default(),
                    asker: asker(round),
                    asked_ms: ms(round.created_at),
                    deadline_ms: ms(round.deadline),
                    askers_deadline: round.deadline_is_askers(),
                    responders,
                    same_as: QuestionMatch::of(round).ok().map(|question| question.key()),
                });
                QueueItem {
                    session_id: entry.session.id.as_str().to_owned(),
                    title: entry.session.title.clone(),
                    agent: entry.session.agent.clone(),
                    status: entry.session.status,
                    open_rounds: entry.open_rounds,
                    question,
                    lost: entry.session.lost_elicitation.clone().map(Into::into),
                    updated_ms: ms(entry.session.updated_at),
                    run: run_state,
                }
            },
        )
        .collect();
    Ok(QueueView {
        now_ms: ms(store.now()),
        items,
        viewer: None,
    })
}
