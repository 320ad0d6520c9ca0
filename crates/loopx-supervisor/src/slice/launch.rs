//! From the adapter's [`LaunchPlan`] to the PTY crate's [`LaunchSpec`], and the identity of the
//! spawned process.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use loopx_adapters::{LaunchPlan, PromptDelivery};
use loopx_kernel::{AgentName, SliceId, TodoId};
use loopx_pty::{EnvSpec, LaunchSpec, LogSpec, PromptFile, SliceLimits};

/// Who the slice is, for its environment.
#[derive(Debug, Clone)]
pub(crate) struct SliceEnv<'a> {
    pub project_root: &'a Path,
    pub slice: SliceId,
    pub agent: &'a AgentName,
    pub todo: Option<TodoId>,
    pub epoch: Option<u64>,
}

/// The `LOOPX_SLICE` marker: the slice id plus a digest of the project root (see
/// [`loopx_kernel::marker`], which `loopx report` uses to read it back).
pub(crate) fn marker(project_root: &Path, slice: SliceId) -> loopx_pty::SliceId {
    loopx_pty::SliceId::new(loopx_kernel::marker::slice_marker(project_root, slice))
        .expect("a kernel slice id and hex digits are a valid marker")
}

/// What loopx writes to the agent once it started.
#[derive(Debug)]
pub(crate) enum FirstInput {
    /// Nothing: the prompt is an argument or a file.
    Nothing,
    /// These bytes, typed into the terminal.
    Typed(Vec<u8>),
    /// The prompt, as the first line of the stream-json input on a stdin pipe that stays open
    /// (`live.rs`).
    Live(String),
}

/// How the prompt reaches the agent: a file written before the spawn, or what is written to
/// it once it started.
fn prompt_input(delivery: &PromptDelivery) -> (Option<PromptFile>, FirstInput) {
    match delivery {
        PromptDelivery::Argument => (None, FirstInput::Nothing),
        PromptDelivery::File { path, contents } => (
            Some(PromptFile {
                path: path.clone(),
                contents: contents.clone().into_bytes(),
            }),
            FirstInput::Nothing,
        ),
        // A terminal ends input with ^D at the start of a line.
        PromptDelivery::Stdin { contents } => (
            None,
            FirstInput::Typed(format!("{contents}\n\u{4}").into_bytes()),
        ),
        PromptDelivery::StreamJson { contents } => (None, FirstInput::Live(contents.clone())),
    }
}

/// The spec to spawn, and what to write to the agent once it started.
pub(crate) fn launch_spec(
    plan: &LaunchPlan,
    env: &SliceEnv<'_>,
    log: PathBuf,
    redactor: &loopx_kernel::Redactor,
) -> (LaunchSpec, FirstInput) {
    let mut set: Vec<(String, OsString)> = plan
        .env_set
        .iter()
        .map(|(k, v)| (k.clone(), OsString::from(v)))
        .collect();
    set.push(("LOOPX_PROJECT".into(), env.project_root.into()));
    set.push(("LOOPX_AGENT".into(), env.agent.as_str().into()));
    if let (Some(todo), Some(epoch)) = (env.todo, env.epoch) {
        set.push(("LOOPX_TODO".into(), todo.to_string().into()));
        set.push(("LOOPX_EPOCH".into(), epoch.to_string().into()));
    }
    let mut inherit = plan.env_allowlist.clone();
    inherit.extend(plan.secret_env_names.iter().cloned());
    let limits = &plan.limits;
    let (prompt, first) = prompt_input(&plan.prompt_delivery);
    let spec = LaunchSpec {
        slice_id: marker(env.project_root, env.slice),
        program: PathBuf::from(&plan.program),
        args: plan.args.iter().map(OsString::from).collect(),
        cwd: plan.workdir.clone(),
        env: EnvSpec { inherit, set },
        size: loopx_pty::TerminalSize::default(),
        limits: SliceLimits {
            wall: Some(limits.max_time),
            idle: Some(limits.idle_timeout),
            // The cap bounds the log; it stops the agent only when the profile asks for that.
            output_bytes: limits.kill_on_output.then_some(limits.max_output_bytes),
            grace: limits.grace,
            ..SliceLimits::default()
        },
        // Resource limits, sandbox and the helper applying them: `contain.rs`.
        resources: loopx_pty::ResourceLimits::default(),
        sandbox: loopx_pty::Sandbox::default(),
        exec_helper: None,
        // The log keeps the first and the last half of `max_output`, with a marker between
        // naming what was left out.
        log: LogSpec {
            mask: redactor
                .values()
                .iter()
                .map(|v| v.clone().into_bytes())
                .collect(),
            head_bytes: usize::try_from(limits.max_output_bytes / 2).unwrap_or(usize::MAX),
            tail_bytes: usize::try_from(limits.max_output_bytes.div_ceil(2)).unwrap_or(usize::MAX),
            ..LogSpec::new(log)
        },
        prompt,
        // A prompt typed into the terminal must not come back as the agent's output.
        echo: !matches!(first, FirstInput::Typed(_)),
        stdin: loopx_domain::launch::stdin(plan),
    };
    (spec, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_differ_between_projects() {
        let a = marker(Path::new("/p/a"), SliceId(1));
        let b = marker(Path::new("/p/b"), SliceId(1));
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("s1."));
    }
}
