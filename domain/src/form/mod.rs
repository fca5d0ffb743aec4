//! From an MCP `requestedSchema` to a form (docs/protocol.md#form-questions-and-the-schema-subset): typed fields with defaults, required flags and
//! constraints, shared by the server and the browser so both validate an answer the same way.

pub mod backtracking;
pub mod examples;
mod posted;
mod shown;
mod validate;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use posted::{local_to_rfc3339, posted, posted_value, rfc3339_to_local};
pub use validate::{FieldErrors, PatternMatcher};

use super::{ManagedInputError, limits::Limits};

/// A form: every field visible at once, in the schema's property order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormModel {
    pub fields: Vec<FormField>,
    /// `additionalProperties: false`: an answer may hold no other keys.
    pub closed: bool,
}

/// One property of the schema as a control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormField {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    pub kind: FieldKind,
}

impl FormField {
    /// What a person reads next to the control.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// The `format`s that change a text control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TextFormat {
    Email,
    Uri,
    Date,
    DateTime,
}

impl TextFormat {
    fn parse(format: &str) -> Option<Self> {
        match format {
            "email" => Some(Self::Email),
            "uri" => Some(Self::Uri),
            "date" => Some(Self::Date),
            "date-time" => Some(Self::DateTime),
            _ => None,
        }
    }

    /// The HTML input type for this format.
    pub fn input_type(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Uri => "url",
            Self::Date => "date",
            Self::DateTime => "datetime-local",
        }
    }
}

/// One choice of a select, radio group or checkbox group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

/// The control a field renders as, with the constraints it is validated against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Externally tagged: an internally tagged enum would pull serde's buffering deserializer into the browser bundle.
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        format: Option<TextFormat>,
        min_length: Option<u64>,
        max_length: Option<u64>,
        pattern: Option<String>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    SingleSelect {
        choices: Vec<Choice>,
    },
    MultiSelect {
        choices: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
        unique_items: bool,
    },
    /// Outside the subset: edited as JSON text, validated on the server against `schema`.
    Json {
        schema: Value,
    },
}

impl FormModel {
    /// Parses a `requestedSchema`, enforcing the limits of docs/api.md#limits. Errors name the offending property.
    pub fn from_schema(schema: &Value, limits: &Limits) -> Result<Self, ManagedInputError> {
        check_size(schema, limits)?;
        let object = schema
            .as_object()
            .ok_or_else(|| schema_error("requestedSchema", "must be a JSON object"))?;
        if let Some(kind) = object.get("type")
            && kind != "object"
        {
            return Err(schema_error(
                "requestedSchema.type",
                "must be \"object\": a form is a flat object of fields",
            ));
        }
        let properties = match object.get("properties") {
            None => Map::new(),
            Some(Value::Object(properties)) => properties.clone(),
            Some(_) => {
                return Err(schema_error(
                    "requestedSchema.properties",
                    "must be an object mapping field names to schemas",
                ));
            }
        };
        if properties.len() > limits.schema_properties {
            return Err(schema_error(
                "requestedSchema.properties",
                &format!(
                    "has {} properties; the limit is {}",
                    properties.len(),
                    limits.schema_properties
                ),
            ));
        }
        let required = required_names(object)?;
        for name in &required {
            if !properties.contains_key(name) {
                return Err(schema_error(
                    "requestedSchema.required",
                    &format!("names {name:?}, which is not a property"),
                ));
            }
        }
        let fields = properties
            .iter()
            .map(|(name, property)| parse_field(name, property, required.contains(name)))
            .collect::<Result<Vec<_>, _>>()?;
        let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
        Ok(Self { fields, closed })
    }

    /// The answer the form starts with: every default, nothing else.
    pub fn defaults(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .filter_map(|field| Some((field.name.clone(), field.default.clone()?)))
            .collect()
    }
}

fn required_names(object: &Map<String, Value>) -> Result<Vec<String>, ManagedInputError> {
    match object.get("required") {
        None => Ok(Vec::new()),
        Some(Value::Array(names)) => names
            .iter()
            .map(|name| {
                name.as_str().map(str::to_owned).ok_or_else(|| {
                    schema_error("requestedSchema.required", "must list property names")
                })
            })
            .collect(),
        Some(_) => Err(schema_error(
            "requestedSchema.required",
            "must be an array of property names",
        )),
    }
}

fn parse_field(
    name: &str,
    property: &Value,
    required: bool,
) -> Result<FormField, ManagedInputError> {
    let path = format!("requestedSchema.properties.{name}");
    let Some(schema) = property.as_object() else {
        return Err(schema_error(&path, "must be a schema object"));
    };
    let text = |key: &str| schema.get(key).and_then(Value::as_str).map(str::to_owned);
    let kind = parse_kind(&path, schema)?;
    Ok(FormField {
        name: name.to_owned(),
        title: text("title"),
        description: text("description"),
        required,
        default: schema.get("default").cloned(),
        kind,
    })
}

fn parse_kind(path: &str, schema: &Map<String, Value>) -> Result<FieldKind, ManagedInputError> {
    let number = |key: &str| -> Result<Option<f64>, ManagedInputError> {
        match schema.get(key) {
            None => Ok(None),
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| schema_error(&format!("{path}.{key}"), "must be a number")),
        }
    };
    let count = |key: &str| -> Result<Option<u64>, ManagedInputError> {
        match schema.get(key) {
            None => Ok(None),
            Some(value) => value.as_u64().map(Some).ok_or_else(|| {
                schema_error(&format!("{path}.{key}"), "must be a non-negative integer")
            }),
        }
    };
    let kind = match schema.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(choices) = string_choices(path, schema)? {
                FieldKind::SingleSelect { choices }
            } else {
                let format = schema.get("format").and_then(Value::as_str);
                let pattern = match schema.get("pattern") {
                    None => None,
                    Some(Value::String(pattern)) => Some(pattern.clone()),
                    Some(_) => {
                        return Err(schema_error(&format!("{path}.pattern"), "must be a string"));
                    }
                };
                match format {
                    Some(format) if TextFormat::parse(format).is_none() => FieldKind::Json {
                        schema: Value::Object(schema.clone()),
                    },
                    _ => FieldKind::Text {
                        format: format.and_then(TextFormat::parse),
                        min_length: count("minLength")?,
                        max_length: count("maxLength")?,
                        pattern,
                    },
                }
            }
        }
        Some(kind @ ("number" | "integer")) => FieldKind::Number {
            integer: kind == "integer",
            minimum: number("minimum")?,
            maximum: number("maximum")?,
        },
        Some("boolean") => FieldKind::Boolean,
        Some("array") => match array_choices(path, schema)? {
            Some(choices) => FieldKind::MultiSelect {
                choices,
                min_items: count("minItems")?,
                max_items: count("maxItems")?,
                unique_items: schema.get("uniqueItems") == Some(&Value::Bool(true)),
            },
            None => FieldKind::Json {
                schema: Value::Object(schema.clone()),
            },
        },
        _ => FieldKind::Json {
            schema: Value::Object(schema.clone()),
        },
    };
    // Keywords outside the subset would be ignored by a native control: keep them honest as JSON.
    let known: &[&str] = &[
        "type",
        "title",
        "description",
        "default",
        "format",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "enum",
        "enumNames",
        "oneOf",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
    ];
    if !matches!(kind, FieldKind::Json { .. })
        && schema.keys().any(|key| !known.contains(&key.as_str()))
    {
        return Ok(FieldKind::Json {
            schema: Value::Object(schema.clone()),
        });
    }
    Ok(kind)
}

/// `enum` (labels from legacy `enumNames`) or `oneOf: [{const, title}]` on a string.
fn string_choices(
    path: &str,
    schema: &Map<String, Value>,
) -> Result<Option<Vec<Choice>>, ManagedInputError> {
    if let Some(values) = schema.get("enum") {
        let values = string_list(&format!("{path}.enum"), values)?;
        let labels = match schema.get("enumNames") {
            Some(names) => {
                let names = string_list(&format!("{path}.enumNames"), names)?;
                if names.len() != values.len() {
                    return Err(schema_error(
                        &format!("{path}.enumNames"),
                        "must have one label per enum value",
                    ));
                }
                names
            }
            None => values.clone(),
        };
        return Ok(Some(
            values
                .into_iter()
                .zip(labels)
                .map(|(value, label)| Choice { value, label })
                .collect(),
        ));
    }
    match schema.get("oneOf") {
        Some(options) => const_choices(&format!("{path}.oneOf"), options).map(Some),
        None => Ok(None),
    }
}

/// `items.enum` or `items.anyOf: [{const, title}]` on an array.
fn array_choices(
    path: &str,
    schema: &Map<String, Value>,
) -> Result<Option<Vec<Choice>>, ManagedInputError> {
    let Some(items) = schema.get("items").and_then(Value::as_object) else {
        return Ok(None);
    };
    if items.get("type").is_some_and(|kind| kind != "string") {
        return Ok(None);
    }
    if let Some(values) = items.get("enum") {
        let values = string_list(&format!("{path}.items.enum"), values)?;
        return Ok(Some(
            values
                .into_iter()
                .map(|value| Choice {
                    label: value.clone(),
                    value,
                })
                .collect(),
        ));
    }
    match items.get("anyOf") {
        Some(options) => const_choices(&format!("{path}.items.anyOf"), options).map(Some),
        None => Ok(None),
    }
}

fn string_list(path: &str, values: &Value) -> Result<Vec<String>, ManagedInputError> {
    let list = values
        .as_array()
        .filter(|list| !list.is_empty())
        .ok_or_else(|| schema_error(path, "must be a non-empty array of strings"))?;
    list.iter()
        .map(|value| {
            value
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| schema_error(path, "must hold strings only"))
        })
        .collect()
}

fn const_choices(path: &str, options: &Value) -> Result<Vec<Choice>, ManagedInputError> {
    let list = options
        .as_array()
        .filter(|list| !list.is_empty())
        .ok_or_else(|| schema_error(path, "must be a non-empty array of {const, title}"))?;
    list.iter()
        .map(|option| {
            let value = option
                .get("const")
                .and_then(Value::as_str)
                .ok_or_else(|| schema_error(path, "every option needs a string `const`"))?;
            let label = option.get("title").and_then(Value::as_str).unwrap_or(value);
            Ok(Choice {
                value: value.to_owned(),
                label: label.to_owned(),
            })
        })
        .collect()
}

fn check_size(schema: &Value, limits: &Limits) -> Result<(), ManagedInputError> {
    let bytes = serde_json::to_vec(schema)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if bytes > limits.schema_bytes {
        return Err(schema_error(
            "requestedSchema",
            &format!("is {bytes} bytes; the limit is {}", limits.schema_bytes),
        ));
    }
    let depth = depth(schema);
    if depth > limits.schema_depth {
        return Err(schema_error(
            "requestedSchema",
            &format!(
                "nests {depth} levels deep; the limit is {}",
                limits.schema_depth
            ),
        ));
    }
    Ok(())
}

/// Nesting depth of objects and arrays (a scalar is 0, `{}` is 1).
fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(list) => 1 + list.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

pub fn schema_error(property: &str, problem: &str) -> ManagedInputError {
    ManagedInputError::validation_with(
        format!("`{property}` {problem}."),
        json!({ "property": property }),
    )
}

#[cfg(test)]
mod tests;
