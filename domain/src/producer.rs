//! A producer's question as it posts it: the pulsemcp library's create body, which is an MCP
//! `elicitation/create` request's params with the ids in `_meta` (docs/protocol.md).

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::{ManagedInputError, ids::RequestId, round::ElicitationRequest};

/// What a pulsemcp create body says.
pub struct ProducerQuestion {
    pub request: ElicitationRequest,
    pub request_id: RequestId,
    /// `_meta["com.pulsemcp/session-id"]`: the session the asker believes it asks in.
    pub session_hint: Option<String>,
    pub tool_name: Option<String>,
    pub server: Option<String>,
}

fn meta_text(meta: &Map<String, Value>, key: &str) -> Result<Option<String>, ManagedInputError> {
    match meta.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(ManagedInputError::validation(format!(
            "`_meta[\"{key}\"]` must be a string."
        ))),
    }
}

/// The question a producer posts: the pulsemcp library's body, an MCP `elicitation/create` request's params
/// (docs/protocol.md). The parser reads it through this type, so the OpenAPI document shows what is parsed;
/// each field is taken as any JSON first, so that a wrong type gets a sentence naming the field rather than
/// serde's, and unknown keys are ignored, not refused.
#[derive(Deserialize, ToSchema)]
pub struct QuestionBody {
    /// `form` (the default) or `url`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    mode: Value,
    /// What the person is asked; at most 10,000 characters.
    #[serde(default)]
    #[schema(value_type = String)]
    message: Value,
    /// Form mode: a flat JSON Schema object of the answer's fields.
    #[serde(rename = "requestedSchema", default)]
    #[schema(value_type = Option<Object>)]
    requested_schema: Value,
    /// URL mode: where the person goes (http or https).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    url: Value,
    /// URL mode: the asker's id for the elicitation.
    #[serde(rename = "elicitationId", default)]
    #[schema(value_type = Option<String>)]
    elicitation_id: Value,
    /// `com.pulsemcp/request-id`, `com.pulsemcp/session-id`, `com.pulsemcp/tool-name`,
    /// `com.pulsemcp/expires-at`, `anteroom/server`.
    #[serde(rename = "_meta", default)]
    #[schema(value_type = Option<Object>)]
    meta: Value,
}

/// The create body as the OpenAPI document describes it: what [`parse_question`] and the round's checks accept,
/// no more and no less (a third-party fuzzer holds the server to it). A form question or a URL question, each
/// with the `_meta` that names it. Documentation only: the parser reads [`QuestionBody`].
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum QuestionDoc {
    Form(FormQuestionDoc),
    Url(UrlQuestionDoc),
}

/// [`QuestionDoc`] on the bare route, whose `_meta` must also name the session.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub enum BareQuestionDoc {
    Form(BareFormQuestionDoc),
    Url(BareUrlQuestionDoc),
}

macro_rules! question_docs {
    ($form:ident, $url:ident, $meta:ty) => {
        /// A form question: the person fills in a form made from `requestedSchema`.
        #[derive(Deserialize, ToSchema)]
        #[allow(dead_code, reason = "documentation only")]
        pub struct $form {
            /// `form` (the default when absent).
            #[schema(pattern = "^form$")]
            mode: Option<String>,
            /// What the person is asked.
            #[schema(max_length = 10000, pattern = r"^[\s\S]*\S[\s\S]*$")]
            message: String,
            #[serde(rename = "requestedSchema")]
            requested_schema: RequestedSchemaDoc,
            #[serde(rename = "_meta")]
            meta: $meta,
        }

        /// A URL question: the person visits `url` and says whether they did.
        #[derive(Deserialize, ToSchema)]
        #[allow(dead_code, reason = "documentation only")]
        pub struct $url {
            #[schema(pattern = "^url$")]
            mode: String,
            #[schema(max_length = 10000, pattern = r"^[\s\S]*\S[\s\S]*$")]
            message: String,
            /// An http(s) URL without whitespace.
            #[schema(max_length = 2048, pattern = r"^https?://\S*$")]
            url: String,
            #[serde(rename = "elicitationId")]
            #[schema(min_length = 1, max_length = 128)]
            elicitation_id: String,
            #[serde(rename = "_meta")]
            meta: $meta,
        }
    };
}

question_docs!(FormQuestionDoc, UrlQuestionDoc, QuestionMetaDoc);
question_docs!(BareFormQuestionDoc, BareUrlQuestionDoc, BareQuestionMetaDoc);

/// A question's `_meta` on a session's own route.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code, reason = "documentation only")]
pub struct QuestionMetaDoc {
    /// The question's own id: a retry of the same body with it is the same question.
    #[serde(rename = "com.pulsemcp/request-id")]
    request_id: RequestId,
    /// If given, the session of the URL.
    #[serde(rename = "com.pulsemcp/session-id")]
    session_id: Option<String>,
    #[serde(rename = "com.pulsemcp/tool-name")]
    tool_name: Option<String>,
    /// When the asker stops waiting (RFC 3339).
    #[serde(rename = "com.pulsemcp/expires-at")]
    expires_at: Option<String>,
    /// The asking MCP server's name, shown on the banner.
    #[serde(rename = "anteroom/server")]
    #[schema(pattern = "^[^/\\u0000-\\u001F\\u007F-\\u009F]{1,128}$")]
    server: Option<String>,
}

/// A question's `_meta` on the bare route: the session must be named.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code, reason = "documentation only")]
pub struct BareQuestionMetaDoc {
    #[serde(rename = "com.pulsemcp/request-id")]
    request_id: RequestId,
    /// The session asked in (it must exist).
    #[serde(rename = "com.pulsemcp/session-id")]
    session_id: crate::ids::SessionId,
    #[serde(rename = "com.pulsemcp/tool-name")]
    tool_name: Option<String>,
    #[serde(rename = "com.pulsemcp/expires-at")]
    expires_at: Option<String>,
    #[serde(rename = "anteroom/server")]
    #[schema(pattern = "^[^/\\u0000-\\u001F\\u007F-\\u009F]{1,128}$")]
    server: Option<String>,
}

/// The answer's form as MCP defines it: a flat object whose properties are strings, numbers, integers,
/// booleans, single choices (`enum`/`oneOf`) or multiple choices (`array` of them). docs/protocol.md lists
/// the keywords each takes; the server refuses any other shape with 422 naming the property.
#[derive(Deserialize, ToSchema)]
#[allow(dead_code, reason = "documentation only")]
pub struct RequestedSchemaDoc {
    #[serde(rename = "type")]
    #[schema(pattern = "^object$")]
    kind: String,
    #[schema(value_type = Object)]
    properties: Value,
    required: Option<Vec<String>>,
}

/// Reads a producer's create body. Only its shape is checked here; the schema, message and URL are checked
/// when the round is made (`NewRound::validate`, the store's schema compiler).
pub fn parse_question(body: &Value) -> Result<ProducerQuestion, ManagedInputError> {
    if !body.is_object() {
        return Err(ManagedInputError::validation(
            "The body must be a JSON object.",
        ));
    }
    let question = QuestionBody::deserialize(body)
        .map_err(|_| ManagedInputError::validation("The body must be a JSON object."))?;
    let meta = match question.meta {
        Value::Null => Map::new(),
        Value::Object(meta) => meta,
        _ => return Err(ManagedInputError::validation("`_meta` must be an object.")),
    };
    let request_id = meta_text(&meta, "com.pulsemcp/request-id")?.ok_or_else(|| {
        ManagedInputError::validation(
            "`_meta[\"com.pulsemcp/request-id\"]` is missing; every question needs its own id.",
        )
    })?;
    let request_id = RequestId::parse(request_id)?;
    let message = match question.message {
        Value::String(message) => message,
        Value::Null => {
            return Err(ManagedInputError::validation(
                "`message` is missing; say what you are asking.",
            ));
        }
        _ => return Err(ManagedInputError::validation("`message` must be a string.")),
    };
    let mode = match &question.mode {
        Value::Null => "form",
        Value::String(mode) => mode.as_str(),
        _ => {
            return Err(ManagedInputError::validation(
                "`mode` must be \"form\" or \"url\".",
            ));
        }
    };
    let request = match mode {
        "form" => ElicitationRequest::Form {
            message,
            requested_schema: match question.requested_schema {
                schema @ Value::Object(_) => schema,
                Value::Null => {
                    return Err(ManagedInputError::validation(
                        "`requestedSchema` is missing: a form question needs a schema.",
                    ));
                }
                _ => {
                    return Err(ManagedInputError::validation(
                        "`requestedSchema` must be a JSON object.",
                    ));
                }
            },
            meta: Some(meta.clone()),
        },
        "url" => {
            let text = |key: &str, value: Value| match value {
                Value::String(text) => Ok(text),
                _ => Err(ManagedInputError::validation(format!(
                    "`{key}` must be a string for a url question."
                ))),
            };
            ElicitationRequest::Url {
                message,
                url: text("url", question.url)?,
                elicitation_id: text("elicitationId", question.elicitation_id)?,
                meta: Some(meta.clone()),
            }
        }
        other => {
            return Err(ManagedInputError::validation(format!(
                "`mode` {other:?} is not supported; use \"form\" or \"url\"."
            )));
        }
    };
    Ok(ProducerQuestion {
        request,
        request_id,
        session_hint: meta_text(&meta, "com.pulsemcp/session-id")?,
        tool_name: meta_text(&meta, "com.pulsemcp/tool-name")?,
        server: meta_text(&meta, "anteroom/server")?,
    })
}
