//! Which producer patterns a backtracking engine (the browser's `RegExp`) may run without freezing the page.
//!
//! The server checks every pattern with a linear-time engine and stays the authority; the browser's check is
//! only a convenience while typing. A pattern a backtracking engine can take exponential (or high polynomial)
//! time on — a quantified group that itself repeats or alternates (`(a+)+`, `(a|a)*`), backreferences,
//! lookaround, or more than two unbounded repetitions — is dropped from the form the server sends the page
//! ([`FormModel::for_the_browser`]), and the browser checks no value longer than [`BROWSER_VALUE_CHARS`].

use super::{FieldKind, FormModel};

impl FormModel {
    /// The form as the browser gets it: patterns a backtracking engine could hang on are dropped, so the page
    /// never runs them (the server still checks every answer against the stored schema).
    pub fn for_the_browser(mut self) -> Self {
        for field in &mut self.fields {
            if let FieldKind::Text { pattern, .. } = &mut field.kind
                && pattern
                    .as_deref()
                    .is_some_and(|p| !safe_for_backtracking(p))
            {
                *pattern = None;
            }
        }
        self
    }
}

/// Longest value the browser checks itself; `n²` steps of a two-repetition pattern stay far below 100 ms.
pub const BROWSER_VALUE_CHARS: usize = 1_000;

/// Repetitions wider than this (`{0,500}`) count as unbounded: they backtrack like `*`.
const WIDE_REPETITION: u64 = 16;

/// Most unbounded repetitions a browser-checked pattern may hold.
const MAX_UNBOUNDED: usize = 2;

/// Whether a backtracking engine can run `pattern` on a value of at most [`BROWSER_VALUE_CHARS`] quickly.
pub fn safe_for_backtracking(pattern: &str) -> bool {
    Scan::new(pattern).run().is_some()
}

/// What a group holds, for deciding whether quantifying it is dangerous.
#[derive(Default, Clone, Copy)]
struct GroupShape {
    /// A repetition (wider than one) inside.
    repeats: bool,
    /// An alternation (`|`) inside.
    alternates: bool,
}

struct Scan<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    unbounded: usize,
}

impl<'a> Scan<'a> {
    fn new(pattern: &'a str) -> Self {
        Self {
            chars: pattern.chars().peekable(),
            unbounded: 0,
        }
    }

    /// `None` as soon as the pattern is found unsafe (or malformed: the server decides those).
    fn run(mut self) -> Option<()> {
        self.sequence()?;
        // A stray `)` ends the top level early: malformed.
        if self.chars.next().is_some() {
            return None;
        }
        (self.unbounded <= MAX_UNBOUNDED).then_some(())
    }

    /// A sequence of atoms up to an unmatched `)` or the end; reports what it holds.
    fn sequence(&mut self) -> Option<GroupShape> {
        let mut shape = GroupShape::default();
        while let Some(&next) = self.chars.peek() {
            let atom = match next {
                ')' => break,
                '|' => {
                    self.chars.next();
                    shape.alternates = true;
                    continue;
                }
                '(' => {
                    self.chars.next();
                    self.group_opening()?;
                    let inner = self.sequence()?;
                    if self.chars.next() != Some(')') {
                        return None;
                    }
                    inner
                }
                '[' => {
                    self.chars.next();
                    self.class()?;
                    GroupShape::default()
                }
                '\\' => {
                    self.chars.next();
                    self.escape()?;
                    GroupShape::default()
                }
                _ => {
                    self.chars.next();
                    GroupShape::default()
                }
            };
            shape.repeats |= atom.repeats;
            shape.alternates |= atom.alternates;
            if let Some(width) = self.quantifier()? {
                if atom.repeats || atom.alternates {
                    // `(a+)+`, `(a|ab)*`: exponential in a backtracking engine.
                    return None;
                }
                if width > 1 {
                    shape.repeats = true;
                }
                if width > WIDE_REPETITION {
                    self.unbounded += 1;
                }
            }
        }
        Some(shape)
    }

    /// After `(`: plain and non-capturing groups pass; lookaround and named groups (backreference targets) do not.
    fn group_opening(&mut self) -> Option<()> {
        if self.chars.peek() == Some(&'?') {
            self.chars.next();
            return match self.chars.next()? {
                ':' => Some(()),
                _ => None,
            };
        }
        Some(())
    }

    /// A character class up to its `]`; its contents never backtrack by themselves.
    fn class(&mut self) -> Option<()> {
        if self.chars.peek() == Some(&'^') {
            self.chars.next();
        }
        if self.chars.peek() == Some(&']') {
            self.chars.next();
        }
        loop {
            match self.chars.next()? {
                ']' => return Some(()),
                '\\' => {
                    self.chars.next()?;
                }
                _ => {}
            }
        }
    }

    /// After `\`: backreferences (`\1`, `\k<name>`) are unsafe; everything else is one atom.
    fn escape(&mut self) -> Option<()> {
        match self.chars.next()? {
            '1'..='9' | 'k' => None,
            // `\u{…}`, `\p{…}`, `\P{…}`: one atom up to the closing brace.
            'u' | 'p' | 'P' if self.chars.peek() == Some(&'{') => {
                while self.chars.next()? != '}' {}
                Some(())
            }
            _ => Some(()),
        }
    }

    /// A quantifier after an atom, as the widest count it allows (`u64::MAX` for unbounded); `Some(None)`
    /// when there is none. A lazy `?` after it changes nothing here.
    fn quantifier(&mut self) -> Option<Option<u64>> {
        let width = match self.chars.peek() {
            Some('*' | '+') => {
                self.chars.next();
                u64::MAX
            }
            Some('?') => {
                self.chars.next();
                1
            }
            Some('{') => {
                self.chars.next();
                let mut body = String::new();
                loop {
                    match self.chars.next()? {
                        '}' => break,
                        c if c.is_ascii_digit() || c == ',' => body.push(c),
                        _ => return None,
                    }
                }
                let (low, high) = match body.split_once(',') {
                    None => (body.parse::<u64>().ok()?, body.parse::<u64>().ok()?),
                    Some((low, "")) => (low.parse::<u64>().ok()?, u64::MAX),
                    Some((low, high)) => (low.parse::<u64>().ok()?, high.parse::<u64>().ok()?),
                };
                // `{200}` repeats exactly: no choice to backtrack over, but it still repeats.
                if low == high {
                    high.min(2)
                } else {
                    high.saturating_sub(low).max(2)
                }
            }
            _ => return Some(None),
        };
        if self.chars.peek() == Some(&'?') {
            self.chars.next();
        }
        Some(Some(width))
    }
}

#[cfg(test)]
mod tests {
    use super::safe_for_backtracking;

    #[test]
    fn ordinary_patterns_are_checked_in_the_browser() {
        for pattern in [
            "^[a-z0-9-]+$",
            "^\\w{200}$",
            "^[A-Z]{2}-\\d{4}$",
            "^(?:https?)://[^\\s]+$",
            "^(ab)+$",
            "^\\d{3}-\\d{3}-\\d{4}$",
            "^[a-z]+@[a-z]+$",
            "^(yes|no)$",
            "^\\u{1F600}?$",
        ] {
            assert!(safe_for_backtracking(pattern), "{pattern}");
        }
    }

    #[test]
    fn catastrophic_patterns_are_left_to_the_server() {
        for pattern in [
            "^(a+)+$",
            "^(a|a)*$",
            "^(a|a)*\\1$",
            "^(\\w+\\s?)*$",
            "^(a{1,20}){1,20}$",
            "^(?=a)a$",
            "^(?<x>a)\\k<x>$",
            "^a*a*a*$",
            "^a{0,500}b{0,500}c{0,500}$",
            "^((a)*)*$",
            "(unclosed",
            "[unclosed",
            "a)",
        ] {
            assert!(!safe_for_backtracking(pattern), "{pattern}");
        }
    }
}
