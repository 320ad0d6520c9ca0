//! The validated profile.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::PermissionLevel;

/// Environment variables passed when a profile sets no `env.allow`.
pub const DEFAULT_ENV_ALLOW: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TMPDIR", "SHELL",
];

/// Placeholders a prompt template may use; the supervisor fills them.
pub const PROMPT_PLACEHOLDERS: [&str; 9] = [
    "agent",
    "role",
    "goal",
    "scope",
    "todo",
    "handoff",
    "gates",
    "evidence",
    "report_protocol",
];

/// The prompt template used when a profile sets none.
pub const DEFAULT_PROMPT_TEMPLATE: &str = "\
You are `{agent}`, working as {role} on this goal:
{goal}

You may change only: {scope}

Your task:
{todo}

Handoff from the previous slice:
{handoff}

Answered questions:
{gates}

Recent evidence:
{evidence}

{report_protocol}
";

/// Hard limits loopx enforces on one slice, whatever the agent's own flags.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceLimits {
    /// Wall-clock limit (default 30 min).
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub max_time: Duration,
    /// No output for this long means stalled (default 5 min).
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub idle_timeout: Duration,
    /// Between SIGTERM and SIGKILL (default 10 s).
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub grace: Duration,
    /// Bytes of output kept in the slice's log: its first and last halves (default 2 MiB).
    /// The parser reads all of it, in bounded memory.
    pub max_output_bytes: u64,
    /// Stop the slice (as `failed`) once it printed more than `max_output_bytes` (default
    /// off: a chatty agent is not a broken one).
    pub kill_on_output: bool,
    /// Agent turns, when the adapter can limit them.
    pub max_turns: Option<u32>,
    /// Tokens the slice may spend, set per slice by the decision (not by a profile): past it
    /// a window of the agent's account would go more than 25 % past its budget. loopx stops
    /// the slice once the usage the agent reports reaches it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Kernel limits on every process of the slice (`setrlimit`), each `None` unless set.
    pub resources: ResourceLimits,
}

/// Kernel resource limits a profile sets on each process of a slice (soft = hard, so the agent
/// cannot raise them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResourceLimits {
    /// `limits.memory`: bytes of data segment (`RLIMIT_DATA`) per process.
    pub memory_bytes: Option<u64>,
    /// `limits.file_size`: the largest file a process may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: Option<u64>,
    /// `limits.open_files`: open descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
    /// `limits.cpu_time`: seconds of CPU per process (`RLIMIT_CPU`).
    pub cpu_seconds: Option<u64>,
    /// `limits.processes`: processes of the whole slice at once (its cgroup's `pids.max`, or
    /// `RLIMIT_NPROC` in its user namespace); [`DEFAULT_PROCESSES`] unless set.
    pub processes: u64,
    /// `limits.memory_total`: bytes of memory of the whole slice (its cgroup's memory limit;
    /// not enforced without a cgroup).
    pub memory_total_bytes: Option<u64>,
}

/// `limits.processes` when a profile does not set it: far more than an agent and its tools
/// run at once, and a bound on a fork bomb.
pub const DEFAULT_PROCESSES: u64 = 1024;

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            memory_bytes: None,
            file_size_bytes: None,
            open_files: None,
            cpu_seconds: None,
            processes: DEFAULT_PROCESSES,
            memory_total_bytes: None,
        }
    }
}

impl Default for SliceLimits {
    fn default() -> Self {
        Self {
            max_time: Duration::from_secs(30 * 60),
            idle_timeout: Duration::from_secs(5 * 60),
            grace: Duration::from_secs(10),
            max_output_bytes: 2 << 20,
            kill_on_output: false,
            max_turns: None,
            max_tokens: None,
            resources: ResourceLimits::default(),
        }
    }
}

/// One token or cost window, like the vendors' (`tokens = 2_000_000` per `window = "5h"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuotaWindow {
    /// The window length; it resets in full at its end.
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub window: Duration,
    /// Tokens allowed per window.
    pub tokens: Option<u64>,
    /// US dollars allowed per window.
    pub cost_usd: Option<f64>,
}

/// Pacing and windows for this agent (`docs/quota.md`, "The constraints").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuotaSettings {
    /// Vendor holds are keyed by account, so profiles sharing a subscription pause together
    /// (default: the adapter name).
    pub account: String,
    /// Pacing; `None` means unpaced.
    pub slices_per_hour: Option<u32>,
    /// Slices allowed back to back (default 1).
    pub burst: u32,
    /// Token and cost windows.
    pub windows: Vec<QuotaWindow>,
}

/// What reaches the agent's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvPolicy {
    /// Names passed through from loopx's environment when present.
    pub allow: Vec<String>,
    /// Credential names: passed when present, values redacted everywhere.
    pub secrets: Vec<String>,
    /// Fixed values.
    pub set: BTreeMap<String, String>,
}

/// A validated profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// The name (file stem).
    pub name: String,
    /// One line for `loopx profile list`.
    pub description: String,
    /// The adapter name.
    pub adapter: String,
    /// The model, passed through the adapter's `options.model`.
    pub model: Option<String>,
    /// Which todos this agent takes (`executor`, `reviewer`, `planner`, …).
    pub role: Option<String>,
    /// What it can do, matched against a todo's `needs`.
    pub capabilities: Vec<String>,
    /// The highest level this profile may run at.
    pub permission: PermissionLevel,
    /// Overrides the adapter's program (required for adapters without one).
    pub program: Option<String>,
    /// Appended where the adapter's `{flags}` goes.
    pub extra_args: Vec<String>,
    /// Working directory, relative to the project root.
    pub workdir: PathBuf,
    /// When a slice's todo counts as done.
    pub done_when: crate::DoneWhen,
    /// The prompt template.
    pub prompt_template: String,
    /// Slice limits.
    pub limits: SliceLimits,
    /// Quota settings.
    pub quota: QuotaSettings,
    /// Environment policy.
    pub env: EnvPolicy,
    /// How the slice is contained.
    pub sandbox: crate::SandboxPolicy,
    /// Where it was loaded from.
    pub file: String,
}

/// SHA-256 over a profile's bytes and its adapter's bytes: any edit to either changes it, so an
/// approval bound to it (for `full`) asks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ContentHash(#[serde(serialize_with = "hex")] pub [u8; 32]);

impl ContentHash {
    /// Hash of a profile file and its adapter file. Lengths are included so no two different
    /// pairs of files can produce the same input.
    pub fn of(profile_bytes: &[u8], adapter_bytes: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"loopx-profile-v1\0");
        hasher.update((profile_bytes.len() as u64).to_le_bytes());
        hasher.update(profile_bytes);
        hasher.update((adapter_bytes.len() as u64).to_le_bytes());
        hasher.update(adapter_bytes);
        Self(hasher.finalize().into())
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

fn hex<S: serde::Serializer>(bytes: &[u8; 32], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&ContentHash(*bytes))
}

/// Fill a prompt template. Unknown `{names}` were refused when the profile loaded; missing
/// values render as empty so a template never leaks a raw placeholder to the agent.
pub fn render_prompt(template: &str, values: &BTreeMap<&str, String>) -> String {
    crate::config::fill_placeholders(template, |name| {
        PROMPT_PLACEHOLDERS
            .contains(&name)
            .then(|| values.get(name).map_or("", String::as_str))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_placeholders_are_filled_and_other_braces_kept() {
        let values = BTreeMap::from([("goal", "ship it".to_owned())]);
        let out = render_prompt("Goal: {goal}; json {\"a\":1}; todo: {todo}.", &values);
        assert_eq!(out, "Goal: ship it; json {\"a\":1}; todo: .");
    }

    #[test]
    fn content_hash_changes_with_either_file() {
        let base = ContentHash::of(b"p", b"a");
        assert_ne!(base, ContentHash::of(b"p ", b"a"));
        assert_ne!(base, ContentHash::of(b"p", b"a "));
        // Moving bytes from one file to the other must not collide.
        assert_ne!(ContentHash::of(b"pa", b""), ContentHash::of(b"p", b"a"));
        assert_eq!(base.to_string().len(), 64);
    }
}
