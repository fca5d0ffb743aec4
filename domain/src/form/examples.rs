//! Example schemas: one that uses every field type Anteroom renders, for the tests of every crate that checks
//! answers against a schema (the form model here, the compiled `jsonschema` check in the store).

use serde_json::{Value, json};

/// A schema with every field type, default, constraint and format the form model knows.
pub fn every_field_type_schema() -> Value {
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
