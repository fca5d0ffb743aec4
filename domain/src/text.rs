//! Text made safe for the sinks that are not typed: producer text put into HTML by hand.

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
