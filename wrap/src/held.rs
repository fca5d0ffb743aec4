//! Calls the wrapper holds: a harness's `tools/call`, `prompts/get` or `resources/read` whose result says the
//! server needs input first — a 2026-07-28 `input_required` result of elicitations, or a `-32042` URL consent
//! error. The person answers in Anteroom, the wrapper retries the call itself under an id of its own, and the
//! harness gets the final result under its own id. It never sees the interim reply.

use std::sync::{Arc, atomic::AtomicU64};

use anteroom_domain::{
    ids::RequestKey,
    round::{ElicitationRequest, ResponseAction},
};
use serde_json::{Map, Value, json};

use crate::{
    anteroom::{Ask, DeliveryStep},
    legacy::plain_id,
    person::{Answered, NoAnswer, Withdrawal, ask_person},
    progress::Progress,
    relay::{NO_ANSWER, Relay},
    wire::{NeedsInput, Operation, elicitation_request, needs_input},
};

/// How many times one call may come back needing input before the wrapper stops retrying: the round limit the
/// 2026-07-28 rounds carry.
pub const ROUND_LIMIT: u32 = 10;

/// A harness call whose server needs input before it can finish.
pub(crate) struct HeldCall {
    pub harness_id: Value,
    pub operation: Operation,
}

/// One request of a round, by the server's key and Anteroom's.
struct Keyed {
    server_key: String,
    key: RequestKey,
    request: ElicitationRequest,
}

/// What the retry of a call sends, and the round whose answer it carries.
struct Retry {
    params: Value,
    answered: Option<Answered>,
}

impl HeldCall {
    /// Works the call to its end and tells the harness: the final result under its own id, or an error that says
    /// why there is none (nothing when the harness cancelled it).
    pub(crate) async fn finish(self, relay: Arc<Relay>, needs: NeedsInput, cancelled: Withdrawal) {
        let harness_id = self.harness_id.clone();
        let outcome = self.work(&relay, needs, cancelled).await;
        relay.release(&harness_id);
        match outcome {
            Ok(mut response) => {
                response["id"] = harness_id;
                let _ = relay.to_harness.send(response.to_string());
            }
            Err(NoAnswer::Withdrawn) => {}
            Err(NoAnswer::Because(message)) => {
                eprintln!("anteroom wrap: {message}");
                let error = json!({"jsonrpc": "2.0", "id": harness_id,
                    "error": {"code": NO_ANSWER, "message": message}});
                let _ = relay.to_harness.send(error.to_string());
            }
        }
    }

    async fn work(
        &self,
        relay: &Relay,
        mut needs: NeedsInput,
        mut cancelled: Withdrawal,
    ) -> Result<Value, NoAnswer> {
        let logical_operation_id = format!(
            "call-{}-{}",
            plain_id(&self.harness_id),
            relay.next_number()
        );
        // One count for the call's progress notes, across its rounds: the harness hears it rise.
        let counter = Arc::new(AtomicU64::new(0));
        for round_index in 0..ROUND_LIMIT {
            let retry = self
                .ask(
                    relay,
                    &needs,
                    &logical_operation_id,
                    round_index,
                    &counter,
                    &mut cancelled,
                )
                .await?;
            let Some(retry) = retry else {
                // The person declined a URL the call needs: the harness gets the server's own refusal.
                return Ok(needs_original(&needs));
            };
            let response = self.retry(relay, retry, &mut cancelled).await?;
            match needs_input(&response) {
                Some(next) => needs = next,
                None => return Ok(response),
            }
        }
        Err(NoAnswer::Because(format!(
            "the server still needed input after {ROUND_LIMIT} rounds of answers; the wrapper stopped retrying"
        )))
    }

    /// Asks the person what the server needs; the retry to send, or `None` when the call cannot go on.
    async fn ask(
        &self,
        relay: &Relay,
        needs: &NeedsInput,
        logical_operation_id: &str,
        round_index: u32,
        counter: &Arc<AtomicU64>,
        cancelled: &mut Withdrawal,
    ) -> Result<Option<Retry>, NoAnswer> {
        let (keyed, request_state) = match needs {
            NeedsInput::InputRequired {
                requests,
                request_state,
            } if requests.is_empty() => {
                // Only state: the server asks to be called again as it is (it shed load, say).
                return Ok(Some(Retry {
                    params: with_input(&self.operation.params, None, request_state.as_deref()),
                    answered: None,
                }));
            }
            NeedsInput::InputRequired {
                requests,
                request_state,
            } => (keyed(requests)?, request_state.clone()),
            NeedsInput::UrlRequired { elicitations, .. } => {
                let numbered: Vec<(String, Value)> = elicitations
                    .iter()
                    .enumerate()
                    .map(|(index, params)| (format!("consent-{}", index + 1), params.clone()))
                    .collect();
                (keyed(&numbered)?, None)
            }
        };
        for request in &keyed {
            if let ElicitationRequest::Url { elicitation_id, .. } = &request.request {
                relay.remember_url_elicitation(elicitation_id);
            }
        }
        let ask = Ask {
            logical_operation_id: logical_operation_id.to_owned(),
            server: relay.server.clone(),
            operation_kind: self.operation.kind,
            operation_name: self.operation.name.clone(),
            requests: keyed
                .iter()
                .map(|request| (request.key.clone(), request.request.clone()))
                .collect(),
            request_state: request_state.clone(),
            round_index,
            round_limit: ROUND_LIMIT,
            deadline: None,
        };
        let progress = Progress::counting(counter);
        if let Some(token) = &self.operation.progress_token {
            progress.keep_alive(
                token.clone(),
                relay.to_harness.clone(),
                relay.progress_every,
            );
        }
        let answered = ask_person(
            &relay.anteroom,
            &ask,
            cancelled,
            "The harness cancelled the call that asked.",
        )
        .await?;
        progress.stop();
        let mut responses = Map::new();
        let mut all_accepted = true;
        for request in &keyed {
            let response = answered.response(&request.key)?;
            all_accepted &= response.action == ResponseAction::Accept;
            responses.insert(
                request.server_key.clone(),
                Answered::elicit_result(response, &request.request),
            );
        }
        let params = match needs {
            NeedsInput::InputRequired { .. } => with_input(
                &self.operation.params,
                Some(responses),
                request_state.as_deref(),
            ),
            NeedsInput::UrlRequired { .. } if all_accepted => self.operation.params.clone(),
            NeedsInput::UrlRequired { .. } => {
                // Declined: the harness hears the server's refusal; that is this round's delivery.
                answered.start_delivery(&relay.anteroom).await?;
                for step in [DeliveryStep::Delivered, DeliveryStep::Resolve] {
                    answered.step(&relay.anteroom, step).await;
                }
                return Ok(None);
            }
        };
        Ok(Some(Retry {
            params,
            answered: Some(answered),
        }))
    }

    /// Sends the retry under an id of the wrapper's own and waits for the server's response, holding the round's
    /// lease meanwhile; the round is delivered once the retry is sent and resolved once it is answered.
    async fn retry(
        &self,
        relay: &Relay,
        retry: Retry,
        cancelled: &mut Withdrawal,
    ) -> Result<Value, NoAnswer> {
        let anteroom = &relay.anteroom;
        if let Some(answered) = &retry.answered {
            answered.start_delivery(anteroom).await?;
        }
        let Some((own_id, response)) = relay.request_child(&self.operation.method, retry.params)
        else {
            if let Some(answered) = &retry.answered {
                answered
                    .fail(
                        anteroom,
                        "delivery_failed",
                        "The wrapped server had exited.",
                    )
                    .await;
            }
            return Err(NoAnswer::Because(
                "the wrapped server exited before the call could be retried".to_owned(),
            ));
        };
        if let Some(answered) = &retry.answered {
            answered.step(anteroom, DeliveryStep::Delivered).await;
        }
        let waiting = async {
            tokio::select! {
                response = response => response.ok(),
                () = cancelled.wait() => {
                    // The harness gave up: the server hears it under the id it knows.
                    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": own_id, "reason": "The harness cancelled the call."}});
                    let _ = relay.to_child.send(cancel.to_string());
                    None
                }
            }
        };
        let response = match &retry.answered {
            Some(answered) => answered.holding(anteroom, waiting).await,
            None => waiting.await,
        };
        if let Some(answered) = &retry.answered {
            answered.step(anteroom, DeliveryStep::Resolve).await;
        }
        response.ok_or(NoAnswer::Withdrawn)
    }
}

/// The server's requests as Anteroom's, each under the server's key when it is a valid request key and under
/// `input-N` when it is not (the server's key is kept for the reply).
fn keyed(requests: &[(String, Value)]) -> Result<Vec<Keyed>, NoAnswer> {
    requests
        .iter()
        .enumerate()
        .map(|(index, (server_key, params))| {
            // A 2026-07-28 URL question carries no id of its own: the server's key names it.
            let fallback_id = format!("anteroom-{server_key}");
            let request = elicitation_request(params, Some(&fallback_id)).map_err(|error| {
                NoAnswer::Because(format!(
                    "the server's question {server_key:?} cannot be asked: {error}"
                ))
            })?;
            let key = RequestKey::parse(server_key.clone())
                .or_else(|_| RequestKey::parse(format!("input-{}", index + 1)))
                .map_err(|error| NoAnswer::Because(error.to_string()))?;
            Ok(Keyed {
                server_key: server_key.clone(),
                key,
                request,
            })
        })
        .collect()
}

/// The call's params with the person's answers and the server's state, exactly as the server gave it.
fn with_input(params: &Value, responses: Option<Map<String, Value>>, state: Option<&str>) -> Value {
    let mut params = params.as_object().cloned().unwrap_or_default();
    params.remove("inputResponses");
    params.remove("requestState");
    if let Some(responses) = responses {
        params.insert("inputResponses".to_owned(), Value::Object(responses));
    }
    if let Some(state) = state {
        params.insert("requestState".to_owned(), Value::String(state.to_owned()));
    }
    Value::Object(params)
}

/// The server's own refusal of a call whose URL the person declined.
fn needs_original(needs: &NeedsInput) -> Value {
    match needs {
        NeedsInput::UrlRequired { error, .. } => json!({"jsonrpc": "2.0", "error": error}),
        NeedsInput::InputRequired { .. } => json!({"jsonrpc": "2.0", "error": {
            "code": NO_ANSWER, "message": "the call cannot go on without the input the server asked for"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_carries_the_answers_and_the_exact_state() {
        let params = json!({"name": "deploy", "arguments": {"x": 1}, "requestState": "stale",
            "_meta": {"progressToken": 5}});
        let responses = Map::from_iter([("env".to_owned(), json!({"action": "decline"}))]);
        let retried = with_input(&params, Some(responses), Some("s-1"));
        assert_eq!(retried["requestState"], "s-1");
        assert_eq!(retried["inputResponses"]["env"]["action"], "decline");
        assert_eq!(retried["arguments"], json!({"x": 1}));
        assert_eq!(retried["_meta"]["progressToken"], 5);
        let without = with_input(&params, None, None);
        assert!(without.get("requestState").is_none(), "no state: none sent");
    }

    #[test]
    fn server_keys_that_are_not_request_keys_are_renumbered() {
        let requests = vec![
            ("env".to_owned(), json!({"message": "Which?"})),
            ("not a key/".to_owned(), json!({"message": "Sure?"})),
        ];
        let asked = keyed(&requests).ok().expect("valid questions");
        assert_eq!(asked[0].key.as_str(), "env");
        assert_eq!(asked[1].key.as_str(), "input-2");
        assert_eq!(asked[1].server_key, "not a key/");
        assert!(keyed(&[("x".to_owned(), json!({"mode": "sms", "message": "?"}))]).is_err());
    }
}
