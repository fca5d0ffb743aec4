//! Checking an answer against a [`FormModel`], field by field, with messages a person understands.

use std::collections::BTreeMap;

use chrono::DateTime;
use serde_json::{Map, Value};

use super::{Choice, FieldKind, FormField, FormModel, TextFormat};

/// Messages per field name (an answer-level problem uses the empty name).
pub type FieldErrors = BTreeMap<String, Vec<String>>;

/// Matches a JSON Schema `pattern`. The server uses a regex engine, the browser its own `RegExp`, so the
/// browser bundle carries no regex engine. `None` means the pattern cannot be compiled here.
pub trait PatternMatcher {
    fn is_match(&self, pattern: &str, value: &str) -> Option<bool>;
}

impl FormModel {
    /// Validates a complete answer. Fields of the JSON fallback are only checked on the server.
    pub fn validate(
        &self,
        content: &Map<String, Value>,
        patterns: &dyn PatternMatcher,
    ) -> Result<(), FieldErrors> {
        let mut errors = FieldErrors::new();
        for field in &self.fields {
            let problems = match content.get(&field.name) {
                None if field.required => vec!["is required".to_owned()],
                None => Vec::new(),
                Some(value) => field.problems(value, patterns),
            };
            if !problems.is_empty() {
                errors.insert(field.name.clone(), problems);
            }
        }
        if self.closed {
            for name in content.keys() {
                if !self.fields.iter().any(|field| &field.name == name) {
                    errors.insert(name.clone(), vec!["is not a field of this form".to_owned()]);
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

impl FormField {
    /// What is wrong with `value` for this field (empty when it is fine).
    pub fn problems(&self, value: &Value, patterns: &dyn PatternMatcher) -> Vec<String> {
        match &self.kind {
            FieldKind::Text {
                format,
                min_length,
                max_length,
                pattern,
            } => {
                let Some(text) = value.as_str() else {
                    return vec!["must be text".to_owned()];
                };
                text_problems(
                    text,
                    *format,
                    *min_length,
                    *max_length,
                    pattern.as_deref(),
                    patterns,
                )
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let Some(number) = value.as_f64().filter(|_| value.is_number()) else {
                    return vec!["must be a number".to_owned()];
                };
                let mut problems = Vec::new();
                if *integer && number.fract() != 0.0 {
                    problems.push("must be a whole number".to_owned());
                }
                if let Some(minimum) = minimum
                    && number < *minimum
                {
                    problems.push(format!("must be at least {minimum}"));
                }
                if let Some(maximum) = maximum
                    && number > *maximum
                {
                    problems.push(format!("must be at most {maximum}"));
                }
                problems
            }
            FieldKind::Boolean => {
                if value.is_boolean() {
                    Vec::new()
                } else {
                    vec!["must be true or false".to_owned()]
                }
            }
            FieldKind::SingleSelect { choices } => match value.as_str() {
                Some(choice) if is_choice(choices, choice) => Vec::new(),
                _ => vec![format!("must be one of: {}", labels(choices))],
            },
            FieldKind::MultiSelect {
                choices,
                min_items,
                max_items,
                unique_items,
            } => {
                let Some(selected) = value.as_array() else {
                    return vec!["must be a list of choices".to_owned()];
                };
                let mut problems = Vec::new();
                if selected
                    .iter()
                    .any(|item| !item.as_str().is_some_and(|c| is_choice(choices, c)))
                {
                    problems.push(format!("may only hold: {}", labels(choices)));
                }
                if *unique_items
                    && selected
                        .iter()
                        .enumerate()
                        .any(|(i, item)| selected[..i].contains(item))
                {
                    problems.push("may hold each choice only once".to_owned());
                }
                let count = selected.len() as u64;
                if let Some(min) = min_items
                    && count < *min
                {
                    problems.push(format!("choose at least {min}"));
                }
                if let Some(max) = max_items
                    && count > *max
                {
                    problems.push(format!("choose at most {max}"));
                }
                problems
            }
            FieldKind::Json { .. } => Vec::new(),
        }
    }
}

fn text_problems(
    text: &str,
    format: Option<TextFormat>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<&str>,
    patterns: &dyn PatternMatcher,
) -> Vec<String> {
    let mut problems = Vec::new();
    // JSON Schema counts characters (code points), not bytes.
    let length = text.chars().count() as u64;
    if let Some(min) = min_length
        && length < min
    {
        problems.push(format!("must be at least {min} characters"));
    }
    if let Some(max) = max_length
        && length > max
    {
        problems.push(format!("must be at most {max} characters"));
    }
    if let Some(pattern) = pattern
        && patterns.is_match(pattern, text) == Some(false)
    {
        problems.push(format!("must match the pattern {pattern}"));
    }
    if let Some(format) = format
        && !format_ok(format, text)
    {
        problems.push(
            match format {
                TextFormat::Email => "must be an email address",
                TextFormat::Uri => "must be a full URI with a scheme, like https://example.com",
                TextFormat::Date => "must be a date (YYYY-MM-DD)",
                TextFormat::DateTime => "must be a date and time with a timezone (RFC 3339)",
            }
            .to_owned(),
        );
    }
    problems
}

fn format_ok(format: TextFormat, text: &str) -> bool {
    match format {
        TextFormat::Email => is_email(text),
        TextFormat::Uri => is_uri(text),
        TextFormat::Date => super::posted::parse_date(text).is_some(),
        TextFormat::DateTime => DateTime::parse_from_rfc3339(text).is_ok(),
    }
}

/// A plain `local@host.name` address (quoted local parts and IP literals are not offered by a form).
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c));
    local_ok && is_hostname(domain)
}

fn is_hostname(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// An absolute URI: a scheme, a colon, and no characters a URI never holds unescaped.
fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let rest_ok = rest
        .chars()
        .all(|c| c.is_ascii() && !c.is_ascii_control() && !" \"<>\\^`{|}".contains(c));
    scheme_ok && rest_ok && percent_escapes_ok(rest)
}

fn percent_escapes_ok(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

fn is_choice(choices: &[Choice], value: &str) -> bool {
    choices.iter().any(|choice| choice.value == value)
}

fn labels(choices: &[Choice]) -> String {
    choices
        .iter()
        .map(|choice| choice.label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
