//! A question as a Slack message (Block Kit): its message as plain text (never mrkdwn, so a producer's
//! `<!channel>`, links and markup show as typed), who asks, the deadline in the reader's time zone, and
//! buttons for the answers one tap can give — or, once it ends, how it ended.

use anteroom_domain::{
    expiry::wire_time,
    limits::Limits,
    reach::{QuickAnswer, cut, quick_answers},
    round::{FailureCode, ResponseAction, Round, RoundStatus},
};
use serde_json::{Value, json};

/// Characters of a question's message shown (a section's text holds at most 3,000).
const MESSAGE_CHARS: usize = 2_900;
/// Characters of a button's label (Slack's limit is 75).
const LABEL_CHARS: usize = 75;
/// Characters of each of server, tool and session in the "who asks" line.
const NAME_CHARS: usize = 100;

/// What `chat.postMessage` and `chat.update` send: the notification text and the blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackMessage {
    pub text: String,
    pub blocks: Value,
}

/// The action id of the button that gives quick answer `index` to `round`.
pub fn answer_action_id(round: &Round, index: usize) -> String {
    format!("answer:{}:{index}", round.round_id)
}

fn plain(text: &str) -> Value {
    json!({"type": "plain_text", "text": text, "emoji": false})
}

/// The question's own words: every request's message, cut to fit.
fn question_text(round: &Round) -> String {
    let messages: Vec<&str> = round
        .requests
        .values()
        .map(|request| request.message())
        .collect();
    let text = match messages.as_slice() {
        [] => round.summary.clone(),
        [only] => (*only).to_owned(),
        several => several.join("\n\n"),
    };
    let text = if text.trim().is_empty() {
        "(no message)".to_owned()
    } else {
        text
    };
    cut(&text, MESSAGE_CHARS)
}

fn who_asks(round: &Round) -> String {
    format!(
        "{} · {} · session {}",
        cut(round.server.as_deref().unwrap_or("an agent"), NAME_CHARS),
        cut(&round.operation_name, NAME_CHARS),
        cut(round.session_id.as_str(), NAME_CHARS),
    )
}

/// How a question ended, in words (`None` while it is open).
pub fn ending(round: &Round, limits: &Limits) -> Option<String> {
    if round.status == RoundStatus::Pending {
        return None;
    }
    let by = round.responded_by.as_deref().unwrap_or("someone");
    let answered = round.responses.as_ref().map(|responses| {
        let quick = quick_answers(round, limits).unwrap_or_default();
        let words: Vec<String> = responses
            .values()
            .map(|response| {
                quick
                    .iter()
                    .find(|answer| {
                        answer.response.action == response.action
                            && answer.response.content == response.content
                    })
                    .map(|answer| answer.label.clone())
                    .unwrap_or_else(|| match response.action {
                        ResponseAction::Accept => "answered".to_owned(),
                        ResponseAction::Decline => "declined".to_owned(),
                        ResponseAction::Cancel => "dismissed".to_owned(),
                    })
            })
            .collect();
        format!("Answered by {by}: {}", cut(&words.join(", "), 200))
    });
    let failure = round.failure.as_ref().map(|failure| match failure.code {
        FailureCode::Expired => {
            "Expired: nobody answered before the deadline. The agent was told it expired (not that anyone declined)."
                .to_owned()
        }
        _ => cut(&failure.message, 300),
    });
    Some(match (answered, failure) {
        (Some(answered), Some(failure)) => format!("{answered}. But: {failure}"),
        (Some(answered), None) => answered,
        (None, Some(failure)) => failure,
        (None, None) => "This question is closed.".to_owned(),
    })
}

/// The message for `round` as it stands: open with its buttons, or ended with how.
pub fn question_message(round: &Round, public_url: &str, limits: &Limits) -> SlackMessage {
    let open_url = format!("{public_url}/sessions/{}", round.session_id);
    let mut blocks = vec![
        json!({"type": "section", "text": plain(&question_text(round))}),
        json!({"type": "context", "elements": [plain(&who_asks(round))]}),
    ];
    let text = match ending(round, limits) {
        None => {
            let deadline = round.deadline.timestamp();
            blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn",
                "text": format!("Answer by <!date^{deadline}^{{date_short_pretty}} at {{time}}|{}>", wire_time(round.deadline))}]}));
            let mut buttons: Vec<Value> = quick_answers(round, limits)
                .unwrap_or_default()
                .iter()
                .enumerate()
                .map(|(index, answer)| button(round, index, answer))
                .collect();
            buttons.push(
                json!({"type": "button", "action_id": format!("open:{}", round.round_id),
                "text": plain("Open in Anteroom"), "url": open_url}),
            );
            blocks.push(json!({"type": "actions", "block_id": format!("question:{}", round.round_id), "elements": buttons}));
            format!("An agent asks: {}", cut(&question_text(round), 200))
        }
        Some(ending) => {
            blocks.push(json!({"type": "context", "elements": [plain(&ending)]}));
            blocks.push(json!({"type": "actions", "elements": [{"type": "button",
                "action_id": format!("open:{}", round.round_id), "text": plain("Open in Anteroom"), "url": open_url}]}));
            ending
        }
    };
    SlackMessage {
        text: cut(&text, 300),
        blocks: Value::Array(blocks),
    }
}

fn button(round: &Round, index: usize, answer: &QuickAnswer) -> Value {
    let mut button = json!({"type": "button", "action_id": answer_action_id(round, index),
        "value": index.to_string(), "text": plain(&cut(&answer.label, LABEL_CHARS))});
    match (index, answer.response.action) {
        (_, ResponseAction::Decline) => button["style"] = json!("danger"),
        (0, _) => button["style"] = json!("primary"),
        _ => {}
    }
    button
}

#[cfg(test)]
mod tests {
    use anteroom_domain::{
        expiry::Deadlines,
        ids::{RoundId, SessionId},
        round::{AskedThrough, ElicitationRequest, NewRound, OperationKind},
    };
    use serde_json::json;

    use super::*;

    fn asking(message: &str, schema: Value) -> Round {
        let asked = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("time");
        let new = NewRound {
            session_id: SessionId::parse("s1").expect("id"),
            request_id: None,
            logical_operation_id: "op".to_owned(),
            server: Some("shop".to_owned()),
            operation_kind: OperationKind::Tool,
            operation_name: "deploy".to_owned(),
            requests: [(
                anteroom_domain::ids::RequestKey::parse("q").expect("key"),
                ElicitationRequest::Form {
                    message: message.to_owned(),
                    requested_schema: schema,
                    meta: None,
                },
            )]
            .into_iter()
            .collect(),
            request_state: None,
            round_index: 0,
            round_limit: 1,
            deadline: None,
            fingerprint: None,
            asked_through: AskedThrough::SessionToken,
        };
        let ends_at = asked + chrono::Duration::seconds(60);
        Round::open(
            new,
            RoundId(uuid::Uuid::nil()),
            asked,
            Deadlines {
                ends_at,
                asker: None,
            },
        )
    }

    #[test]
    fn producer_text_is_plain_and_cut() {
        let round = asking(
            &format!(
                "<!channel> *deploy* <https://evil.example|here> {}",
                "x".repeat(10_000)
            ),
            json!({"type": "object"}),
        );
        let message = question_message(&round, "https://anteroom.example", &Limits::default());
        let section = &message.blocks[0]["text"];
        assert_eq!(
            section["type"], "plain_text",
            "never mrkdwn: no mentions, no links"
        );
        let text = section["text"].as_str().expect("text");
        assert!(text.starts_with("<!channel> *deploy*"));
        assert_eq!(text.chars().count(), MESSAGE_CHARS);
        assert!(message.text.chars().count() <= 300);
        let serialized = message.blocks.to_string();
        assert!(
            !serialized.contains("\"mrkdwn\",\"text\":\"<!channel"),
            "{serialized}"
        );
    }

    #[test]
    fn a_yes_no_question_gets_buttons_and_a_text_one_only_the_link() {
        let yes_no = asking(
            "Deploy?",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        );
        let message = question_message(&yes_no, "https://a.example", &Limits::default());
        let actions = message
            .blocks
            .as_array()
            .and_then(|blocks| blocks.last())
            .expect("actions");
        let ids: Vec<&str> = actions["elements"]
            .as_array()
            .expect("buttons")
            .iter()
            .filter_map(|button| button["action_id"].as_str())
            .collect();
        assert_eq!(ids.len(), 4, "Yes, No, Decline and Open: {ids:?}");
        assert_eq!(ids[0], format!("answer:{}:0", yes_no.round_id));
        let text = asking(
            "Why?",
            json!({"type": "object", "properties": {"why": {"type": "string"}}}),
        );
        let message = question_message(&text, "https://a.example", &Limits::default());
        let actions = message
            .blocks
            .as_array()
            .and_then(|blocks| blocks.last())
            .expect("actions");
        assert_eq!(actions["elements"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            actions["elements"][0]["url"],
            format!("https://a.example/sessions/{}", text.session_id)
        );
    }
}
