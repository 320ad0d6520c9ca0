//! The serde shape of a profile file.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::{Checked, DurationText, SizeValue};

#[derive(Debug, Deserialize)]
pub(crate) struct RawProfile {
    pub(crate) description: Option<Checked<String>>,
    pub(crate) adapter: Option<Checked<String>>,
    pub(crate) model: Option<Checked<String>>,
    pub(crate) role: Option<Checked<String>>,
    pub(crate) capabilities: Option<Checked<Vec<String>>>,
    pub(crate) permission: Option<Checked<String>>,
    pub(crate) program: Option<Checked<String>>,
    pub(crate) extra_args: Option<Checked<Vec<String>>>,
    pub(crate) workdir: Option<Checked<String>>,
    pub(crate) done_when: Option<Checked<String>>,
    pub(crate) done_pattern: Option<Checked<String>>,
    pub(crate) prompt: Option<RawPromptSettings>,
    pub(crate) limits: Option<RawLimits>,
    pub(crate) quota: Option<RawQuota>,
    pub(crate) env: Option<RawEnv>,
    pub(crate) sandbox: Option<RawSandbox>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawSandbox {
    pub(crate) mode: Option<Checked<String>>,
    pub(crate) writable: Option<Checked<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawPromptSettings {
    pub(crate) template: Option<Checked<String>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawLimits {
    pub(crate) max_time: Option<Checked<DurationText>>,
    pub(crate) idle_timeout: Option<Checked<DurationText>>,
    pub(crate) grace: Option<Checked<DurationText>>,
    pub(crate) max_output: Option<Checked<SizeValue>>,
    pub(crate) kill_on_output: Option<Checked<bool>>,
    pub(crate) max_turns: Option<Checked<u32>>,
    pub(crate) memory: Option<Checked<SizeValue>>,
    pub(crate) file_size: Option<Checked<SizeValue>>,
    pub(crate) open_files: Option<Checked<u64>>,
    pub(crate) cpu_time: Option<Checked<DurationText>>,
    pub(crate) processes: Option<Checked<u64>>,
    pub(crate) memory_total: Option<Checked<SizeValue>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawQuota {
    pub(crate) account: Option<Checked<String>>,
    pub(crate) slices_per_hour: Option<Checked<u32>>,
    pub(crate) burst: Option<Checked<u32>>,
    pub(crate) windows: Option<Vec<RawWindow>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawWindow {
    pub(crate) window: Option<Checked<DurationText>>,
    pub(crate) tokens: Option<Checked<u64>>,
    pub(crate) cost_usd: Option<Checked<f64>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RawEnv {
    pub(crate) allow: Option<Checked<Vec<String>>>,
    pub(crate) secrets: Option<Checked<Vec<String>>>,
    pub(crate) set: Option<Checked<BTreeMap<String, String>>>,
}

/// Known keys per table, for "did you mean" hints on unknown keys.
pub(crate) fn known_keys(path: &[&str]) -> &'static [&'static str] {
    match path {
        [] => &[
            "description",
            "adapter",
            "model",
            "role",
            "capabilities",
            "permission",
            "program",
            "extra_args",
            "workdir",
            "done_when",
            "done_pattern",
            "prompt",
            "limits",
            "quota",
            "env",
            "sandbox",
        ],
        ["prompt"] => &["template"],
        ["limits"] => &[
            "max_time",
            "idle_timeout",
            "grace",
            "max_output",
            "kill_on_output",
            "max_turns",
            "memory",
            "file_size",
            "open_files",
            "cpu_time",
            "processes",
            "memory_total",
        ],
        ["quota"] => &["account", "slices_per_hour", "burst", "windows"],
        ["quota", "windows"] => &["window", "tokens", "cost_usd"],
        ["env"] => &["allow", "secrets", "set"],
        ["sandbox"] => &["mode", "writable"],
        _ => &[],
    }
}
