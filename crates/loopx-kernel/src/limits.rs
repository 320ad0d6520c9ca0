//! Bounds on what one record may hold, so that no field grows without limit.

use crate::errors::Invalid;

pub(crate) const TITLE: usize = 200;
pub(crate) const OBJECTIVE: usize = 2_000;
pub(crate) const QUESTION: usize = 1_000;
pub(crate) const SUMMARY: usize = 500;
pub(crate) const DETAIL: usize = 16 * 1024;
pub(crate) const OPTION: usize = 200;
pub(crate) const LIST_ITEMS: usize = 64;

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
