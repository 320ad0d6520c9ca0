//! The serde shape of an adapter file. Every leaf is [`Checked`] so a wrong type is a located
//! problem, and no field is flattened or untagged.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::{Checked, DurationText};

#[derive(Debug, Deserialize)]
pub(crate) struct RawAdapter {
    pub(crate) description: Option<Checked<String>>,
    pub(crate) login: Option<Checked<String>>,
    pub(crate) login_files: Option<Checked<Vec<String>>>,
    pub(crate) install: Option<Checked<String>>,
    pub(crate) program: Option<Checked<String>>,
    pub(crate) args: Option<Checked<Vec<String>>>,
    pub(crate) output: Option<Checked<String>>,
    pub(crate) prompt: Option<RawPrompt>,
    pub(crate) options: Option<RawOptions>,
    pub(crate) permissions: Option<RawPermissions>,
    pub(crate) health: Option<RawHealth>,
    pub(crate) env: Option<RawAdapterEnv>,
    pub(crate) process: Option<RawProcess>,
    pub(crate) sandbox: Option<RawAdapterSandbox>,
    pub(crate) signals: Option<Vec<RawSignal>>,
    pub(crate) exit_codes: Option<BTreeMap<String, Checked<String>>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawPrompt {
    pub(crate) delivery: Option<Checked<String>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawOptions {
    pub(crate) model: Option<Checked<Vec<String>>>,
    pub(crate) max_turns: Option<Checked<Vec<String>>>,
    pub(crate) workdir: Option<Checked<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawPermissions {
    #[serde(rename = "read-only")]
    pub(crate) read_only: Option<Checked<Vec<String>>>,
    #[serde(rename = "workspace-write")]
    pub(crate) workspace_write: Option<Checked<Vec<String>>>,
    pub(crate) full: Option<Checked<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawHealth {
    pub(crate) args: Option<Checked<Vec<String>>>,
    pub(crate) expect: Option<Checked<String>>,
    pub(crate) timeout: Option<Checked<DurationText>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawAdapterEnv {
    pub(crate) pass: Option<Checked<Vec<String>>>,
    pub(crate) secrets: Option<Checked<Vec<String>>>,
    pub(crate) set: Option<Checked<BTreeMap<String, String>>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawAdapterSandbox {
    pub(crate) writable: Option<Checked<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawProcess {
    pub(crate) stdin: Option<Checked<String>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawSignal {
    pub(crate) kind: Option<Checked<String>>,
    pub(crate) pattern: Option<Checked<String>>,
    pub(crate) on: Option<Checked<String>>,
}

/// Known keys per table, for "did you mean" hints on unknown keys.
pub(crate) fn known_keys(path: &[&str]) -> &'static [&'static str] {
    match path {
        [] => &[
            "description",
            "login",
            "login_files",
            "install",
            "program",
            "args",
            "output",
            "prompt",
            "options",
            "permissions",
            "health",
            "env",
            "process",
            "sandbox",
            "signals",
            "exit_codes",
        ],
        ["prompt"] => &["delivery"],
        ["options"] => &["model", "max_turns", "workdir"],
        ["permissions"] => &["read-only", "workspace-write", "full"],
        ["health"] => &["args", "expect", "timeout"],
        ["env"] => &["pass", "secrets", "set"],
        ["process"] => &["stdin"],
        ["sandbox"] => &["writable"],
        ["signals"] => &["kind", "pattern", "on"],
        _ => &[],
    }
}
