//! The server's authoritative check: the form model's per-field messages, plus the `jsonschema` crate on the
//! stored schema (format checks on, no remote references), compiled once per schema and cached.
//!
//! Schemas come from producers, so every cost is bounded: patterns run on the `regex` crate's linear-time
//! engine with size limits (no backreferences, no lookaround), a schema holds at most [`MAX_PATTERNS`] of
//! them, an answer to a schema that admits extra keys holds at most as many keys as a schema may have
//! properties, and the caches are bounded by what they hold.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{Arc, Mutex, OnceLock},
};

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value, json};

use crate::domain::{
    ManagedInputError,
    form::{FieldErrors, FormModel, PatternMatcher, schema_error},
    limits::{Limits, nul_at},
};

/// Largest compiled form of one pattern (the `regex` crate's program size), in bytes.
pub const PATTERN_SIZE_LIMIT: usize = 64 * 1024;
/// Largest lazy-DFA cache of one pattern, in bytes; past it the engine falls back to another linear one.
const PATTERN_DFA_LIMIT: usize = 64 * 1024;
/// Compiled patterns kept: with the schemas' own copies below, producers can make the process hold at most
/// ~`2 × 256 × (64 KiB + a DFA cache per thread)` of them, and real patterns are a few hundred bytes.
const PATTERNS_KEPT: usize = 256;
/// Most `pattern`s and `patternProperties` keys in one schema.
pub const MAX_PATTERNS: usize = 128;
/// Longest key of an answer (a property name), in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// A schema ready to validate answers.
pub struct CompiledSchema {
    pub model: FormModel,
    validator: jsonschema::Validator,
    /// How many patterns it compiled (what it weighs in the cache).
    patterns: usize,
    /// Most keys an answer may hold.
    max_keys: usize,
}

impl CompiledSchema {
    /// Parses the form model and compiles the schema; a schema that is not valid JSON Schema, refers to
    /// anything outside itself, holds a pattern the linear-time engine cannot run within its limits, or
    /// breaks a limit is a `validation_error` naming the property.
    pub fn compile(schema: &Value, limits: &Limits) -> Result<Self, ManagedInputError> {
        let model = FormModel::from_schema(schema, limits)?;
        let mut found = Vec::new();
        collect_patterns(schema, "requestedSchema", &mut found);
        if found.len() > MAX_PATTERNS {
            return Err(schema_error(
                "requestedSchema",
                &format!(
                    "holds {} patterns; the limit is {MAX_PATTERNS}",
                    found.len()
                ),
            ));
        }
        for (property, pattern) in &found {
            if let Err(problem) = compiled_pattern(pattern) {
                return Err(schema_error(property, &problem));
            }
        }
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .with_pattern_options(
                jsonschema::PatternOptions::regex()
                    .size_limit(PATTERN_SIZE_LIMIT)
                    .dfa_size_limit(PATTERN_DFA_LIMIT),
            )
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
        Ok(Self {
            model,
            validator,
            patterns: found.len(),
            max_keys: limits.schema_properties,
        })
    }

    /// Per-field problems of `content` (empty when the answer is valid).
    pub fn field_errors(&self, content: &Map<String, Value>) -> FieldErrors {
        // `additionalProperties` / `patternProperties` admit keys the form does not list: bound them before
        // any pattern runs on them.
        if content.len() > self.max_keys {
            return FieldErrors::from([(
                String::new(),
                vec![format!(
                    "has {} keys; an answer holds at most {}",
                    content.len(),
                    self.max_keys
                )],
            )]);
        }
        if let Some(long) = content.keys().find(|key| key.len() > MAX_KEY_BYTES) {
            let shown: String = long.chars().take(32).collect();
            return FieldErrors::from([(
                String::new(),
                vec![format!(
                    "has a key longer than {MAX_KEY_BYTES} bytes ({shown}…)"
                )],
            )]);
        }
        // Answers from the pages come here without the API's body check: refuse NUL as a field problem.
        if let Some((field, _)) = content
            .iter()
            .find(|(key, value)| key.contains('\0') || nul_at(value).is_some())
        {
            return FieldErrors::from([(
                field.clone(),
                vec!["must not contain a NUL character".to_owned()],
            )]);
        }
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

/// Every `pattern` keyword and `patternProperties` key in a schema, with the property path that names it.
/// Values (`default`, `const`, `enum`, `examples`) are data, not schemas, and are not searched.
fn collect_patterns(schema: &Value, path: &str, found: &mut Vec<(String, String)>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                let here = format!("{path}.{key}");
                match (key.as_str(), value) {
                    ("pattern", Value::String(pattern)) => found.push((here, pattern.clone())),
                    ("patternProperties", Value::Object(by_pattern)) => {
                        for (pattern, inner) in by_pattern {
                            found.push((format!("{here}.{pattern}"), pattern.clone()));
                            collect_patterns(inner, &format!("{here}.{pattern}"), found);
                        }
                    }
                    ("default" | "const" | "enum" | "examples", _) => {}
                    _ => collect_patterns(value, &here, found),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                collect_patterns(item, &format!("{path}.{index}"), found);
            }
        }
        _ => {}
    }
}

/// `pattern` compiled for the linear-time engine within the size limits, or why it cannot be.
fn compiled_pattern(pattern: &str) -> Result<Arc<Regex>, String> {
    static COMPILED: OnceLock<BoundedCache<String, Result<Arc<Regex>, String>>> = OnceLock::new();
    let cache = COMPILED.get_or_init(|| BoundedCache::new(PATTERNS_KEPT, PATTERNS_KEPT));
    if let Some(known) = cache.get(pattern) {
        return known;
    }
    // Compiled outside the cache's lock: a slow compile delays nobody else.
    let compiled = RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .dfa_size_limit(PATTERN_DFA_LIMIT)
        .build()
        .map(Arc::new)
        .map_err(|error| match error {
            regex::Error::CompiledTooBig(_) => format!(
                "is too large once compiled (over {} KiB); use ASCII classes such as [A-Za-z0-9_] instead of \
                 \\w or \\d, or shorter repetitions",
                PATTERN_SIZE_LIMIT / 1024
            ),
            other => format!(
                "cannot be run by Anteroom's linear-time pattern engine (no backreferences or lookaround): \
                 {}",
                other.to_string().lines().last().unwrap_or_default().trim()
            ),
        });
    cache.insert(pattern.to_owned(), compiled.clone(), 1);
    compiled
}

/// Patterns on the server, through the `regex` crate's linear-time engine, each compiled once.
pub struct RegexPatterns;

impl PatternMatcher for RegexPatterns {
    fn is_match(&self, pattern: &str, value: &str) -> Option<bool> {
        compiled_pattern(pattern).ok().map(|re| re.is_match(value))
    }
}

/// A map that starts over when it holds too many entries or too much weight, so what producers can make it
/// hold is bounded. Values are built outside its lock.
struct BoundedCache<K, V> {
    entries: Mutex<(HashMap<K, V>, usize)>,
    max_entries: usize,
    max_weight: usize,
}

impl<K: Eq + Hash, V: Clone> BoundedCache<K, V> {
    fn new(max_entries: usize, max_weight: usize) -> Self {
        Self {
            entries: Mutex::new((HashMap::new(), 0)),
            max_entries,
            max_weight,
        }
    }

    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        self.lock().0.get(key).cloned()
    }

    fn insert(&self, key: K, value: V, weight: usize) {
        let mut guard = self.lock();
        let (entries, total) = &mut *guard;
        if entries.len() >= self.max_entries || *total + weight > self.max_weight {
            entries.clear();
            *total = 0;
        }
        if entries.insert(key, value).is_none() {
            *total += weight;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (HashMap<K, V>, usize)> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Compiled schemas by their JSON text, so a schema is compiled once and reused for every answer.
pub struct SchemaCache {
    compiled: BoundedCache<String, Arc<CompiledSchema>>,
}

impl Default for SchemaCache {
    fn default() -> Self {
        Self {
            // Enough for every open question of a busy instance; the weight (patterns held) bounds memory.
            compiled: BoundedCache::new(4096, PATTERNS_KEPT),
        }
    }
}

impl SchemaCache {
    pub fn get(
        &self,
        schema: &Value,
        limits: &Limits,
    ) -> Result<Arc<CompiledSchema>, ManagedInputError> {
        let key = schema.to_string();
        if let Some(found) = self.compiled.get(&key) {
            return Ok(found);
        }
        let compiled = Arc::new(CompiledSchema::compile(schema, limits)?);
        self.compiled
            .insert(key, compiled.clone(), compiled.patterns.max(1));
        Ok(compiled)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn refusal(schema: Value) -> ManagedInputError {
        match CompiledSchema::compile(&schema, &Limits::default()) {
            Ok(_) => panic!("{schema} compiled"),
            Err(error) => error,
        }
    }

    #[test]
    fn backtracking_only_patterns_are_refused_naming_the_property() {
        let error = refusal(json!({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(a|a)*\\1$"}}
        }));
        assert_eq!(
            error.details().and_then(|d| d["property"].as_str()),
            Some("requestedSchema.properties.code.pattern")
        );
        let error = refusal(json!({
            "type": "object",
            "patternProperties": {"^(?=x)": {"type": "string"}}
        }));
        assert_eq!(
            error.details().and_then(|d| d["property"].as_str()),
            Some("requestedSchema.patternProperties.^(?=x)")
        );
    }

    #[test]
    fn oversized_patterns_are_refused() {
        let error = refusal(json!({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^\\w{2000}$"}}
        }));
        assert!(error.message().contains("too large"), "{error}");
    }

    #[test]
    fn a_hundred_ascii_fields_of_two_hundred_characters_fit_the_limits() {
        let properties: Map<String, Value> = (0..100)
            .map(|n| {
                (
                    format!("f{n}"),
                    json!({"type": "string", "pattern": "^[A-Za-z0-9_]{200}$"}),
                )
            })
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let compiled = CompiledSchema::compile(&schema, &Limits::default()).expect("compiles");
        let answer: Map<String, Value> = (0..100)
            .map(|n| (format!("f{n}"), json!("a".repeat(200))))
            .collect();
        assert!(compiled.field_errors(&answer).is_empty());
    }

    #[test]
    fn nested_quantifiers_answered_with_a_long_near_miss_take_no_time() {
        let schema = json!({
            "type": "object",
            "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}},
            "patternProperties": {"^(a+)+$": {"type": "string"}}
        });
        let compiled = CompiledSchema::compile(&schema, &Limits::default()).expect("compiles");
        let near_miss = format!("{}!", "a".repeat(100_000));
        let mut content = Map::new();
        content.insert("code".to_owned(), Value::String(near_miss.clone()));
        content.insert(format!("{}!", "a".repeat(200)), Value::String(near_miss));
        let started = Instant::now();
        let errors = compiled.field_errors(&content);
        // Exponential on a backtracking engine; a linear one answers at once. The bound is loose on purpose.
        assert!(started.elapsed().as_secs() < 2, "{:?}", started.elapsed());
        assert!(errors.contains_key("code"), "{errors:?}");
    }

    #[test]
    fn answers_with_too_many_or_too_long_keys_are_refused_before_any_pattern_runs() {
        let schema = json!({"type": "object", "patternProperties": {"^k": {"type": "string"}}});
        let compiled = CompiledSchema::compile(&schema, &Limits::default()).expect("compiles");
        let many: Map<String, Value> = (0..101).map(|i| (format!("k{i}"), json!("v"))).collect();
        assert!(compiled.field_errors(&many)[""][0].contains("at most 100"));
        let long: Map<String, Value> = [("k".repeat(300), json!("v"))].into_iter().collect();
        assert!(compiled.field_errors(&long)[""][0].contains("longer than"));
    }

    #[test]
    fn patterns_inside_values_are_not_patterns() {
        let schema = json!({
            "type": "object",
            "properties": {"x": {"type": "object", "default": {"pattern": "(unclosed"}}}
        });
        assert!(CompiledSchema::compile(&schema, &Limits::default()).is_ok());
    }

    #[test]
    fn a_bounded_cache_starts_over_when_full() {
        let cache = BoundedCache::new(2, 10);
        cache.insert("a", 1, 1);
        cache.insert("b", 2, 1);
        cache.insert("c", 3, 1);
        assert_eq!((cache.get("a"), cache.get("c")), (None, Some(3)));
        cache.insert("heavy", 4, 10);
        assert_eq!((cache.get("c"), cache.get("heavy")), (None, Some(4)));
    }
}

#[cfg(test)]
mod agreement_with_the_form_model {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::{CompiledSchema, RegexPatterns};
    use crate::domain::{form::examples::every_field_type_schema, limits::Limits};

    fn compiled() -> CompiledSchema {
        let mut schema = every_field_type_schema();
        // The JSON fallback field is checked only by jsonschema; agreement is about the native controls.
        if let Some(properties) = schema["properties"].as_object_mut() {
            properties.remove("extra");
        }
        CompiledSchema::compile(&schema, &Limits::default()).expect("compiles")
    }

    /// For each field, values that are clearly valid and clearly invalid for it.
    fn candidates(field: &str) -> Vec<Value> {
        match field {
            "name" => vec![
                json!("Ada"),
                json!("Grace Hopper"),
                json!("A"),
                json!("x".repeat(21)),
                json!(5),
                json!(null),
            ],
            "code" => vec![
                json!("AB"),
                json!("ABZ"),
                json!("BA"),
                json!(""),
                json!(true),
            ],
            "email" => vec![
                json!("ada@example.com"),
                json!("a.b+c@mail.example.org"),
                json!("nope"),
                json!("a@@b"),
                json!("@example.com"),
                json!(1),
            ],
            "site" => vec![
                json!("https://example.com"),
                json!("mailto:ada@example.com"),
                json!("example.com"),
                json!("http://exa mple.com"),
                json!([]),
            ],
            "day" => vec![
                json!("2026-01-31"),
                json!("2024-02-29"),
                json!("2026-02-30"),
                json!("31/01/2026"),
                json!("2026-1-1"),
            ],
            "at" => vec![
                json!("2026-01-31T10:00:00Z"),
                json!("2026-01-31T10:00:00+02:00"),
                json!("2026-01-31 10:00"),
                json!("noon"),
            ],
            "age" => vec![
                json!(0),
                json!(150),
                json!(42),
                json!(-1),
                json!(151),
                json!(1.5),
                json!("42"),
            ],
            "ratio" => vec![
                json!(0.5),
                json!(2.5),
                json!(1),
                json!(0.4),
                json!(2.6),
                json!("1"),
            ],
            "agree" => vec![json!(true), json!(false), json!("true"), json!(0)],
            "env" => vec![
                json!("dev"),
                json!("prod"),
                json!("Development"),
                json!(""),
                json!(null),
            ],
            "plain" => vec![json!("a"), json!("b"), json!("c")],
            "size" => vec![json!("s"), json!("l"), json!("Small"), json!(1)],
            "tags" => vec![
                json!(["x"]),
                json!(["y", "z"]),
                json!([]),
                json!(["x", "y", "z"]),
                json!(["w"]),
                json!("x"),
            ],
            "colours" => vec![
                json!(["r"]),
                json!(["r", "g"]),
                json!(["r", "r"]),
                json!(["b"]),
                json!([]),
            ],
            _ => vec![],
        }
    }

    const FIELDS: [&str; 14] = [
        "name", "code", "email", "site", "day", "at", "age", "ratio", "agree", "env", "plain",
        "size", "tags", "colours",
    ];

    /// An answer: each field absent (index 0) or one of its candidates.
    fn answers() -> impl Strategy<Value = Map<String, Value>> {
        let choices: Vec<_> = FIELDS
            .iter()
            .map(|field| 0..=candidates(field).len())
            .collect();
        choices.prop_map(|picks| {
            FIELDS
                .iter()
                .zip(picks)
                .filter(|(_, pick)| *pick > 0)
                .map(|(field, pick)| (field.to_string(), candidates(field)[pick - 1].clone()))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

        #[test]
        fn form_model_and_jsonschema_agree_on_every_answer(answer in answers()) {
            let schema = compiled();
            let by_model = schema.model.validate(&answer, &RegexPatterns).is_ok();
            let by_jsonschema = schema.field_errors(&answer).is_empty();
            prop_assert_eq!(by_model, by_jsonschema, "answer {:?}", answer);
        }
    }

    #[test]
    fn single_field_agreement_on_every_candidate() {
        let schema = compiled();
        let base = json!({"name": "Ada", "age": 30, "env": "dev"});
        let mut checked = 0;
        for field in FIELDS {
            for value in candidates(field) {
                let mut answer = base.as_object().cloned().unwrap_or_default();
                answer.insert(field.to_owned(), value.clone());
                let by_model = schema.model.validate(&answer, &RegexPatterns).is_ok();
                let instance = Value::Object(answer.clone());
                let by_jsonschema = jsonschema::options()
                    .should_validate_formats(true)
                    .build(&schema_json())
                    .map(|v| v.is_valid(&instance))
                    .unwrap_or(false);
                assert_eq!(by_model, by_jsonschema, "{field} = {value}");
                checked += 1;
            }
        }
        assert!(checked >= 60);
    }

    fn schema_json() -> Value {
        let mut schema = every_field_type_schema();
        if let Some(properties) = schema["properties"].as_object_mut() {
            properties.remove("extra");
        }
        schema
    }

    #[test]
    fn invalid_json_schema_and_remote_refs_are_refused_naming_the_property() {
        let bad_type = json!({"type": "object", "properties": {"a": {"type": "strung"}}});
        let error = CompiledSchema::compile(&bad_type, &Limits::default())
            .err()
            .expect("invalid schema");
        assert_eq!(error.code(), "validation_error");
        assert!(
            error.message().contains("requestedSchema"),
            "{}",
            error.message()
        );

        let remote = json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/schema.json"}}});
        assert!(CompiledSchema::compile(&remote, &Limits::default()).is_err());
    }

    #[test]
    fn server_validation_reports_per_field_messages() {
        let error = compiled()
            .validate(
                "address",
                json!({"name": "A", "age": 30, "env": "dev"})
                    .as_object()
                    .expect("object"),
            )
            .expect_err("too short");
        assert_eq!(error.code(), "validation_error");
        assert_eq!(
            error.details().expect("details")["fields"]["name"][0],
            "must be at least 2 characters"
        );
        assert!(
            error
                .message()
                .contains("name must be at least 2 characters"),
            "{}",
            error.message()
        );
    }
}
