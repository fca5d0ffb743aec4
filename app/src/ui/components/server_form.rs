//! A form that calls a server function: the browser posts it when no script runs, the page dispatches it in
//! place once the bundle has hydrated.
//!
//! Leptos' `ActionForm` does the same by deserializing the form into the function's arguments with
//! `serde_qs`, which puts a query-string parser and a deserializer per function into the browser bundle
//! (about 70 KB of the wasm before `wasm-opt` for eight forms). Each form here reads its few fields by name.

use leptos::{prelude::*, server_fn::ServerFn};
use wasm_bindgen::JsCast;
use web_sys::{HtmlFormElement, SubmitEvent};

use crate::ui::browser::form_pairs;

/// The fields of a submitted form, as name/value pairs.
pub struct FormFields(Vec<(String, String)>);

impl FormFields {
    /// A field's text (its first, when several share the name); empty when the form has no such field.
    pub fn text(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    }

    /// A field read as a whole number, or a sentence saying which field is not one.
    pub fn whole_number<T: std::str::FromStr>(&self, name: &str, what: &str) -> Result<T, String> {
        self.text(name)
            .trim()
            .parse()
            .map_err(|_| format!("{what} must be a whole number."))
    }
}

/// Dispatches the call the fields made, or shows why they made none as the action's error.
pub fn dispatch_or_refuse<S>(action: ServerAction<S>, call: Result<S, String>)
where
    S: ServerFn<Error = ServerFnError> + Clone + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
{
    match call {
        Ok(call) => {
            action.dispatch(call);
        }
        Err(problem) => action.value().set(Some(Err(ServerFnError::new(problem)))),
    }
}

/// A `<form>` posting to `to` (a server function's address, `ServerFn::url()`), whose submission `submit`
/// turns into a call once the page runs its script.
#[component]
pub fn ServerForm(
    /// Where the browser posts the form without a script.
    to: &'static str,
    /// The form's class.
    class: &'static str,
    /// Makes and dispatches the call from the submitted fields.
    submit: Box<dyn Fn(&FormFields)>,
    children: Children,
) -> impl IntoView {
    let on_submit = move |event: SubmitEvent| {
        if event.default_prevented() {
            return;
        }
        event.prevent_default();
        if let Some(form) = event
            .target()
            .and_then(|target| target.dyn_into::<HtmlFormElement>().ok())
        {
            submit(&FormFields(form_pairs(&form)));
        }
    };
    view! {
        <form action=to method="post" class=class on:submit=on_submit>
            {children()}
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::FormFields;

    fn fields(pairs: &[(&str, &str)]) -> FormFields {
        FormFields(
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
        )
    }

    #[test]
    fn a_field_is_read_by_name_and_a_missing_one_is_empty() {
        let form = fields(&[("csrf", "token"), ("id", "7"), ("id", "8")]);
        assert_eq!(form.text("csrf"), "token");
        assert_eq!(form.text("id"), "7");
        assert_eq!(form.text("absent"), "");
    }

    #[test]
    fn a_number_that_is_not_one_says_which_field() {
        let form = fields(&[
            ("after_minutes", " 15 "),
            ("digest_after", ""),
            ("id", "1.5"),
        ]);
        assert_eq!(
            form.whole_number::<i64>("after_minutes", "The minutes"),
            Ok(15)
        );
        assert_eq!(
            form.whole_number::<u32>("digest_after", "The number of questions"),
            Err("The number of questions must be a whole number.".to_owned())
        );
        assert!(
            form.whole_number::<i64>("id", "The standing answer")
                .is_err()
        );
        assert!(
            form.whole_number::<u32>("after_minutes", "The minutes")
                .is_ok()
        );
    }
}
