use serde_json::{Value, json};

use super::{examples::every_field_type_schema, *};

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
