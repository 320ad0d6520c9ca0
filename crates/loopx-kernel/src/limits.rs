//! Bounds on what one record may hold, so that no field grows without limit.
//!
//! The kernel refuses a text past its bound. Callers that write untrusted input on someone's
//! behalf (a slice's report) clip to the same bounds with [`clip`] first.

use crate::errors::Invalid;

/// Characters in a todo title, an outcome, an option.
pub const TITLE: usize = 200;
pub const OBJECTIVE: usize = 2_000;
pub const QUESTION: usize = 1_000;
/// A person's message to an agent (`loopx say`).
pub const MESSAGE: usize = 4_000;
pub const SUMMARY: usize = 500;
pub const DETAIL: usize = 16 * 1024;
pub const OPTION: usize = 200;
/// Items in a list (options, files, questions).
pub const LIST_ITEMS: usize = 64;

/// `text` as the store will keep it, within `max` characters: redacted the way every write is
/// (a short secret's marker can be longer than the secret itself), then clipped. For callers
/// that write untrusted text on someone's behalf and must stay within the kernel's bounds
/// whatever it holds.
pub fn bounded(text: &str, max: usize) -> String {
    static REDACTOR: std::sync::OnceLock<crate::redact::Redactor> = std::sync::OnceLock::new();
    // The same redactor every store applies (`Store::open`).
    let redactor = REDACTOR.get_or_init(|| crate::redact::Redactor::for_process_env(&[]));
    clip(&redactor.redact(text), max)
}

/// At most `max` characters, cut on a character boundary.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// The last `max` characters at most, cut on a character boundary (an output's tail).
pub fn clip_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    match count.checked_sub(max) {
        Some(skip) if skip > 0 => text.chars().skip(skip).collect(),
        _ => text.to_owned(),
    }
}

/// A required text: not blank, at most `max` characters.
pub(crate) fn check_text(
    field: &'static str,
    text: &str,
    max: usize,
    hint: &'static str,
) -> Result<(), Invalid> {
    // Judged as it will be stored: escape sequences alone are no text.
    if crate::redact::terminal_safe(text).trim().is_empty() {
        return Err(Invalid::Empty { field });
    }
    let len = text.chars().count();
    if len > max {
        return Err(Invalid::TooLong {
            field,
            len,
            max,
            hint,
        });
    }
    Ok(())
}

/// An optional text: at most `max` characters.
pub(crate) fn check_len(field: &'static str, text: &str, max: usize) -> Result<(), Invalid> {
    let len = text.chars().count();
    if len > max {
        return Err(Invalid::TooLong {
            field,
            len,
            max,
            hint: "",
        });
    }
    Ok(())
}

/// A list of short texts.
pub(crate) fn check_list(
    field: &'static str,
    items: &[String],
    max_each: usize,
) -> Result<(), Invalid> {
    if items.len() > LIST_ITEMS {
        return Err(Invalid::TooLong {
            field,
            len: items.len(),
            max: LIST_ITEMS,
            hint: " (items)",
        });
    }
    items
        .iter()
        .try_for_each(|item| check_text(field, item, max_each, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("héllo", 2), "hé");
        assert_eq!(clip("hi", 5), "hi");
    }

    #[test]
    fn bounded_text_stays_within_the_bound_once_redacted() {
        // A short password in a URL is replaced by a longer marker.
        let text = format!("{}postgres://app:pw@db/app", "x".repeat(480));
        let redacted = crate::redact::Redactor::for_process_env(&[])
            .redact(&text)
            .into_owned();
        assert!(
            redacted.chars().count() > 500,
            "the marker is longer: {redacted}"
        );
        let kept = bounded(&text, 500);
        assert_eq!(kept.chars().count(), 500);
        assert!(!kept.contains("pw@"), "{kept}");
    }
}
