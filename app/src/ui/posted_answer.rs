//! Reading a posted answer against a round's forms, the same way in the browser (instant feedback) and on the
//! server (before the store's authoritative check).

use std::collections::BTreeMap;

use crate::domain::{
    form::{FieldErrors, PatternMatcher},
    ids::RequestKey,
    round::{ElicitationResponse, ResponseAction},
};

use super::model::{RequestBody, RequestView, control_name, round_field_errors};

/// The name of the choice a request of a round of several is answered with (`accept`, `decline`, `cancel`).
/// `@` is never part of a request key, and a field's control name always holds a `/`, so neither can clash.
pub fn choice_name(request_key: &str) -> String {
    format!("choice@{request_key}")
}

/// The action each request is answered with: the pressed button's for Decline all / Dismiss all, and for Send
/// (accept) each request's own choice where the round has several (Accept when none was posted).
pub fn request_action(
    pressed: ResponseAction,
    request_key: &str,
    choices: &[(String, String)],
) -> ResponseAction {
    if pressed != ResponseAction::Accept {
        return pressed;
    }
    let name = choice_name(request_key);
    choices
        .iter()
        .rev()
        .find(|(posted, _)| *posted == name)
        .and_then(|(_, value)| ResponseAction::parse(value))
        .unwrap_or(ResponseAction::Accept)
}

/// The form field whose value, when the person declines or dismisses, is the reason they give.
pub const REASON_FIELD: &str = "reason";

/// The response map for the pressed action (and, for a round of several requests, each request's posted
/// choice) from the posted `values`, or the problems per control name. Declining and dismissing carry no
/// content, so nothing is read or checked for a request answered so; a `reason` field's value is their reason.
pub fn read_answer(
    requests: &[RequestView],
    pressed: ResponseAction,
    choices: &[(String, String)],
    values: &[(String, String)],
    patterns: &dyn PatternMatcher,
) -> Result<BTreeMap<RequestKey, ElicitationResponse>, FieldErrors> {
    let mut responses = BTreeMap::new();
    let mut problems = BTreeMap::new();
    for request in requests {
        let action = request_action(pressed, &request.key, choices);
        let content = match (&request.body, action) {
            (RequestBody::Form { form }, ResponseAction::Accept) => {
                let (content, mut errors) =
                    form.read_posted(&control_name(&request.key, ""), values);
                if let Err(invalid) = form.validate(&content, patterns) {
                    for (field, messages) in invalid {
                        errors.entry(field).or_insert(messages);
                    }
                }
                if !errors.is_empty() {
                    problems.insert(request.key.clone(), errors);
                }
                Some(content)
            }
            _ => None,
        };
        // A form's `reason` field (a hook's question has one) says why when the person declines or dismisses.
        let reason = match action {
            ResponseAction::Accept => None,
            ResponseAction::Decline | ResponseAction::Cancel => {
                let reason_control = control_name(&request.key, REASON_FIELD);
                values
                    .iter()
                    .rev()
                    .find(|(name, _)| *name == reason_control)
                    .map(|(_, value)| value.trim().to_owned())
                    .filter(|value| !value.is_empty())
            }
        };
        let key = RequestKey::parse(request.key.clone())
            .map_err(|error| FieldErrors::from([(String::new(), vec![error.to_string()])]))?;
        responses.insert(
            key,
            ElicitationResponse {
                action,
                content,
                reason,
            },
        );
    }
    if problems.is_empty() {
        Ok(responses)
    } else {
        Err(round_field_errors(problems))
    }
}

/// The problems of one control as the person edits it (the same rules as a full check; a request the person
/// chose to decline or dismiss has none).
pub fn control_problems(
    requests: &[RequestView],
    control: &str,
    choices: &[(String, String)],
    values: &[(String, String)],
    patterns: &dyn PatternMatcher,
) -> Vec<String> {
    match read_answer(requests, ResponseAction::Accept, choices, values, patterns) {
        Ok(_) => Vec::new(),
        Err(mut errors) => errors.remove(control).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::{form::FormModel, limits::Limits};

    struct NoPatterns;
    impl PatternMatcher for NoPatterns {
        fn is_match(&self, _: &str, _: &str) -> Option<bool> {
            None
        }
    }

    fn requests() -> Vec<RequestView> {
        let form = FormModel::from_schema(
            &json!({"type": "object", "properties": {"age": {"type": "integer", "minimum": 18}}, "required": ["age"]}),
            &Limits::default(),
        )
        .expect("schema");
        vec![
            RequestView {
                key: "q1".to_owned(),
                message: "How old?".to_owned(),
                body: RequestBody::Form { form },
            },
            RequestView {
                key: "q2".to_owned(),
                message: "Open the page".to_owned(),
                body: RequestBody::Url {
                    url: "https://example.com".to_owned(),
                    host: "example.com".to_owned(),
                },
            },
        ]
    }

    fn values(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn accept_reads_and_validates_every_form_and_consents_to_urls() {
        let answer = read_answer(
            &requests(),
            ResponseAction::Accept,
            &[],
            &values(&[("q1/age", "30")]),
            &NoPatterns,
        )
        .expect("valid");
        assert_eq!(answer.len(), 2);
        let q1 = &answer[&RequestKey::parse("q1").expect("key")];
        assert_eq!(
            q1.content.as_ref().map(|c| c["age"].clone()),
            Some(json!(30))
        );
        let q2 = &answer[&RequestKey::parse("q2").expect("key")];
        assert_eq!(
            (q2.action, q2.content.is_none()),
            (ResponseAction::Accept, true)
        );
    }

    #[test]
    fn problems_are_named_by_control() {
        let errors = read_answer(
            &requests(),
            ResponseAction::Accept,
            &[],
            &values(&[("q1/age", "12")]),
            &NoPatterns,
        )
        .expect_err("too young");
        assert_eq!(errors["q1/age"], vec!["must be at least 18"]);
        assert_eq!(
            control_problems(&requests(), "q1/age", &[], &values(&[]), &NoPatterns),
            vec!["is required"]
        );
    }

    #[test]
    fn decline_and_dismiss_ignore_the_form() {
        for action in [ResponseAction::Decline, ResponseAction::Cancel] {
            let answer = read_answer(
                &requests(),
                action,
                &values(&[(&choice_name("q1"), "accept")]),
                &values(&[("q1/age", "x")]),
                &NoPatterns,
            )
            .expect("no content is checked");
            assert!(
                answer
                    .values()
                    .all(|r| r.action == action && r.content.is_none())
            );
        }
    }

    #[test]
    fn each_request_of_a_round_takes_its_own_choice() {
        let choices = values(&[
            (&choice_name("q1"), "decline"),
            (&choice_name("q2"), "accept"),
        ]);
        let answer = read_answer(
            &requests(),
            ResponseAction::Accept,
            &choices,
            &values(&[("q1/age", "not a number")]),
            &NoPatterns,
        )
        .expect("a declined form is not checked");
        let action = |key: &str| answer[&RequestKey::parse(key).expect("key")].action;
        assert_eq!(action("q1"), ResponseAction::Decline);
        assert_eq!(action("q2"), ResponseAction::Accept);
        assert!(
            control_problems(&requests(), "q1/age", &choices, &[], &NoPatterns).is_empty(),
            "no problems shown for a request being declined"
        );
        let dismissed = read_answer(
            &requests(),
            ResponseAction::Cancel,
            &choices,
            &[],
            &NoPatterns,
        )
        .expect("dismiss all");
        assert!(
            dismissed
                .values()
                .all(|r| r.action == ResponseAction::Cancel)
        );
        assert_eq!(
            request_action(
                ResponseAction::Accept,
                "q1",
                &values(&[(&choice_name("q1"), "bogus")])
            ),
            ResponseAction::Accept,
            "an unknown choice reads as the default"
        );
    }
}
