//! The document's `<title>`, safe whatever text a producer or API caller put in it.

use leptos::prelude::*;
use leptos_meta::Title;

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

/// `text` as HTML text content: `&`, `<`, `>`, `"` and `'` as character references.
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::escape_html;

    #[test]
    fn markup_in_a_title_stays_text() {
        assert_eq!(
            escape_html("Deploy</title><img src=x onerror=alert(1)><title>"),
            "Deploy&lt;/title&gt;&lt;img src=x onerror=alert(1)&gt;&lt;title&gt;"
        );
        assert_eq!(
            escape_html("a & \"b\" 'c'"),
            "a &amp; &quot;b&quot; &#39;c&#39;"
        );
    }
}
