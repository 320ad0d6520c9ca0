//! Shared machinery for the two-stage config loading of adapters and profiles: parse the TOML
//! into `Raw*` types (where every leaf is a [`Checked`] value, so a wrong type is recorded instead
//! of aborting), collect unknown keys through `serde_ignored`, then validate into plain types
//! while adding every problem to one [`Problems`] list.

mod checked;
mod document;
mod suggest;
mod values;

pub(crate) use checked::{Checked, Expected, take};
pub(crate) use document::{Problems, document_from_tree, parse_document};
pub(crate) use suggest::did_you_mean;
pub(crate) use values::{
    DurationText, SizeValue, parse_byte_size, parse_duration, serialize_duration,
};

/// Ids (profile and adapter names, roles) follow the kernel's id rule.
pub(crate) fn is_id(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && s.len() <= 64
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
}

/// Environment variable names: what a POSIX shell accepts.
pub(crate) fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('A'..='Z' | 'a'..='z' | '_'))
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Names that look like credentials (`docs/profiles.md`, `[env]`): they pass only when listed
/// as secrets, so that their values are redacted wherever they show up. The same list the
/// redactor reads.
pub(crate) use loopx_vocab::credential_word;

/// Placeholders usable in adapter arguments.
pub(crate) const ARG_PLACEHOLDERS: [&str; 7] = [
    "prompt",
    "prompt_file",
    "model",
    "workdir",
    "max_turns",
    "loopx",
    "flags",
];

/// The `{name}` placeholders in a template, in order.
pub(crate) fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_placeholder_name(&after[..close]) => {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn is_placeholder_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

/// Replace each `{name}` for which `value(name)` answers, in one pass: a substituted value is
/// never scanned again, so a prompt that contains `{model}` stays as written. Other braces are
/// kept as they are.
pub(crate) fn fill_placeholders<'v>(
    template: &str,
    value: impl Fn(&str) -> Option<&'v str>,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| value(&after[..close]).map(|v| (v, close)))
        {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Read a config file whose stem is its name (an id).
pub(crate) fn read_named_file(
    path: &std::path::Path,
    kind: crate::ConfigKind,
) -> Result<(&str, String), crate::LoadError> {
    let name = path
        .extension()
        .filter(|e| *e == "toml")
        .and_then(|_| path.file_stem()?.to_str())
        .filter(|n| is_id(n))
        .ok_or_else(|| crate::LoadError::BadFileName {
            path: path.to_owned(),
            kind,
        })?;
    let text =
        read_regular_text(path, MAX_CONFIG_BYTES).map_err(|source| crate::LoadError::Read {
            path: path.to_owned(),
            source,
        })?;
    Ok((name, text))
}

/// One reader of configuration files for every loopx crate (`loopx.toml` too).
pub use loopx_kernel::toml_file::{MAX_CONFIG_BYTES, open_regular, read_regular_text};
