//! One native control per form field (docs/protocol.md#form-questions-and-the-schema-subset): label, help, required mark, default, and its problems.

use leptos::prelude::*;

use crate::domain::form::{Choice, FieldErrors, FieldKind, FormField, TextFormat, posted};

/// Radio buttons for a few choices, a select for more.
const MAX_RADIOS: usize = 4;

/// A field's control. `posted` holds what a person posted before (a refused form re-rendered without
/// JavaScript keeps their input); otherwise the control starts from the schema's default.
#[component]
pub fn FieldControl(
    field: FormField,
    /// The name the control posts under (`request_key/field`).
    name: String,
    /// A unique, id-safe stem for this control's element ids.
    dom_id: String,
    errors: RwSignal<FieldErrors>,
    posted_values: Option<Vec<(String, String)>>,
) -> impl IntoView {
    let help_id = format!("{dom_id}-help");
    let error_id = format!("{dom_id}-error");
    let described_by = if field.description.is_some() {
        format!("{help_id} {error_id}")
    } else {
        error_id.clone()
    };
    let error_name = name.clone();
    let problems = move || errors.with(|errors| errors.get(&error_name).cloned());
    let invalid_name = name.clone();
    let invalid = move || {
        errors
            .with(|errors| errors.contains_key(&invalid_name))
            .to_string()
    };
    let label = field.label().to_owned();
    let required = field.required;
    let posted_text = posted_values.as_ref().map(|values| {
        posted(values, &name)
            .last()
            .map(|v| (*v).to_owned())
            .unwrap_or_default()
    });
    let posted_choices: Option<Vec<String>> = posted_values.as_ref().map(|values| {
        posted(values, &name)
            .into_iter()
            .map(str::to_owned)
            .collect()
    });
    let chosen = {
        let field = field.clone();
        move |choice: &str| match &posted_choices {
            Some(values) => values.iter().any(|value| value == choice),
            None => field.initially_chosen(choice),
        }
    };
    let text_value = posted_text.unwrap_or_else(|| field.initial_text());
    let help = field.description.clone().map(|description| {
        view! {
            <p class="field-help" id=help_id.clone()>
                {description}
            </p>
        }
    });
    let error_view = view! {
        <p class="field-error" id=error_id.clone() aria-live="polite">
            {move || problems().map(|problems| problems.join("; "))}
        </p>
    };
    let mark = required.then(|| {
        view! {
            <span class="required" aria-hidden="true">
                " *"
            </span>
        }
    });

    let control = match field.kind.clone() {
        FieldKind::Text {
            format,
            min_length,
            max_length,
            ..
        } => {
            let input_type = format.map_or("text", TextFormat::input_type);
            let utc = (format == Some(TextFormat::DateTime)).then_some(" (UTC)");
            view! {
                <label class="field-label" for=dom_id.clone()>
                    {label.clone()}
                    {utc}
                    {mark}
                </label>
                <input
                    id=dom_id.clone()
                    class="field-input"
                    type=input_type
                    name=name.clone()
                    value=text_value
                    required=required
                    minlength=min_length.map(|n| n.to_string())
                    maxlength=max_length.map(|n| n.to_string())
                    aria-invalid=invalid
                    aria-describedby=described_by
                />
            }
            .into_any()
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => view! {
            <label class="field-label" for=dom_id.clone()>
                {label.clone()}
                {mark}
            </label>
            <input
                id=dom_id.clone()
                class="field-input"
                type="number"
                inputmode=if integer { "numeric" } else { "decimal" }
                step=if integer { "1" } else { "any" }
                min=minimum.map(|n| n.to_string())
                max=maximum.map(|n| n.to_string())
                name=name.clone()
                value=text_value
                required=required
                aria-invalid=invalid
                aria-describedby=described_by
            />
        }
        .into_any(),
        FieldKind::Boolean => {
            let checked = match &posted_values {
                Some(values) => posted(values, &name).contains(&"true"),
                None => field.initially_checked(),
            };
            view! {
                // Posted when the box is unticked, so "false" is an answer, not a missing field.
                <input type="hidden" name=name.clone() value="false" />
                <label class="field-check" for=dom_id.clone()>
                    <input
                        id=dom_id.clone()
                        type="checkbox"
                        name=name.clone()
                        value="true"
                        checked=checked
                        aria-invalid=invalid
                        aria-describedby=described_by
                    />
                    {label.clone()}
                    {mark}
                </label>
            }
            .into_any()
        }
        FieldKind::SingleSelect { choices } if choices.len() > MAX_RADIOS => {
            let nothing_chosen = !choices.iter().any(|choice| chosen(&choice.value));
            view! {
                <label class="field-label" for=dom_id.clone()>
                    {label.clone()}
                    {mark}
                </label>
                <select
                    id=dom_id.clone()
                    class="field-input"
                    name=name.clone()
                    required=required
                    aria-invalid=invalid
                    aria-describedby=described_by
                >
                    <option value="" selected=nothing_chosen>
                        "Choose…"
                    </option>
                    {choices
                        .into_iter()
                        .map(|Choice { value, label }| {
                            view! {
                                <option value=value.clone() selected=chosen(&value)>
                                    {label}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            }
            .into_any()
        }
        // A few single choices as radio buttons, multiple choices as checkboxes: one fieldset either way.
        FieldKind::SingleSelect { choices } | FieldKind::MultiSelect { choices, .. } => {
            let single = matches!(field.kind, FieldKind::SingleSelect { .. });
            let input_type = if single { "radio" } else { "checkbox" };
            view! {
                <fieldset class="field-group" aria-describedby=described_by>
                    <legend class="field-label">{label.clone()} {mark}</legend>
                    {choices
                        .into_iter()
                        .enumerate()
                        .map(|(index, Choice { value, label })| {
                            let id = format!("{dom_id}-{index}");
                            let label_for = id.clone();
                            view! {
                                <label class="field-check" for=label_for>
                                    <input
                                        id=id
                                        type=input_type
                                        name=name.clone()
                                        value=value.clone()
                                        checked=chosen(&value)
                                        required=single && required
                                        aria-invalid=invalid.clone()
                                    />
                                    {label}
                                </label>
                            }
                        })
                        .collect_view()}
                </fieldset>
            }
            .into_any()
        }
        FieldKind::Json { .. } => view! {
            <label class="field-label" for=dom_id.clone()>
                {label.clone()}
                " (JSON)"
                {mark}
            </label>
            <textarea
                id=dom_id.clone()
                class="field-input field-json"
                name=name.clone()
                rows="4"
                spellcheck="false"
                required=required
                aria-invalid=invalid
                aria-describedby=described_by
            >
                {text_value}
            </textarea>
        }
        .into_any(),
    };

    view! {
        <div class="field">
            {control}
            {help}
            {error_view}
        </div>
    }
}
