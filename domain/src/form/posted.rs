//! From what an HTML form posts (name/value pairs) to an answer's JSON content, and back to control values,
//! so the browser and the no-JavaScript form post read a form the same way.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, SecondsFormat, Timelike, Utc};
use serde_json::{Map, Number, Value};

use super::{FieldKind, FormField, FormModel, TextFormat, validate::FieldErrors};

// `datetime-local` controls carry no timezone: Anteroom reads and writes them as UTC (and says so). They are
// parsed and written by hand: chrono's format-string machinery would add weight to the browser bundle.

/// Every value posted under `name`, in order.
pub fn posted<'a>(pairs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .collect()
}

/// The first value posted under `name`, or empty when there is none (a single-valued control).
pub fn posted_value(pairs: &[(String, String)], name: &str) -> String {
    posted(pairs, name)
        .first()
        .map(|value| (*value).to_owned())
        .unwrap_or_default()
}

impl FormModel {
    /// Reads the answer from `pairs`, where field `f` is posted as `{prefix}{f}`. Values that cannot be read
    /// as their field's type are reported per field; the rest of validation is [`FormModel::validate`].
    pub fn read_posted(
        &self,
        prefix: &str,
        pairs: &[(String, String)],
    ) -> (Map<String, Value>, FieldErrors) {
        let mut content = Map::new();
        let mut errors = FieldErrors::new();
        for field in &self.fields {
            let values = posted(pairs, &format!("{prefix}{}", field.name));
            match field.read(&values) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                }
                Ok(None) => {}
                Err(problem) => {
                    errors.insert(field.name.clone(), vec![problem]);
                }
            }
        }
        (content, errors)
    }
}

impl FormField {
    /// The field's value from what was posted under its name; `None` when left empty.
    fn read(&self, values: &[&str]) -> Result<Option<Value>, String> {
        let last = values
            .iter()
            .rev()
            .map(|value| value.trim())
            .find(|value| !value.is_empty());
        match &self.kind {
            FieldKind::Text { format, .. } => Ok(last.map(|text| {
                let text = match format {
                    Some(TextFormat::DateTime) => local_to_rfc3339(text),
                    _ => text.to_owned(),
                };
                Value::String(text)
            })),
            FieldKind::Number { integer, .. } => match last {
                None => Ok(None),
                Some(text) => parse_number(text, *integer).map(Some),
            },
            // A checkbox posts only when ticked; a hidden marker makes "unticked" a posted `false`.
            FieldKind::Boolean => Ok(Some(Value::Bool(
                values.iter().any(|value| matches!(*value, "true" | "on")),
            ))),
            FieldKind::SingleSelect { .. } => {
                Ok(last.map(|choice| Value::String(choice.to_owned())))
            }
            FieldKind::MultiSelect { .. } => {
                let chosen: Vec<Value> = values
                    .iter()
                    .filter(|value| !value.is_empty())
                    .map(|value| Value::String((*value).to_owned()))
                    .collect();
                if chosen.is_empty() && !self.required {
                    Ok(None)
                } else {
                    Ok(Some(Value::Array(chosen)))
                }
            }
            FieldKind::Json { .. } => match last {
                None => Ok(None),
                Some(text) => serde_json::from_str(text)
                    .map(Some)
                    .map_err(|_| "must be valid JSON".to_owned()),
            },
        }
    }

    /// What the control shows before anyone edits it: the default, as the control writes it.
    pub fn initial_text(&self) -> String {
        let Some(default) = &self.default else {
            return String::new();
        };
        match (&self.kind, default) {
            (
                FieldKind::Text {
                    format: Some(TextFormat::DateTime),
                    ..
                },
                Value::String(text),
            ) => rfc3339_to_local(text),
            (FieldKind::Json { .. }, value) => {
                serde_json::to_string_pretty(value).unwrap_or_default()
            }
            (_, Value::String(text)) => text.clone(),
            (_, Value::Number(number)) => number.to_string(),
            (_, Value::Bool(flag)) => flag.to_string(),
            (_, other) => other.to_string(),
        }
    }

    /// Whether `choice` is selected at first (single and multiple choice fields).
    pub fn initially_chosen(&self, choice: &str) -> bool {
        match &self.default {
            Some(Value::String(value)) => value == choice,
            Some(Value::Array(values)) => values.iter().any(|value| value == choice),
            _ => false,
        }
    }

    /// Whether a checkbox starts ticked.
    pub fn initially_checked(&self) -> bool {
        self.default == Some(Value::Bool(true))
    }
}

fn parse_number(text: &str, integer: bool) -> Result<Value, String> {
    if integer && let Ok(whole) = text.parse::<i64>() {
        return Ok(Value::from(whole));
    }
    let number: f64 = text.parse().map_err(|_| "must be a number".to_owned())?;
    if integer && number.fract() == 0.0 && number.abs() < 9.0e15 {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "a whole number below 2^53 in magnitude converts exactly"
        )]
        return Ok(Value::from(number as i64));
    }
    Number::from_f64(number)
        .map(Value::Number)
        .ok_or_else(|| "must be a finite number".to_owned())
}

/// `2026-03-01T09:30` (a `datetime-local` value, read as UTC) → `2026-03-01T09:30:00Z`; RFC 3339 is kept.
pub fn local_to_rfc3339(text: &str) -> String {
    if DateTime::parse_from_rfc3339(text).is_ok() {
        return text.to_owned();
    }
    parse_local(text)
        .map(|local| local.and_utc().to_rfc3339_opts(SecondsFormat::AutoSi, true))
        .unwrap_or_else(|| text.to_owned())
}

/// `YYYY-MM-DD`, as a date input sends it.
pub fn parse_date(text: &str) -> Option<NaiveDate> {
    let mut parts = text.splitn(3, '-');
    let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return None;
    }
    NaiveDate::from_ymd_opt(year.parse().ok()?, month.parse().ok()?, day.parse().ok()?)
}

/// `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS`, as a `datetime-local` input sends it.
fn parse_local(text: &str) -> Option<NaiveDateTime> {
    let (date, time) = text.split_once('T')?;
    let mut parts = time.split(':');
    let (hour, minute) = (parts.next()?, parts.next()?);
    let second = parts.next().unwrap_or("00");
    if parts.next().is_some() || [hour, minute, second].iter().any(|part| part.len() != 2) {
        return None;
    }
    parse_date(date)?.and_hms_opt(
        hour.parse().ok()?,
        minute.parse().ok()?,
        second.parse().ok()?,
    )
}

/// RFC 3339 → the UTC `datetime-local` value (`2026-03-01T09:30`); anything else is shown as it is.
pub fn rfc3339_to_local(text: &str) -> String {
    DateTime::parse_from_rfc3339(text)
        .map(|at| {
            let at = at.with_timezone(&Utc);
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}",
                at.year(),
                at.month(),
                at.day(),
                at.hour(),
                at.minute()
            )
        })
        .unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::limits::Limits;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn form() -> FormModel {
        FormModel::from_schema(
            &json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "age": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "agree": {"type": "boolean", "default": true},
                    "env": {"type": "string", "enum": ["dev", "prod"]},
                    "tags": {"type": "array", "items": {"enum": ["x", "y"]}},
                    "at": {"type": "string", "format": "date-time", "default": "2026-03-01T10:30:00+01:00"},
                    "extra": {"type": "object"}
                },
                "required": ["name"]
            }),
            &Limits::default(),
        )
        .expect("schema")
    }

    #[test]
    fn posted_values_become_typed_content() {
        let (content, errors) = form().read_posted(
            "k/",
            &pairs(&[
                ("k/name", " Ada "),
                ("k/age", "42"),
                ("k/ratio", "0.5"),
                ("k/agree", "false"),
                ("k/agree", "true"),
                ("k/env", "prod"),
                ("k/tags", ""),
                ("k/tags", "x"),
                ("k/tags", "y"),
                ("k/at", "2026-03-01T09:30"),
                ("k/extra", "{\"a\": 1}"),
                ("other/name", "ignored"),
            ]),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            Value::Object(content),
            json!({"name": "Ada", "age": 42, "ratio": 0.5, "agree": true, "env": "prod",
                   "tags": ["x", "y"], "at": "2026-03-01T09:30:00Z", "extra": {"a": 1}})
        );
    }

    #[test]
    fn empty_controls_are_absent_and_an_unticked_box_is_false() {
        let (content, errors) = form().read_posted(
            "",
            &pairs(&[("name", ""), ("age", " "), ("agree", "false"), ("tags", "")]),
        );
        assert!(errors.is_empty());
        assert_eq!(Value::Object(content), json!({"agree": false}));
    }

    #[test]
    fn unreadable_values_are_reported_per_field() {
        let (_, errors) = form().read_posted(
            "",
            &pairs(&[("age", "forty"), ("ratio", "1e999"), ("extra", "{oops")]),
        );
        assert_eq!(errors["age"], vec!["must be a number"]);
        assert_eq!(errors["ratio"], vec!["must be a finite number"]);
        assert_eq!(errors["extra"], vec!["must be valid JSON"]);
    }

    #[test]
    fn a_fractional_integer_stays_fractional_for_validation_to_refuse() {
        let (content, _) = form().read_posted("", &pairs(&[("age", "4.5")]));
        assert_eq!(content["age"], json!(4.5));
    }

    #[test]
    fn controls_start_from_the_defaults() {
        let form = form();
        let field = |name: &str| form.fields.iter().find(|f| f.name == name).expect(name);
        assert_eq!(field("at").initial_text(), "2026-03-01T09:30");
        assert!(field("agree").initially_checked());
        assert_eq!(field("name").initial_text(), "");
        assert_eq!(local_to_rfc3339("not a time"), "not a time");
        assert_eq!(
            local_to_rfc3339("2026-03-01T09:30:15"),
            "2026-03-01T09:30:15Z"
        );
        assert_eq!(local_to_rfc3339("2026-02-30T09:30"), "2026-02-30T09:30");
        assert_eq!(
            parse_date("2026-03-01"),
            NaiveDate::from_ymd_opt(2026, 3, 1)
        );
        assert_eq!(parse_date("2026-3-1"), None);
    }
}
