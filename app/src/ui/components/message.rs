//! A question's message as a person reads it: plain text, with ```` ``` ```` fenced blocks shown as code (a
//! command, a patch) and a `diff` block's added and removed lines marked. Everything stays text: nothing in a
//! message becomes markup.

use leptos::prelude::*;

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessagePart {
    Text(String),
    /// A fenced block: its language (`diff`, `sh`, …, empty when none) and its lines.
    Code {
        language: String,
        lines: Vec<String>,
    },
}

/// How a line of a `diff` block reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLine {
    Added,
    Removed,
    Same,
}

impl DiffLine {
    pub fn of(line: &str) -> Self {
        if line.starts_with('+') {
            Self::Added
        } else if line.starts_with('-') {
            Self::Removed
        } else {
            Self::Same
        }
    }

    fn class(self) -> &'static str {
        match self {
            Self::Added => "diff-added",
            Self::Removed => "diff-removed",
            Self::Same => "",
        }
    }
}

/// Splits `message` at its fences (a line that starts with ```` ``` ````, its rest the block's language); a
/// block left open runs to the end, as Markdown reads it.
pub fn message_parts(message: &str) -> Vec<MessagePart> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut block: Option<(String, Vec<String>)> = None;
    for line in message.split('\n') {
        let fence = line.strip_prefix("```");
        match (&mut block, fence) {
            (None, Some(language)) => {
                if !text.is_empty() {
                    parts.push(MessagePart::Text(std::mem::take(&mut text)));
                }
                block = Some((language.trim().to_owned(), Vec::new()));
            }
            (Some(_), Some(_)) => {
                if let Some((language, lines)) = block.take() {
                    parts.push(MessagePart::Code { language, lines });
                }
            }
            (Some((_, lines)), None) => lines.push(line.to_owned()),
            (None, None) => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(line);
            }
        }
    }
    if let Some((language, lines)) = block {
        parts.push(MessagePart::Code { language, lines });
    }
    if !text.is_empty() {
        parts.push(MessagePart::Text(text));
    }
    // Text between blocks keeps its own blank lines, not the ones that framed a block.
    parts
        .into_iter()
        .filter_map(|part| match part {
            MessagePart::Text(text) => {
                let trimmed = text.trim_matches('\n');
                (!trimmed.is_empty()).then(|| MessagePart::Text(trimmed.to_owned()))
            }
            code => Some(code),
        })
        .collect()
}

/// The message, its code blocks as `<pre>`.
#[component]
pub fn MessageText(message: String) -> impl IntoView {
    message_parts(&message)
        .into_iter()
        .map(|part| match part {
            MessagePart::Text(text) => view! { <p class="message-text">{text}</p> }.into_any(),
            MessagePart::Code { language, lines } => {
                let diff = language == "diff";
                let lines = lines
                    .into_iter()
                    .map(|line| {
                        let class = if diff {
                            DiffLine::of(&line).class()
                        } else {
                            ""
                        };
                        view! { <span class=class>{line}</span> "\n" }
                    })
                    .collect_view();
                view! {
                    <pre class="message-code" data-language=language>
                        <code>{lines}</code>
                    </pre>
                }
                .into_any()
            }
        })
        .collect_view()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(language: &str, lines: &[&str]) -> MessagePart {
        MessagePart::Code {
            language: language.to_owned(),
            lines: lines.iter().map(|line| (*line).to_owned()).collect(),
        }
    }

    #[test]
    fn fenced_blocks_become_code_and_the_rest_stays_text() {
        let message =
            "Claude Code run 4f2a wants to use Bash:\n\n```sh\n$ terraform apply\n```\n\n(apply)";
        assert_eq!(
            message_parts(message),
            [
                MessagePart::Text("Claude Code run 4f2a wants to use Bash:".to_owned()),
                code("sh", &["$ terraform apply"]),
                MessagePart::Text("(apply)".to_owned()),
            ]
        );
        assert_eq!(
            message_parts("Which region?\nPick one."),
            [MessagePart::Text("Which region?\nPick one.".to_owned())]
        );
        // An open fence runs to the end; markup stays text.
        assert_eq!(
            message_parts("see:\n```diff\n- <b>old</b>\n+ new"),
            [
                MessagePart::Text("see:".to_owned()),
                code("diff", &["- <b>old</b>", "+ new"]),
            ]
        );
        assert_eq!(DiffLine::of("+ added"), DiffLine::Added);
        assert_eq!(DiffLine::of("- removed"), DiffLine::Removed);
        assert_eq!(DiffLine::of("  context"), DiffLine::Same);
    }
}
