//! Legacy era (2025-11-25 and earlier): a server's `elicitation/create` request becomes a round, and the person's
//! answer goes back to the server as its `ElicitResult`; the harness never sees the question.

use std::sync::Arc;

use anteroom_domain::{
    ids::RequestKey,
    round::{ElicitationRequest, OperationKind},
};
use serde_json::{Value, json};

use crate::{
    anteroom::{Ask, DeliveryStep},
    jsonrpc::{Operation, elicitation_request},
    person::{Answered, NoAnswer, Withdrawal, ask_person},
    progress::Progress,
    relay_state::{NO_ANSWER, RelayState},
};

/// One `elicitation/create` from the server, on its way to a person.
pub(crate) struct Question {
    pub id: Value,
    pub params: Value,
    /// The harness's call the server asked during, when there was exactly one.
    pub operation: Option<Operation>,
}

impl Question {
    /// Answers the server: the person's answer, or an error that says why there is none (nothing when the server
    /// withdrew the question).
    pub(crate) async fn answer(
        self,
        relay: Arc<RelayState>,
        withdrawn: Withdrawal,
        progress: Progress,
    ) {
        let id = self.id.clone();
        match self.ask_and_deliver(&relay, withdrawn, &progress).await {
            Ok(()) | Err(NoAnswer::Withdrawn) => {}
            Err(NoAnswer::Because(message)) => {
                progress.stop();
                eprintln!("anteroom wrap: {message}");
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": NO_ANSWER, "message": message}});
                let _ = relay.to_child.send(error.to_string());
            }
        }
    }

    async fn ask_and_deliver(
        self,
        relay: &RelayState,
        mut withdrawn: Withdrawal,
        progress: &Progress,
    ) -> Result<(), NoAnswer> {
        let request = elicitation_request(&self.params, None).map_err(|error| error.to_string())?;
        if let ElicitationRequest::Url { elicitation_id, .. } = &request {
            relay.remember_url_elicitation(elicitation_id);
        }
        let key = RequestKey::parse("answer").map_err(|error| error.to_string())?;
        let ask = Ask {
            // A string id as itself, not as JSON text with quotes.
            logical_operation_id: format!("elicitation-{}", plain_id(&self.id)),
            server: relay.server.clone(),
            operation_kind: self
                .operation
                .as_ref()
                .map_or(OperationKind::Tool, |operation| operation.kind),
            operation_name: self
                .operation
                .map_or_else(|| "unknown".to_owned(), |operation| operation.name),
            requests: [(key.clone(), request.clone())].into(),
            request_state: None,
            round_index: 0,
            round_limit: 1,
            deadline: None,
        };
        let answered = ask_person(
            &relay.anteroom,
            &ask,
            &mut withdrawn,
            "The asking server withdrew the question.",
        )
        .await?;
        let result = Answered::elicit_result(answered.response(&key)?, &request);
        answered.start_delivery(&relay.anteroom).await?;
        let reply = json!({"jsonrpc": "2.0", "id": self.id, "result": result});
        progress.stop();
        if relay.to_child.send(reply.to_string()).is_err() {
            answered
                .fail(
                    &relay.anteroom,
                    "delivery_failed",
                    "The wrapped server had exited.",
                )
                .await;
            return Err(NoAnswer::Withdrawn);
        }
        // The server has what it asked for: the round is delivered and, with nothing left to do, resolved.
        answered
            .step(&relay.anteroom, DeliveryStep::Delivered)
            .await;
        answered.step(&relay.anteroom, DeliveryStep::Resolve).await;
        Ok(())
    }
}

/// A JSON-RPC id as text: a string as itself, a number as its digits.
pub(crate) fn plain_id(id: &Value) -> String {
    id.as_str().map_or_else(|| id.to_string(), str::to_owned)
}
