//! The sandbox keys of adapters and profiles (`docs/permissions.md`).
//!
//! An adapter names where its CLI keeps state (`[sandbox] writable = ["~/.claude"]`); a profile
//! chooses how strict the slice is (`[sandbox] mode`) and may add paths. Paths are written as a
//! person would: `~/x` (the agent's `HOME`), `$NAME/x` (a variable of the agent's environment;
//! skipped when unset), absolute, or relative to the project root.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::Problems;

/// How strictly a profile's slices are contained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Everything this kernel offers; what is missing is warned about (`doctor`, `status`).
    #[default]
    Auto,
    /// Namespaces and Landlock, or the slice does not start.
    Required,
    /// No sandbox: the agent can reach the store and everything its user can (a person's
    /// choice, shown in `status`).
    Off,
}

impl SandboxMode {
    /// The spelling in profile files.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Required => "required",
            SandboxMode::Off => "off",
        }
    }
}

/// A profile's sandbox settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SandboxPolicy {
    /// How strict.
    pub mode: SandboxMode,
    /// Extra writable paths, as written.
    pub writable: Vec<String>,
}

/// Checks path entries: non-empty, and a `$NAME` prefix names a valid variable.
pub(crate) fn check_paths(
    paths: Vec<String>,
    span: &Range<usize>,
    key: &str,
    p: &mut Problems,
) -> Vec<String> {
    paths
        .into_iter()
        .filter(|path| {
            let bad = if path.trim().is_empty() {
                Some("an empty path")
            } else if path.contains('\0') {
                Some("a NUL byte")
            } else if path.starts_with('$') && variable(path).0.is_empty() {
                Some("`$` without a variable name")
            } else {
                None
            };
            if let Some(what) = bad {
                p.push(
                    span.clone(),
                    Some(key),
                    format!("`{key}` holds {what}: `{path}`"),
                    Some(
                        "write `~/dir`, `$VAR/dir`, `/abs/dir` or a path relative to the project"
                            .to_owned(),
                    ),
                );
            }
            bad.is_none()
        })
        .collect()
}

/// `$NAME/rest` → (`NAME`, `rest`).
fn variable(path: &str) -> (&str, &str) {
    let body = &path[1..];
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    (&body[..end], body[end..].trim_start_matches('/'))
}

/// Resolves one entry against the agent's environment (`lookup`) and the project root; `None`
/// when it names an unset variable or `~` without a `HOME`.
pub fn expand_path(
    path: &str,
    root: &Path,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    let joined = |base: String, rest: &str| {
        let base = PathBuf::from(base);
        Some(if rest.is_empty() {
            base
        } else {
            base.join(rest)
        })
    };
    if path == "~" || path.starts_with("~/") {
        let home = lookup("HOME").filter(|h| !h.is_empty())?;
        return joined(home, path.trim_start_matches('~').trim_start_matches('/'));
    }
    if path.starts_with('$') {
        let (name, rest) = variable(path);
        let value = lookup(name).filter(|v| !v.is_empty())?;
        return joined(value, rest);
    }
    Some(root.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_expand_against_the_agent_environment() {
        let env = |name: &str| match name {
            "HOME" => Some("/home/a".to_owned()),
            "CODEX_HOME" => Some("/srv/codex".to_owned()),
            _ => None,
        };
        let root = Path::new("/p");
        let cases = [
            ("~/.claude", Some("/home/a/.claude")),
            ("~", Some("/home/a")),
            ("$CODEX_HOME", Some("/srv/codex")),
            ("$CODEX_HOME/sessions", Some("/srv/codex/sessions")),
            ("$UNSET/x", None),
            ("/var/cache/x", Some("/var/cache/x")),
            ("build", Some("/p/build")),
        ];
        for (given, want) in cases {
            assert_eq!(
                expand_path(given, root, env),
                want.map(PathBuf::from),
                "{given}"
            );
        }
        assert_eq!(expand_path("~/.x", root, |_| None), None);
    }
}
