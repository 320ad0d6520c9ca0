//! What `loopx profile list|show|check` and `loopx adapter test` need, as plain data for the
//! CLI to render (human or `--json`). Nothing here prints, and nothing spawns: the health
//! check is returned as a [`HealthProbe`] for the caller to run, and its output is judged by
//! [`judge_health`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use crate::PermissionLevel;
use crate::adapter::{Adapter, AdapterCatalog};
use crate::classify::classify;
use crate::errors::{LoadError, Problem};
use crate::event::{AgentEvent, LimitStatus};
use crate::fixtures::{RecordedStream, streams_for};
use crate::parse::Parser;
use crate::profile::{LoadedProfile, load_profile_file, load_profiles_dir};

/// One line of `loopx profile list`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileListing {
    /// Name.
    pub name: String,
    /// File.
    pub file: PathBuf,
    /// Adapter, role, permission, model, when the profile is valid.
    pub adapter: Option<String>,
    /// Role.
    pub role: Option<String>,
    /// Permission level.
    pub permission: Option<PermissionLevel>,
    /// Model.
    pub model: Option<String>,
    /// Content hash (hex).
    pub content_hash: Option<String>,
    /// `file:line:column: message` lines when invalid.
    pub problems: Vec<String>,
}

/// `loopx profile list`: every profile in `dir`, valid or not.
pub fn list_profiles(
    dir: &Path,
    catalog: &AdapterCatalog,
) -> Result<Vec<ProfileListing>, LoadError> {
    Ok(load_profiles_dir(dir, catalog)?
        .into_iter()
        .map(|entry| match entry.result {
            Ok(loaded) => ProfileListing {
                name: entry.name,
                file: entry.path,
                adapter: Some(loaded.adapter.name.clone()),
                role: loaded.profile.role.clone(),
                permission: Some(loaded.profile.permission),
                model: loaded.profile.model.clone(),
                content_hash: Some(loaded.content_hash.to_string()),
                problems: Vec::new(),
            },
            Err(err) => ProfileListing {
                name: entry.name,
                file: entry.path,
                adapter: None,
                role: None,
                permission: None,
                model: None,
                content_hash: None,
                problems: problem_lines(&err),
            },
        })
        .collect())
}

/// The result of checking one file (`loopx profile check [FILE]`).
#[derive(Debug, Serialize)]
pub struct CheckResult {
    /// The file.
    pub file: PathBuf,
    /// Whether it is valid.
    pub ok: bool,
    /// Located problems (empty for errors without a location, see `error`).
    pub problems: Vec<Problem>,
    /// The full rendering (miette, no colour) for humans, when invalid.
    pub rendered: Option<String>,
}

/// `loopx profile check FILE`.
pub fn check_profile_file(path: &Path, catalog: &AdapterCatalog) -> CheckResult {
    match load_profile_file(path, catalog) {
        Ok(_) => CheckResult {
            file: path.to_owned(),
            ok: true,
            problems: Vec::new(),
            rendered: None,
        },
        Err(err) => {
            let (problems, rendered) = match &err {
                LoadError::Invalid(invalid) => (invalid.problems.clone(), invalid.render_plain()),
                other => (Vec::new(), other.to_string()),
            };
            CheckResult {
                file: path.to_owned(),
                ok: false,
                problems,
                rendered: Some(rendered),
            }
        }
    }
}

/// `loopx profile check` without a file: every profile in `dir`.
pub fn check_profiles_dir(
    dir: &Path,
    catalog: &AdapterCatalog,
) -> Result<Vec<CheckResult>, LoadError> {
    Ok(load_profiles_dir(dir, catalog)?
        .into_iter()
        .map(|e| check_profile_file(&e.path, catalog))
        .collect())
}

fn problem_lines(err: &LoadError) -> Vec<String> {
    match err {
        LoadError::Invalid(invalid) => invalid.problems.iter().map(Problem::one_line).collect(),
        // The error with its causes on one line: "failed to read `x.toml`: x.toml is a FIFO…".
        other => {
            let mut line = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                line.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            vec![line]
        }
    }
}

/// One recorded stream replayed through an adapter's parser.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    /// The stream (path under `tests/fixtures/streams/`).
    pub stream: &'static str,
    /// Expected outcome, when the stream has one.
    pub expected: Option<&'static str>,
    /// What the classifier said.
    pub got: &'static str,
    /// Expected reset time.
    pub expected_resets_at: Option<Timestamp>,
    /// Reset time of the strongest limit signal.
    pub got_resets_at: Option<Timestamp>,
    /// Whether both match.
    pub passed: bool,
    /// The signals recognised, e.g. `session`, `usage`, `retry`, `limit:rejected`.
    pub signals: Vec<String>,
}

/// How to run the health check (the caller spawns it).
#[derive(Debug, Clone, Serialize)]
pub struct HealthProbe {
    /// Program.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Timeout.
    #[serde(serialize_with = "crate::config::serialize_duration")]
    pub timeout: Duration,
}

/// `loopx adapter test PROFILE`: the replays, and the health check to run.
#[derive(Debug, Clone, Serialize)]
pub struct AdapterTest {
    /// Adapter name.
    pub adapter: String,
    /// Replays of every recorded stream for its output format.
    pub replays: Vec<Replay>,
    /// The health check to run.
    pub health: HealthProbe,
}

/// Replay the recorded streams for `loaded`'s adapter and describe its health check.
pub fn adapter_test(loaded: &LoadedProfile, loopx_exe: &Path) -> AdapterTest {
    let adapter = &loaded.adapter;
    let program = loaded
        .profile
        .program
        .clone()
        .or_else(|| adapter.program.clone())
        .unwrap_or_default();
    AdapterTest {
        adapter: adapter.name.clone(),
        replays: streams_for(adapter.output)
            .map(|s| replay(adapter, s))
            .collect(),
        health: HealthProbe {
            program: program.replace("{loopx}", &loopx_exe.display().to_string()),
            args: adapter.health.args.clone(),
            timeout: adapter.health.timeout,
        },
    }
}

/// Replay one recorded stream through `adapter`'s parser (with the stream's own format).
pub fn replay(adapter: &Adapter, stream: &RecordedStream) -> Replay {
    let now: Timestamp = stream.now.parse().unwrap_or(Timestamp::UNIX_EPOCH);
    let mut parser = Parser::for_adapter(adapter).with_format(stream.format);
    let mut signals: Vec<String> = Vec::new();
    for contents in stream.contents {
        for line in contents.lines() {
            parser
                .feed_line(line, now)
                .iter()
                .for_each(|e| note(e, &mut signals));
        }
    }
    parser
        .finish(now)
        .iter()
        .for_each(|e| note(e, &mut signals));
    let summary = parser.into_summary();
    let got = classify(&summary, stream.exit_code).outcome.as_str();
    let got_resets_at = summary.limit.as_ref().and_then(|l| l.resets_at);
    let expected_resets_at = stream.resets_at.and_then(|t| t.parse().ok());
    let passed = stream.outcome.is_none_or(|o| o == got)
        && (expected_resets_at.is_none() || expected_resets_at == got_resets_at);
    Replay {
        stream: stream.path,
        expected: stream.outcome,
        got,
        expected_resets_at,
        got_resets_at,
        passed,
        signals,
    }
}

fn note(event: &AgentEvent, signals: &mut Vec<String>) {
    let name = match event {
        AgentEvent::Session { .. } => "session".to_owned(),
        AgentEvent::Usage { .. } => "usage".to_owned(),
        AgentEvent::Cost { .. } => "cost".to_owned(),
        AgentEvent::ToolCall { .. } => "tool_call".to_owned(),
        AgentEvent::Message { .. } => "message".to_owned(),
        AgentEvent::Retry { .. } => "retry".to_owned(),
        AgentEvent::Limit(l) => match l.status {
            LimitStatus::Rejected if l.resets_at.is_some() => "limit:rejected+reset".to_owned(),
            LimitStatus::Rejected => "limit:rejected".to_owned(),
            LimitStatus::Warning => "limit:warning".to_owned(),
            LimitStatus::Allowed => "limit:allowed".to_owned(),
        },
        AgentEvent::AuthFailed { .. } => "auth_failed".to_owned(),
        AgentEvent::ContextOverflow { .. } => "context_overflow".to_owned(),
        AgentEvent::Waiting { kind, .. } => format!("waiting:{kind:?}").to_lowercase(),
        AgentEvent::Error { .. } => "error".to_owned(),
        AgentEvent::Finished(f) => format!("finished:{:?}", f.kind).to_lowercase(),
        AgentEvent::InputUsed { .. } => "input_used".to_owned(),
    };
    if !signals.contains(&name) {
        signals.push(name);
    }
}

/// What the health check showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthVerdict {
    /// Whether the CLI answered as expected.
    pub ok: bool,
    /// The first version-like string in its output.
    pub version: Option<String>,
    /// Why not, when not ok.
    pub reason: Option<String>,
}

/// Judge the health check's exit code and output (stdout and stderr together).
pub fn judge_health(adapter: &Adapter, exit_code: Option<i32>, output: &str) -> HealthVerdict {
    let version = regex::Regex::new(r"\d+\.\d+(?:\.\d+)?")
        .ok()
        .and_then(|re| re.find(output).map(|m| m.as_str().to_owned()));
    let reason = match (exit_code, &adapter.health.expect) {
        (Some(0), Some(re)) if !re.is_match(output) => {
            Some(format!("output does not match `{}`", re.as_str()))
        }
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("exited {code}")),
        (None, _) => Some("killed by a signal or timed out".to_owned()),
    };
    HealthVerdict {
        ok: reason.is_none(),
        version,
        reason,
    }
}
