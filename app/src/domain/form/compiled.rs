//! The server's authoritative check: the form model's per-field messages, plus the `jsonschema` crate on the
//! stored schema (format checks on, no remote references), compiled once per schema and cached.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use serde_json::{Map, Value, json};

use super::{FieldErrors, FormModel, PatternMatcher, schema_error};
use crate::domain::{ManagedInputError, limits::Limits};

/// A schema ready to validate answers.
pub struct CompiledSchema {
    pub model: FormModel,
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    /// Parses the form model and compiles the schema; a schema that is not valid JSON Schema, refers to
    /// anything outside itself, or breaks a limit is a `validation_error` naming the property.
    pub fn compile(schema: &Value, limits: &Limits) -> Result<Self, ManagedInputError> {
        let model = FormModel::from_schema(schema, limits)?;
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|error| {
                let pointer = error.instance_path().to_string();
                let property = if pointer.is_empty() {
                    "requestedSchema".to_owned()
                } else {
                    format!(
                        "requestedSchema{}",
                        pointer
                            .replace('/', ".")
                            .replace("~1", "/")
                            .replace("~0", "~")
                    )
                };
                schema_error(&property, &format!("is not valid JSON Schema: {error}"))
            })?;
        Ok(Self { model, validator })
    }

    /// Per-field problems of `content` (empty when the answer is valid).
    pub fn field_errors(&self, content: &Map<String, Value>) -> FieldErrors {
        let mut errors = self
            .model
            .validate(content, &RegexPatterns)
            .err()
            .unwrap_or_default();
        let instance = Value::Object(content.clone());
        for error in self.validator.iter_errors(&instance) {
            let pointer = error.instance_path().to_string();
            let field = pointer
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or_default()
                .replace("~1", "/")
                .replace("~0", "~");
            // The form model already explained this field in a person's words.
            errors
                .entry(field)
                .or_insert_with(|| vec![error.to_string()]);
        }
        errors
    }

    /// Validates `content` as the accepted answer to request `key`.
    pub fn validate(
        &self,
        key: &str,
        content: &Map<String, Value>,
    ) -> Result<(), ManagedInputError> {
        let errors = self.field_errors(content);
        if errors.is_empty() {
            return Ok(());
        }
        let summary = errors
            .iter()
            .map(|(field, problems)| {
                let name = if field.is_empty() { "answer" } else { field };
                format!("{name} {}", problems.join(", "))
            })
            .collect::<Vec<_>>()
            .join("; ");
        Err(ManagedInputError::validation_with(
            format!("The answer to {key} does not fit the form: {summary}."),
            json!({ "request_key": key, "fields": errors }),
        ))
    }
}

/// Patterns on the server, through the `regex` crate.
pub struct RegexPatterns;

impl PatternMatcher for RegexPatterns {
    fn is_match(&self, pattern: &str, value: &str) -> Option<bool> {
        regex::Regex::new(pattern).ok().map(|re| re.is_match(value))
    }
}

/// Compiled schemas by their JSON text, so a schema is compiled once and reused for every answer.
#[derive(Default)]
pub struct SchemaCache {
    compiled: Mutex<HashMap<String, Arc<CompiledSchema>>>,
}

/// Enough for every open question of a busy instance; beyond it the cache starts over.
const CACHE_CAPACITY: usize = 4096;

impl SchemaCache {
    pub fn get(
        &self,
        schema: &Value,
        limits: &Limits,
    ) -> Result<Arc<CompiledSchema>, ManagedInputError> {
        let key = schema.to_string();
        if let Some(found) = self.lock().get(&key) {
            return Ok(found.clone());
        }
        let compiled = Arc::new(CompiledSchema::compile(schema, limits)?);
        let mut cache = self.lock();
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(key, compiled.clone());
        Ok(compiled)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CompiledSchema>>> {
        self.compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
