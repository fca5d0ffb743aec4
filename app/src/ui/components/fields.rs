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
    let control = Control {
        invalid: Signal::derive(move || {
            errors
                .with(|errors| errors.contains_key(&invalid_name))
                .to_string()
        }),
        label: field.label().to_owned(),
        required: field.required,
        described_by,
        dom_id,
        name,
    };
    let posted_text = posted_values.as_ref().map(|values| {
        posted(values, &control.name)
            .last()
            .map(|v| (*v).to_owned())
            .unwrap_or_default()
    });
    let posted_choices: Option<Vec<String>> = posted_values.as_ref().map(|values| {
        posted(values, &control.name)
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

    let input = match field.kind.clone() {
        FieldKind::Text {
            format,
            min_length,
            max_length,
            ..
        } => text_input(&control, format, (min_length, max_length), text_value).into_any(),
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => number_input(&control, integer, (minimum, maximum), text_value).into_any(),
        FieldKind::Boolean => {
            let checked = match &posted_values {
                Some(values) => posted(values, &control.name).contains(&"true"),
                None => field.initially_checked(),
            };
            checkbox(&control, checked).into_any()
        }
        FieldKind::SingleSelect { choices } if choices.len() > MAX_RADIOS => {
            choice_list(&control, choices, &chosen).into_any()
        }
        FieldKind::SingleSelect { choices } => {
            choice_group(&control, choices, "radio", &chosen).into_any()
        }
        FieldKind::MultiSelect { choices, .. } => {
            choice_group(&control, choices, "checkbox", &chosen).into_any()
        }
        FieldKind::Json { .. } => json_area(&control, text_value).into_any(),
    };

    view! {
        <div class="field">
            {input}
            {help}
            {error_view}
        </div>
    }
}

/// What every kind of control shares: its element id, posted name, label and state.
struct Control {
    dom_id: String,
    name: String,
    label: String,
    required: bool,
    described_by: String,
    /// `aria-invalid`: whether the field has a problem now.
    invalid: Signal<String>,
}

/// The visible mark of a required field (the control itself says `required` to assistive technology).
fn required_mark(required: bool) -> Option<impl IntoView> {
    required.then(|| {
        view! {
            <span class="required" aria-hidden="true">
                " *"
            </span>
        }
    })
}

fn text_input(
    control: &Control,
    format: Option<TextFormat>,
    (min_length, max_length): (Option<u64>, Option<u64>),
    value: String,
) -> impl IntoView {
    let input_type = format.map_or("text", TextFormat::input_type);
    let utc = (format == Some(TextFormat::DateTime)).then_some(" (UTC)");
    view! {
        <label class="field-label" for=control.dom_id.clone()>
            {control.label.clone()}
            {utc}
            {required_mark(control.required)}
        </label>
        <input
            id=control.dom_id.clone()
            class="field-input"
            type=input_type
            name=control.name.clone()
            value=value
            required=control.required
            minlength=min_length.map(|n| n.to_string())
            maxlength=max_length.map(|n| n.to_string())
            aria-invalid=control.invalid
            aria-describedby=control.described_by.clone()
        />
    }
}

fn number_input(
    control: &Control,
    integer: bool,
    (minimum, maximum): (Option<f64>, Option<f64>),
    value: String,
) -> impl IntoView {
    view! {
        <label class="field-label" for=control.dom_id.clone()>
            {control.label.clone()}
            {required_mark(control.required)}
        </label>
        <input
            id=control.dom_id.clone()
            class="field-input"
            type="number"
            inputmode=if integer { "numeric" } else { "decimal" }
            step=if integer { "1" } else { "any" }
            min=minimum.map(|n| n.to_string())
            max=maximum.map(|n| n.to_string())
            name=control.name.clone()
            value=value
            required=control.required
            aria-invalid=control.invalid
            aria-describedby=control.described_by.clone()
        />
    }
}

fn checkbox(control: &Control, checked: bool) -> impl IntoView {
    view! {
        // Posted when the box is unticked, so "false" is an answer, not a missing field.
        <input type="hidden" name=control.name.clone() value="false" />
        <label class="field-check" for=control.dom_id.clone()>
            <input
                id=control.dom_id.clone()
                type="checkbox"
                name=control.name.clone()
                value="true"
                checked=checked
                aria-invalid=control.invalid
                aria-describedby=control.described_by.clone()
            />
            {control.label.clone()}
            {required_mark(control.required)}
        </label>
    }
}

/// Many single choices: a select.
fn choice_list(
    control: &Control,
    choices: Vec<Choice>,
    chosen: &impl Fn(&str) -> bool,
) -> impl IntoView {
    let nothing_chosen = !choices.iter().any(|choice| chosen(&choice.value));
    view! {
        <label class="field-label" for=control.dom_id.clone()>
            {control.label.clone()}
            {required_mark(control.required)}
        </label>
        <select
            id=control.dom_id.clone()
            class="field-input"
            name=control.name.clone()
            required=control.required
            aria-invalid=control.invalid
            aria-describedby=control.described_by.clone()
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
}

/// A few single choices as radio buttons, multiple choices as checkboxes: one fieldset either way.
fn choice_group(
    control: &Control,
    choices: Vec<Choice>,
    input_type: &'static str,
    chosen: &impl Fn(&str) -> bool,
) -> impl IntoView {
    let single = input_type == "radio";
    view! {
        <fieldset class="field-group" aria-describedby=control.described_by.clone()>
            <legend class="field-label">{control.label.clone()} {required_mark(control.required)}</legend>
            {choices
                .into_iter()
                .enumerate()
                .map(|(index, Choice { value, label })| {
                    let id = format!("{}-{index}", control.dom_id);
                    let label_for = id.clone();
                    view! {
                        <label class="field-check" for=label_for>
                            <input
                                id=id
                                type=input_type
                                name=control.name.clone()
                                value=value.clone()
                                checked=chosen(&value)
                                required=single && control.required
                                aria-invalid=control.invalid
                            />
                            {label}
                        </label>
                    }
                })
                .collect_view()}
        </fieldset>
    }
}

fn json_area(control: &Control, value: String) -> impl IntoView {
    view! {
        <label class="field-label" for=control.dom_id.clone()>
            {control.label.clone()}
            " (JSON)"
            {required_mark(control.required)}
        </label>
        <textarea
            id=control.dom_id.clone()
            class="field-input field-json"
            name=control.name.clone()
            rows="4"
            spellcheck="false"
            required=control.required
            aria-invalid=control.invalid
            aria-describedby=control.described_by.clone()
        >
            {value}
        </textarea>
    }
}
