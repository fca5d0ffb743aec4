//! How a stored answer reads to a person: each field under its form label, with its value as the form showed
//! it (a choice's label, Yes or No, a date and time in UTC), so the history never makes anyone read JSON.

use serde_json::{Map, Value};

use super::{FieldKind, FormField, FormModel, TextFormat, rfc3339_to_local};

impl FormModel {
    /// `content` as (label, value) pairs in the form's order; keys the form does not list follow, as JSON.
    pub fn shown(&self, content: &Map<String, Value>) -> Vec<(String, String)> {
        let mut shown: Vec<(String, String)> = self
            .fields
            .iter()
            .filter_map(|field| {
                let value = content.get(&field.name)?;
                Some((field.label().to_owned(), field.shown(value)))
            })
            .collect();
        shown.extend(
            content
                .iter()
                .filter(|(key, _)| !self.fields.iter().any(|field| &field.name == *key))
                .map(|(key, value)| (key.clone(), value.to_string())),
        );
        shown
    }
}

impl FormField {
    /// One stored value as this field's control showed it; a value of another shape, as JSON.
    fn shown(&self, value: &Value) -> String {
        let choice = |choices: &[super::Choice], value: &Value| {
            let raw = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            choices
                .iter()
                .find(|choice| choice.value == raw)
                .map_or(raw, |choice| choice.label.clone())
        };
        match (&self.kind, value) {
            (FieldKind::Boolean, Value::Bool(yes)) => if *yes { "Yes" } else { "No" }.to_owned(),
            (FieldKind::SingleSelect { choices }, value) => choice(choices, value),
            (FieldKind::MultiSelect { choices, .. }, Value::Array(values)) => values
                .iter()
                .map(|value| choice(choices, value))
                .collect::<Vec<_>>()
                .join(", "),
            (
                FieldKind::Text {
                    format: Some(TextFormat::DateTime),
                    ..
                },
                Value::String(text),
            ) => {
                let local = rfc3339_to_local(text);
                if local.is_empty() {
                    text.clone()
                } else {
                    format!("{} UTC", local.replace('T', " "))
                }
            }
            (_, Value::String(text)) => text.clone(),
            (_, other) => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::limits::Limits;

    use super::*;

    #[test]
    fn an_answer_reads_in_the_forms_own_words() {
        let schema = json!({
            "type": "object",
            "properties": {
                "release": {"type": "string", "title": "Release name"},
                "env": {"type": "string", "oneOf": [{"const": "prod", "title": "Production"}, {"const": "dev", "title": "Development"}]},
                "notify": {"type": "boolean", "title": "Notify the team"},
                "regions": {"type": "array", "items": {"type": "string", "enum": ["eu", "us"]}},
                "when": {"type": "string", "format": "date-time"},
                "replicas": {"type": "integer"}
            }
        });
        let model = FormModel::from_schema(&schema, &Limits::default()).expect("a form");
        let content = json!({
            "release": "v2 <b>",
            "env": "prod",
            "notify": false,
            "regions": ["eu", "us"],
            "when": "2026-12-04T13:05:00Z",
            "replicas": 3,
            "extra": {"a": 1}
        });
        let shown = model.shown(content.as_object().expect("an object"));
        let pairs: Vec<(&str, &str)> = shown
            .iter()
            .map(|(label, value)| (label.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("Release name", "v2 <b>"),
                ("env", "Production"),
                ("Notify the team", "No"),
                ("regions", "eu, us"),
                ("when", "2026-12-04 13:05 UTC"),
                ("replicas", "3"),
                ("extra", "{\"a\":1}"),
            ]
        );
    }
}
