//! The document's `<title>`, safe whatever text a producer or API caller put in it.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::domain::text::escape_html;

/// Sets the document title. `leptos_meta` writes the title into the server-rendered `<head>` as it is, so a
/// session titled `</title><img src=x onerror=…>` would become markup; on the server the text is escaped
/// here. In the browser the title is set as `document.title`, which is plain text, so it is left alone.
#[component]
pub fn PageTitle(#[prop(into)] text: TextProp) -> impl IntoView {
    let formatter = |text: String| {
        if cfg!(feature = "ssr") {
            escape_html(&text)
        } else {
            text
        }
    };
    view! { <Title formatter=formatter text=text /> }
}
