//! The rules of polling a monitor: the checks loopx runs itself, with no agent and no quota
//! (`docs/monitors.md`). The supervisor runs each check in its containment and calls these.
//!
//! - Which monitors are due ([`due`]), in what order (a person's first, then the agents' checks
//!   in a share of the round), how many in one round, and when the next is ([`next_due`]).
//! - What a check may do: its time limit (a tenth of the cadence, 10 s to 5 min, and at most
//!   10 s for an agent's check) and output cap (64 KiB: more is a flood, and a failed poll);
//!   its launch plan ([`plan`], [`check_spec`]): `sh -c CHECK` read-only and sandboxed, with
//!   loopx's base environment allowlist plus, for a check a person gave a profile, that
//!   profile's allowlist, secrets and sandbox settings (still read-only); an agent's check never
//!   has one, but runs under its agent's resource limits.
//! - The claim that keeps two supervisors from running one check at once ([`claim`]), the
//!   files a person's check is pinned to ([`pinned`]), the record of what it saw ([`record`]),
//!   and what that means for `loopx run` ([`PollSummary`]).

use std::ffi::OsString;
use std::str::FromStr;
use std::time::Duration;

use loopx_adapters::{
    AdapterCatalog, DEFAULT_ENV_ALLOW, LaunchPlan, OutputFormat, PermissionLevel, PromptDelivery,
    ResourceLimits, SandboxMode, SandboxPolicy, StdinMode,
};
use loopx_kernel::model::{Agent, Monitor, Pin, Todo, check_limit_ms, output_hash};
use loopx_kernel::store::{ClaimPoll, RecordPoll, Snapshot};
use loopx_kernel::{AgentName, GateId, KernelError, Project, Timestamp, TodoId};
use loopx_pty::{EnvSpec, LaunchSpec, LogSpec, SliceExit};
use serde::Serialize;

/// The most output a check may print: more is a flood (a failed poll).
pub const CHECK_OUTPUT_CAP: u64 = 64 * 1024;
/// The most polls one round runs; the rest come in the next round, at once.
const MAX_POLLS_PER_ROUND: usize = 16;
/// The longest an agent's check may run (a person's gets a tenth of its cadence, up to five
/// minutes): five agent checks that only slept held a person's 10 s monitor 50 s.
const AGENT_CHECK_LIMIT: Duration = Duration::from_secs(10);
/// How long the agents' checks may take of one round, after every person's monitor due in it
/// was polled; the rest wait for the next round.
pub const AGENT_SHARE_OF_A_ROUND: Duration = Duration::from_secs(10);
/// How long a poll's claim outlasts its check's time limit.
const CLAIM_MARGIN: Duration = Duration::from_secs(30);

/// One poll, as `loopx run` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PollSummary {
    pub todo: TodoId,
    pub title: String,
    /// `met`, `not yet`, `failed`, or `asked` (expired, or failing: a person is asked).
    pub result: String,
    pub exit: Option<i32>,
    /// The monitor's next poll, when it goes on.
    pub next_at: Option<Timestamp>,
    /// The gate asking a person, if one is open now.
    pub gate: Option<GateId>,
}

impl PollSummary {
    /// A claimed monitor that already waits on a person: nothing was run.
    pub fn asked(todo: &Todo, gate: GateId) -> PollSummary {
        PollSummary::of(todo, "asked", None, Some(gate))
    }

    /// What the recorded poll means, from the monitor as the record left it.
    pub fn recorded(after: &Todo, exit: Option<i32>) -> PollSummary {
        let monitor = after.monitor.as_deref();
        let result = monitor
            .and_then(Monitor::last)
            .map_or("failed", |o| o.verdict.as_str());
        PollSummary::of(after, result, exit, monitor.and_then(|m| m.asked))
    }

    fn of(todo: &Todo, result: &str, exit: Option<i32>, gate: Option<GateId>) -> PollSummary {
        PollSummary {
            todo: todo.id,
            title: todo.title.clone(),
            result: if gate.is_some() && result != "met" {
                "asked".to_owned()
            } else {
                result.to_owned()
            },
            exit,
            next_at: todo
                .monitor
                .as_ref()
                .filter(|m| m.asked.is_none() && !todo.state.is_final())
                .map(|m| m.next_at),
            gate,
        }
    }
}

/// What a round of polls did, and when the next is due.
#[derive(Debug, Clone, Default)]
pub struct Polled {
    pub polls: Vec<PollSummary>,
    /// The earliest next poll of any monitor not waiting on a person.
    pub next_due: Option<Timestamp>,
}

/// What a check did.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub exit: Option<i32>,
    /// Why the poll failed whatever its exit.
    pub failed: Option<String>,
    /// What it printed, as text: terminal escapes stripped and secrets redacted (the slice's
    /// rules: its profile's secrets, and loopx's own environment it was not given).
    pub output: Vec<u8>,
}

impl CheckRun {
    /// A check that did not run, or whose run does not count, and why.
    pub fn failed(why: String) -> CheckRun {
        CheckRun {
            exit: None,
            failed: Some(why),
            output: Vec::new(),
        }
    }

    /// A check that ran to `end` (or whose end was not seen: why), having printed `output`.
    pub fn ended(end: Result<SliceExit, String>, output: Vec<u8>) -> CheckRun {
        let (exit, failed) = match end {
            Ok(SliceExit::Exited(code)) => (Some(code), None),
            Ok(SliceExit::TimedOut) => (None, Some("the check ran past its time limit".to_owned())),
            Ok(SliceExit::OutputCapped) => (
                None,
                Some(format!(
                    "the check printed more than {CHECK_OUTPUT_CAP} bytes"
                )),
            ),
            Ok(other) => (
                None,
                Some(format!("the check ended without an exit code: {other:?}")),
            ),
            Err(why) => (None, Some(format!("the check's end was not seen: {why}"))),
        };
        CheckRun {
            exit,
            failed,
            output,
        }
    }
}

/// Whether an agent reported this monitor (its check is that agent's code).
pub fn by_an_agent(todo: &Todo) -> bool {
    loopx_vocab::Actor::of(&todo.created_by).is_agent()
}

/// The active goals' monitors that may be polled (every dependency finished).
pub fn monitors(s: &Snapshot<'_>) -> Result<Vec<Todo>, KernelError> {
    let mut monitors = Vec::new();
    for goal in s.active_goals()? {
        monitors.extend(s.monitors(goal.id)?);
    }
    Ok(monitors)
}

/// The monitors of `monitors` due at `now`, in the order a round polls them: a person's
/// first, then the agents' checks, each the earliest due first; at most a round's worth, so a
/// flood of monitors waits its turn rather than holding the round (and a stop) for long.
pub fn due(monitors: Vec<Todo>, now: Timestamp) -> Vec<Todo> {
    let mut due: Vec<Todo> = monitors
        .into_iter()
        .filter(|t| t.monitor.as_ref().is_some_and(|m| m.due(now)))
        .collect();
    due.sort_by_key(|t| (by_an_agent(t), t.monitor.as_ref().map(|m| m.next_due())));
    due.truncate(MAX_POLLS_PER_ROUND);
    due
}

/// The earliest next poll among `monitors` that are not waiting on a person.
pub fn next_due(monitors: &[Todo]) -> Option<Timestamp> {
    monitors
        .iter()
        .filter_map(|t| t.monitor.as_ref())
        .filter(|m| m.asked.is_none())
        .map(|m| match &m.poll {
            // Being polled elsewhere: look again when that claim ends.
            Some(lease) => lease.expires_at.max(m.next_due()),
            None => m.next_due(),
        })
        .min()
}

/// How long `todo`'s check may run.
pub fn check_limit(todo: &Todo, monitor: &Monitor) -> Duration {
    let limit = Duration::from_millis(check_limit_ms(monitor.every_ms));
    if by_an_agent(todo) {
        limit.min(AGENT_CHECK_LIMIT)
    } else {
        limit
    }
}

/// The claim on `todo`'s poll that keeps a peer from running the same check meanwhile.
pub fn claim(todo: &Todo, limit: Duration) -> ClaimPoll {
    ClaimPoll {
        todo: todo.id,
        by: AgentName::from_str(crate::approval::ACTOR).expect("`loopx` is a valid name"),
        ttl: limit + CLAIM_MARGIN,
    }
}

/// Runs `check` only if the files a person's check is pinned to (`pin.rs`) are as the person
/// saw them: changed before the poll, it is not run; changed while it ran, what it said is not
/// taken. Returns what it did, and the pinned files that changed.
pub fn pinned(
    root: &std::path::Path,
    pins: &[Pin],
    check: impl FnOnce() -> CheckRun,
) -> (CheckRun, Vec<Pin>) {
    let mut changed = crate::pin::changed(root, pins);
    if !changed.is_empty() {
        let unrun = CheckRun {
            exit: None,
            failed: None,
            output: Vec::new(),
        };
        return (unrun, changed);
    }
    let before = crate::pin::stamps(root, pins);
    let ran = check();
    changed = crate::pin::changed(root, pins);
    if changed.is_empty() && crate::pin::stamps(root, pins) != before {
        changed = crate::pin::touched(root, pins);
    }
    (ran, changed)
}

/// What a poll records: what the check saw, or, when pinned files changed, which (the check's
/// word is not taken, and a person is asked).
pub fn record(
    root: &std::path::Path,
    claimed: &Todo,
    check: &CheckRun,
    changed: Vec<Pin>,
) -> RecordPoll {
    if changed.is_empty() {
        RecordPoll {
            todo: claimed.id,
            epoch: claimed.epoch,
            exit: check.exit,
            failed: check.failed.clone(),
            hash: output_hash(&check.output),
            tail: String::from_utf8_lossy(&check.output).into_owned(),
            changed,
        }
    } else {
        RecordPoll {
            todo: claimed.id,
            epoch: claimed.epoch,
            exit: None,
            failed: None,
            hash: String::new(),
            tail: crate::pin::describe(root, &changed),
            changed,
        }
    }
}

/// The plan `todo`'s check runs under ([`check_plan`]), with the resource limits of its writer
/// ([`writer_resources`], whose record `read_agent` reads); `Err(why)`: it is not run.
pub fn plan(
    project: &Project,
    todo: &Todo,
    monitor: &Monitor,
    limit: Duration,
    read_agent: impl FnOnce(&str) -> Result<Option<Agent>, KernelError>,
) -> Result<LaunchPlan, String> {
    let resources = writer_resources(project, todo, read_agent)?;
    check_plan(project, monitor, limit, resources)
}

/// The resource limits a check runs under: an agent's check (a monitor it reported) under the
/// limits of that agent's profile, since it is that agent's code (it ran 105 processes and
/// 600 MiB under a profile allowing 20 and 200 MiB, with the defaults); a person's under the
/// defaults (`None`). An agent's whose profile no longer loads is not run: `Err(why)`.
/// `read_agent` reads an agent's record.
fn writer_resources(
    project: &Project,
    todo: &Todo,
    read_agent: impl FnOnce(&str) -> Result<Option<Agent>, KernelError>,
) -> Result<Option<ResourceLimits>, String> {
    let Some(name) = loopx_vocab::Actor::of(&todo.created_by).agent() else {
        return Ok(None);
    };
    let agent = read_agent(name)
        .map_err(|e| format!("cannot read agent `{name}`, whose check this is: {e}"))?
        .ok_or_else(|| {
            format!(
                "agent `{name}`, whose check this is, is gone: a person may run it as their own"
            )
        })?;
    let state = project.state_dir();
    let catalog = AdapterCatalog::with_dir(state.join("adapters"));
    let loaded = loopx_adapters::find_profile(&state.join("profiles"), &agent.profile, &catalog)
        .map_err(|e| {
            format!(
                "the profile `{}` of agent `{name}`, whose check this is, does not load: {e}",
                agent.profile
            )
        })?;
    Ok(Some(loaded.profile.limits.resources))
}

/// The profile a person gave the check, if any.
fn check_profile(project: &Project, monitor: &Monitor) -> Option<loopx_adapters::LoadedProfile> {
    let name = monitor.profile.as_deref()?;
    let state = project.state_dir();
    let catalog = AdapterCatalog::with_dir(state.join("adapters"));
    loopx_adapters::find_profile(&state.join("profiles"), name, &catalog)
        .inspect_err(
            |e| tracing::warn!(profile = name, error = %e, "cannot load a monitor's profile"),
        )
        .ok()
}

/// The plan a check runs under: `sh -c CHECK` in the project's tree, read-only and sandboxed
/// unless a person gave it a profile.
fn check_plan(
    project: &Project,
    monitor: &Monitor,
    limit: Duration,
    resources: Option<ResourceLimits>,
) -> Result<LaunchPlan, String> {
    let mut allow: Vec<String> = DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect();
    let mut secrets = Vec::new();
    let permission = PermissionLevel::ReadOnly;
    let mut sandbox = SandboxPolicy {
        mode: SandboxMode::Auto,
        writable: Vec::new(),
    };
    if let Some(name) = &monitor.profile {
        let loaded = check_profile(project, monitor).ok_or_else(|| {
            format!("the monitor's profile `{name}` cannot be loaded (`loopx profile show {name}` says why)")
        })?;
        let profile = loaded.profile;
        allow.extend(profile.env.allow);
        secrets = profile.env.secrets;
        // Still read-only: a check looks, and a check that could write the project could
        // rewrite a script a later poll runs with the profile's secrets. The profile's own
        // writable paths (its CLI's state) stay writable.
        sandbox = profile.sandbox;
    }
    Ok(LaunchPlan {
        program: "/bin/sh".to_owned(),
        args: vec!["-c".to_owned(), monitor.check.clone()],
        workdir: project.root().to_owned(),
        env_allowlist: allow,
        secret_env_names: secrets,
        env_set: Default::default(),
        prompt_delivery: PromptDelivery::Argument,
        stdin: StdinMode::Null,
        output: OutputFormat::Text,
        permission,
        requires_approval: false,
        content_hash: loopx_adapters::ContentHash([0; 32]),
        sandbox,
        limits: loopx_adapters::SliceLimits {
            max_time: limit,
            idle_timeout: limit,
            grace: Duration::from_secs(2),
            max_output_bytes: CHECK_OUTPUT_CAP,
            kill_on_output: true,
            max_turns: None,
            max_tokens: None,
            resources: resources.unwrap_or_default(),
        },
    })
}

/// What the launch `spec` of `todo`'s check under `plan` holds: `sh -c CHECK`, its time limit
/// and output cap (more is a flood, stopped), and its environment: the plan's allowlist and
/// secrets, and what it knows of its monitor.
pub fn check_spec(spec: &mut LaunchSpec, todo: &Todo, monitor: &Monitor, plan: &LaunchPlan) {
    spec.args = plan.args.iter().map(OsString::from).collect();
    // A check that reads its stdin reads end-of-file, never waits on a terminal.
    spec.stdin = crate::launch::stdin(plan);
    let mut set = vec![("LOOPX_MONITOR", todo.id.to_string())];
    if let Some(last) = monitor.last() {
        let exit = last.exit.map_or_else(String::new, |c| c.to_string());
        set.push(("LOOPX_PREVIOUS_EXIT", exit));
        set.push(("LOOPX_PREVIOUS_RESULT", last.verdict.as_str().to_owned()));
        set.push(("LOOPX_PREVIOUS_OUTPUT", last.tail.clone()));
    }
    let mut inherit = plan.env_allowlist.clone();
    inherit.extend(plan.secret_env_names.iter().cloned());
    let set = set
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    spec.env = EnvSpec { inherit, set };
    spec.limits = loopx_pty::SliceLimits {
        wall: Some(plan.limits.max_time),
        idle: None,
        output_bytes: Some(CHECK_OUTPUT_CAP),
        grace: plan.limits.grace,
        ..loopx_pty::SliceLimits::default()
    };
    spec.log = LogSpec {
        head_bytes: 0,
        tail_bytes: usize::try_from(CHECK_OUTPUT_CAP).unwrap_or(usize::MAX),
        ..LogSpec::new(spec.log.path.clone())
    };
}
