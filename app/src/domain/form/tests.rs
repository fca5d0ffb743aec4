use serde_json::{Value, json};

use super::*;

/// Patterns in browser-independent unit tests: a tiny matcher for the anchored literals used below.
struct PrefixPatterns;

impl PatternMatcher for PrefixPatterns {
    fn is_match(&self, pattern: &str, value: &str) -> Option<bool> {
        // Only `^prefix` patterns appear in these tests.
        pattern
            .strip_prefix('^')
            .map(|prefix| value.starts_with(prefix))
    }
}

fn model(schema: Value) -> FormModel {
    FormModel::from_schema(&schema, &Limits::default()).expect("schema parses")
}

fn every_field_type_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Who you are", "minLength": 2, "maxLength": 20, "default": "Ada"},
            "code": {"type": "string", "pattern": "^AB"},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 2.5},
            "agree": {"type": "boolean", "default": true},
            "env": {"type": "string", "enum": ["dev", "prod"], "enumNames": ["Development", "Production"], "default": "dev"},
            "plain": {"type": "string", "enum": ["a", "b"]},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}, "minItems": 1, "maxItems": 2},
            "colours": {"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]}, "uniqueItems": true},
            "extra": {"type": "object", "properties": {"deep": {"type": "string"}}}
        },
        "required": ["name", "age", "env"]
    })
}

#[test]
fn every_field_type_of_the_subset_is_parsed() {
    let form = model(every_field_type_schema());
    let kind = |name: &str| {
        form.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.kind.clone())
            .expect(name)
    };
    assert!(matches!(
        kind("name"),
        FieldKind::Text {
            format: None,
            min_length: Some(2),
            max_length: Some(20),
            ..
        }
    ));
    assert!(matches!(kind("code"), FieldKind::Text { pattern: Some(p), .. } if p == "^AB"));
    assert!(matches!(
        kind("email"),
        FieldKind::Text {
            format: Some(TextFormat::Email),
            ..
        }
    ));
    assert!(matches!(
        kind("site"),
        FieldKind::Text {
            format: Some(TextFormat::Uri),
            ..
        }
    ));
    assert!(matches!(
        kind("day"),
        FieldKind::Text {
            format: Some(TextFormat::Date),
            ..
        }
    ));
    assert!(matches!(
        kind("at"),
        FieldKind::Text {
            format: Some(TextFormat::DateTime),
            ..
        }
    ));
    assert!(matches!(
        kind("age"),
        FieldKind::Number {
            integer: true,
            minimum: Some(0.0),
            maximum: Some(150.0)
        }
    ));
    assert!(matches!(
        kind("ratio"),
        FieldKind::Number { integer: false, .. }
    ));
    assert_eq!(kind("agree"), FieldKind::Boolean);
    assert_eq!(
        kind("env"),
        FieldKind::SingleSelect {
            choices: vec![
                Choice {
                    value: "dev".into(),
                    label: "Development".into()
                },
                Choice {
                    value: "prod".into(),
                    label: "Production".into()
                },
            ]
        }
    );
    assert!(
        matches!(kind("plain"), FieldKind::SingleSelect { choices } if choices[1].label == "b")
    );
    assert!(
        matches!(kind("size"), FieldKind::SingleSelect { choices } if choices[0].label == "Small")
    );
    assert!(matches!(
        kind("tags"),
        FieldKind::MultiSelect {
            min_items: Some(1),
            max_items: Some(2),
            unique_items: false,
            ..
        }
    ));
    assert!(
        matches!(kind("colours"), FieldKind::MultiSelect { choices, unique_items: true, .. } if choices[1].label == "Green")
    );
    assert!(matches!(kind("extra"), FieldKind::Json { .. }));
}

#[test]
fn fields_keep_schema_order_titles_descriptions_and_required_flags() {
    let form = model(every_field_type_schema());
    let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names[..3], ["name", "code", "email"]);
    let name = &form.fields[0];
    assert_eq!(name.label(), "Name");
    assert_eq!(name.description.as_deref(), Some("Who you are"));
    assert!(name.required);
    assert!(!form.fields[1].required);
    assert_eq!(form.fields[1].label(), "code");
}

#[test]
fn defaults_prefill_the_form() {
    let defaults = model(every_field_type_schema()).defaults();
    assert_eq!(defaults.get("name"), Some(&json!("Ada")));
    assert_eq!(defaults.get("age"), Some(&json!(30)));
    assert_eq!(defaults.get("agree"), Some(&json!(true)));
    assert_eq!(defaults.get("env"), Some(&json!("dev")));
    assert_eq!(defaults.len(), 4);
}

#[test]
fn valid_answer_passes_and_each_broken_field_gets_its_own_message() {
    let form = model(every_field_type_schema());
    let good = json!({"name": "Ada", "code": "ABC", "email": "ada@example.com", "site": "https://example.com/x",
        "day": "2026-02-28", "at": "2026-02-28T10:00:00Z", "age": 36, "ratio": 1.5, "agree": false,
        "env": "prod", "size": "l", "tags": ["x"], "colours": ["r", "g"]});
    assert_eq!(
        form.validate(good.as_object().expect("object"), &PrefixPatterns),
        Ok(())
    );

    let bad = json!({"name": "A", "code": "XY", "email": "not-an-email", "site": "example dot com",
        "day": "2026-02-30", "at": "tomorrow", "age": 36.5, "ratio": 3, "agree": "yes",
        "env": "staging", "size": "m", "tags": [], "colours": ["r", "r"]});
    let errors = form
        .validate(bad.as_object().expect("object"), &PrefixPatterns)
        .expect_err("invalid answer");
    for field in [
        "name", "code", "email", "site", "day", "at", "age", "ratio", "agree", "env", "size",
        "tags", "colours",
    ] {
        assert!(errors.contains_key(field), "{field} flagged: {errors:?}");
    }
    assert_eq!(errors["name"], vec!["must be at least 2 characters"]);
    assert_eq!(
        errors["env"],
        vec!["must be one of: Development, Production"]
    );
}

#[test]
fn missing_required_fields_are_named() {
    let errors = model(every_field_type_schema())
        .validate(&Map::new(), &PrefixPatterns)
        .expect_err("required fields missing");
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["age", "env", "name"]);
    assert_eq!(errors["age"], vec!["is required"]);
}

#[test]
fn closed_schema_refuses_unknown_keys() {
    let form = model(
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}),
    );
    let errors = form
        .validate(
            json!({"b": 1}).as_object().expect("object"),
            &PrefixPatterns,
        )
        .expect_err("unknown key");
    assert!(errors.contains_key("b"));
}

#[test]
fn schema_errors_name_the_offending_property() {
    let cases = [
        (json!([]), "requestedSchema"),
        (json!({"type": "array"}), "requestedSchema.type"),
        (
            json!({"type": "object", "properties": []}),
            "requestedSchema.properties",
        ),
        (
            json!({"type": "object", "properties": {"a": 5}}),
            "requestedSchema.properties.a",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "enum": []}}}),
            "requestedSchema.properties.a.enum",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "enumNames": ["X", "Y"]}}}),
            "requestedSchema.properties.a.enumNames",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}}),
            "requestedSchema.properties.a.minLength",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}),
            "requestedSchema.required",
        ),
    ];
    for (schema, property) in cases {
        let error =
            FormModel::from_schema(&schema, &Limits::default()).expect_err(&schema.to_string());
        assert_eq!(error.code(), "validation_error");
        assert_eq!(
            error.details().and_then(|d| d["property"].as_str()),
            Some(property),
            "{schema}"
        );
    }
}

#[test]
fn schema_limits_are_enforced() {
    let limits = Limits::default();
    let many: Map<String, Value> = (0..101)
        .map(|i| (format!("f{i}"), json!({"type": "string"})))
        .collect();
    let error = FormModel::from_schema(&json!({"type": "object", "properties": many}), &limits)
        .expect_err("too many");
    assert!(
        error.message().contains("101 properties"),
        "{}",
        error.message()
    );

    let mut deep = json!({"type": "string"});
    for _ in 0..8 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let error = FormModel::from_schema(&deep, &limits).expect_err("too deep");
    assert!(
        error.message().contains("levels deep"),
        "{}",
        error.message()
    );

    let big = json!({"type": "object", "properties": {"a": {"type": "string", "description": "x".repeat(70_000)}}});
    let error = FormModel::from_schema(&big, &limits).expect_err("too big");
    assert!(error.message().contains("bytes"), "{}", error.message());
}

#[cfg(feature = "ssr")]
mod agreement_with_jsonschema {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::every_field_type_schema;
    use crate::domain::{
        form::compiled::{CompiledSchema, RegexPatterns},
        limits::Limits,
    };

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
