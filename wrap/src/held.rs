//! Calls the wrapper holds: a harness's `tools/call`, `prompts/get` or `resources/read` whose result says the
//! server needs input first — a 2026-07-28 `input_required` result of elicitations, or a `-32042` URL consent
//! error. The person answers in Anteroom, the wrapper retries the call itself under an id of its own, and the
//! harness gets the final result under its own id. It never sees the interim reply.

use std::{sync::Arc, time::Duration};

use anteroom_domain::{
    ids::RequestKey,
    round::{ElicitationRequest, ResponseAction},
};
use serde_json::{Map, Value, json};

use crate::{
    anteroom::{Ask, DeliveryStep},
    jsonrpc::{NeedsInput, Operation, elicitation_request, needs_input},
    legacy::plain_id,
    person::{Answered, NoAnswer, Withdrawal, ask_person},
    progress::Progress,
    relay_state::{NO_ANSWER, RelayState},
};

/// How many times one call may come back needing input before the wrapper stops retrying: the round limit the
/// 2026-07-28 rounds carry.
pub const ROUND_LIMIT: u32 = 10;

/// How long, after the person consents to a URL, the wrapper waits for the server to say the visit is complete
/// (`notifications/elicitation/complete`) before it retries the call anyway.
pub const URL_COMPLETION_WAIT: Duration = Duration::from_secs(600);

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

/// Where a held call ends: the response for the harness, and the round to resolve once it has it.
struct Finished {
    response: Value,
    answered: Option<Answered>,
}

impl HeldCall {
    /// Works the call to its end and tells the harness: the final result under its own id, or an error that says
    /// why there is none (nothing when the harness cancelled it).
    pub(crate) async fn finish(
        self,
        relay: Arc<RelayState>,
        needs: NeedsInput,
        cancelled: Withdrawal,
    ) {
        let harness_id = self.harness_id.clone();
        let outcome = self.work(&relay, needs, cancelled).await;
        relay.release(&harness_id);
        match outcome {
            Ok(Finished {
                mut response,
                answered,
            }) => {
                response["id"] = harness_id;
                let _ = relay.to_harness.send(response.to_string());
                // The harness has its result first; the round's last step follows.
                if let Some(answered) = answered {
                    answered.step(&relay.anteroom, DeliveryStep::Resolve).await;
                }
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
        relay: &RelayState,
        mut needs: NeedsInput,
        mut cancelled: Withdrawal,
    ) -> Result<Finished, NoAnswer> {
        let logical_operation_id = format!(
            "call-{}-{}",
            plain_id(&self.harness_id),
            relay.next_number()
        );
        for round_index in 0..ROUND_LIMIT {
            let retry = self
                .ask(
                    relay,
                    &needs,
                    &logical_operation_id,
                    round_index,
                    &mut cancelled,
                )
                .await?;
            let (response, answered) = self.retry(relay, retry, &mut cancelled).await?;
            match needs_input(&response) {
                Some(next) => {
                    // The call goes on with another round: this one's answer was used.
                    if let Some(answered) = answered {
                        answered.step(&relay.anteroom, DeliveryStep::Resolve).await;
                    }
                    needs = next;
                }
                None => return Ok(Finished { response, answered }),
            }
        }
        Err(NoAnswer::Because(format!(
            "the server still needed input after {ROUND_LIMIT} rounds of answers; the wrapper stopped retrying"
        )))
    }

    /// Progress notes for the harness while the call waits for a person (or a URL visit), continuing the
    /// call's own count and stopping when the call does.
    fn progress(&self, relay: &RelayState) -> Progress {
        let progress = Progress::default();
        if let Some(token) = &self.operation.progress_token {
            progress.keep_alive(
                token.clone(),
                relay.to_harness.clone(),
                relay.progress_every,
                &self.operation.progress,
                Some(Arc::clone(&self.operation.open)),
            );
        }
        progress
    }

    /// Asks the person what the server needs; the retry to send.
    async fn ask(
        &self,
        relay: &RelayState,
        needs: &NeedsInput,
        logical_operation_id: &str,
        round_index: u32,
        cancelled: &mut Withdrawal,
    ) -> Result<Retry, NoAnswer> {
        let (keyed, request_state) = match needs {
            NeedsInput::InputRequired {
                requests,
                request_state,
            } if requests.is_empty() => {
                // Only state: the server asks to be called again as it is (it shed load, say).
                return Ok(Retry {
                    params: with_input(&self.operation.params, None, request_state.as_deref()),
                    answered: None,
                });
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
        let ask = self.ask_for(
            relay,
            &keyed,
            request_state.clone(),
            logical_operation_id,
            round_index,
        );
        // Known before the person answers: a completion notice may come early (the visit is the server's).
        for request in &keyed {
            if let ElicitationRequest::Url { elicitation_id, .. } = &request.request {
                relay.remember_url_elicitation(elicitation_id);
            }
        }
        let progress = self.progress(relay);
        let answered = ask_person(
            &relay.anteroom,
            &ask,
            cancelled,
            "The harness cancelled the call that asked.",
        )
        .await?;
        let Responses {
            by_server_key: responses,
            consented,
            refused,
        } = Responses::read(&keyed, &answered)?;
        let params = match needs {
            NeedsInput::InputRequired { .. } => with_input(
                &self.operation.params,
                Some(responses),
                request_state.as_deref(),
            ),
            NeedsInput::UrlRequired { error, .. } => {
                if let Some(action) = refused {
                    // The harness is told the call cannot go on, and why; that is this round's delivery.
                    answered.start_delivery(&relay.anteroom).await?;
                    progress.stop();
                    answered
                        .step(&relay.anteroom, DeliveryStep::Delivered)
                        .await;
                    answered.step(&relay.anteroom, DeliveryStep::Resolve).await;
                    return Err(url_refused(error, action));
                }
                // Consent is not the visit: the call is retried once the server says the visit is complete.
                answered
                    .holding(
                        &relay.anteroom,
                        wait_for_completion(relay, &consented, cancelled),
                    )
                    .await?;
                self.operation.params.clone()
            }
        };
        progress.stop();
        Ok(Retry {
            params,
            answered: Some(answered),
        })
    }

    /// The round this call's questions become.
    fn ask_for(
        &self,
        relay: &RelayState,
        keyed: &[Keyed],
        request_state: Option<String>,
        logical_operation_id: &str,
        round_index: u32,
    ) -> Ask {
        Ask {
            logical_operation_id: logical_operation_id.to_owned(),
            server: relay.server.clone(),
            operation_kind: self.operation.kind,
            operation_name: self.operation.name.clone(),
            requests: keyed
                .iter()
                .map(|request| (request.key.clone(), request.request.clone()))
                .collect(),
            request_state,
            round_index,
            round_limit: ROUND_LIMIT,
            deadline: None,
        }
    }

    /// Sends the retry under an id of the wrapper's own and waits for the server's response, holding the round's
    /// lease meanwhile; the round is delivered once the retry is on its way.
    async fn retry(
        &self,
        relay: &RelayState,
        retry: Retry,
        cancelled: &mut Withdrawal,
    ) -> Result<(Value, Option<Answered>), NoAnswer> {
        let anteroom = &relay.anteroom;
        if let Some(answered) = &retry.answered {
            answered.start_delivery(anteroom).await?;
        }
        let exited = "the wrapped server exited before it answered the retried call";
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
            return Err(NoAnswer::Because(exited.to_owned()));
        };
        if let Some(answered) = &retry.answered {
            answered.step(anteroom, DeliveryStep::Delivered).await;
        }
        let waiting = async {
            tokio::select! {
                response = response => response.map_err(|_| NoAnswer::Because(exited.to_owned())),
                () = cancelled.wait() => {
                    // The harness gave up: the server hears it under the id it knows.
                    relay.forget_request(&own_id);
                    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": own_id, "reason": "The harness cancelled the call."}});
                    let _ = relay.to_child.send(cancel.to_string());
                    Err(NoAnswer::Withdrawn)
                }
            }
        };
        let response = match &retry.answered {
            Some(answered) => answered.holding(anteroom, waiting).await,
            None => waiting.await,
        };
        match response {
            Ok(response) => Ok((response, retry.answered)),
            Err(no_answer) => {
                // The answer reached the server; the call's end did not reach the harness.
                if let Some(answered) = &retry.answered {
                    answered.step(anteroom, DeliveryStep::Resolve).await;
                }
                Err(no_answer)
            }
        }
    }
}

/// Waits until the server says each consented URL visit is complete, the harness cancels, or
/// [`URL_COMPLETION_WAIT`] passes (then the call is retried anyway: the server has the last word).
async fn wait_for_completion(
    relay: &RelayState,
    consented: &[String],
    cancelled: &mut Withdrawal,
) -> Result<(), NoAnswer> {
    let mut completions = relay.url_completions();
    let until = tokio::time::Instant::now() + URL_COMPLETION_WAIT;
    loop {
        if consented.iter().all(|id| relay.url_is_complete(id)) {
            return Ok(());
        }
        tokio::select! {
            changed = completions.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            () = tokio::time::sleep_until(until) => return Ok(()),
            () = cancelled.wait() => return Err(NoAnswer::Withdrawn),
        }
    }
}

/// The person's answers to one held call, read for the server.
struct Responses {
    /// Each request's result, under the key the server gave it.
    by_server_key: Map<String, Value>,
    /// The URL elicitations the person consented to.
    consented: Vec<String>,
    /// How a URL request was refused, if one was.
    refused: Option<ResponseAction>,
}

impl Responses {
    fn read(keyed: &[Keyed], answered: &Answered) -> Result<Self, NoAnswer> {
        let mut read = Self {
            by_server_key: Map::new(),
            consented: Vec::new(),
            refused: None,
        };
        for request in keyed {
            let response = answered.response(&request.key)?;
            if let ElicitationRequest::Url { elicitation_id, .. } = &request.request {
                match response.action {
                    ResponseAction::Accept => read.consented.push(elicitation_id.clone()),
                    action => read.refused = Some(action),
                }
            }
            read.by_server_key.insert(
                request.server_key.clone(),
                Answered::elicit_result(response, &request.request),
            );
        }
        Ok(read)
    }
}

/// Why a call that needed a URL visit cannot go on: the person declined or dismissed it.
fn url_refused(error: &Value, action: ResponseAction) -> NoAnswer {
    let said = error.get("message").and_then(Value::as_str).unwrap_or("");
    let verb = if action == ResponseAction::Decline {
        "declined"
    } else {
        "dismissed"
    };
    NoAnswer::Because(format!(
        "the person {verb} the URL the server needs before this call ({said})"
    ))
}

/// The server's requests as Anteroom's, each under the server's key when it is a valid request key and under
/// an `input-N` no other request uses when it is not (the server's key is kept for the reply).
fn keyed(requests: &[(String, Value)]) -> Result<Vec<Keyed>, NoAnswer> {
    let mut taken: Vec<RequestKey> = Vec::new();
    let mut keyed = Vec::with_capacity(requests.len());
    for (index, (server_key, params)) in requests.iter().enumerate() {
        // A 2026-07-28 URL question carries no id of its own: its place names it.
        let fallback_id = format!("anteroom-{}", index + 1);
        let request = elicitation_request(params, Some(&fallback_id)).map_err(|error| {
            NoAnswer::Because(format!(
                "the server's question {server_key:?} cannot be asked: {error}"
            ))
        })?;
        let own = RequestKey::parse(server_key.clone())
            .ok()
            .filter(|key| !taken.contains(key));
        let key = match own {
            Some(key) => key,
            None => (index + 1..)
                .filter_map(|number| RequestKey::parse(format!("input-{number}")).ok())
                .find(|key| {
                    !taken.contains(key) && !requests.iter().any(|(k, _)| k == key.as_str())
                })
                .ok_or_else(|| NoAnswer::Because("no request key is free".to_owned()))?,
        };
        taken.push(key.clone());
        keyed.push(Keyed {
            server_key: server_key.clone(),
            key,
            request,
        });
    }
    Ok(keyed)
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
        let clashing = vec![
            ("input-2".to_owned(), json!({"message": "A"})),
            ("bad key/".to_owned(), json!({"message": "B"})),
        ];
        let asked = keyed(&clashing).ok().expect("valid questions");
        assert_ne!(asked[0].key, asked[1].key, "two requests, two keys");
    }
}
