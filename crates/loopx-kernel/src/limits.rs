//! Bounds on what one record may hold, so that no field grows without limit.
//!
//! The kernel refuses a text past its bound. Callers that write untrusted input on someone's
//! behalf (a slice's report) clip to the same bounds with [`clip`] first.

use crate::errors::Invalid;

/// Characters in a todo title, an outcome, an option.
pub const TITLE: usize = 200;
pub const OBJECTIVE: usize = 2_000;
pub const QUESTION: usize = 1_000;
pub const SUMMARY: usize = 500;
pub const DETAIL: usize = 16 * 1024;
pub const OPTION: usize = 200;
/// Items in a list (options, files, questions).
pub const LIST_ITEMS: usize = 64;

/// At most `max` characters, cut on a character boundary.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// A required text: not blank, at most `max` characters.
pub(crate) fn check_text(
    field: &'static str,
    text: &str,
    max: usize,
    hint: &'static str,
) -> Result<(), Invalid> {
    if text.trim().is_empty() {
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
}
