//! The second stage: render the prompt and begin the slice — claim, admission and the slice
//! record in one kernel transaction. From its commit on, a [`SliceGuard`] owns the slice.

use std::path::PathBuf;
use std::time::Duration;

use loopx_adapters::{LaunchContext, LaunchPlan, render_launch, render_prompt};
use loopx_kernel::model::{SliceRecord, Todo};
use loopx_kernel::store::{BeginSlice, NewSlice, SLICE_PLACEHOLDER};
use loopx_kernel::{Conflict, KernelError, ids::MessageId};

use super::decide::{Decided, How};
use super::guard::{Beginning, SliceGuard};
use crate::errors::SupervisorError;
use crate::once::{Once, RunOnce, Step};
use loopx_domain::agent::AgentSetup;
use loopx_domain::prompt::{PromptFor, prompt_values};

/// A lease outlives the slice's wall-time limit by this much, so it cannot expire while the
/// slice is still being stopped and written back.
const LEASE_MARGIN: Duration = Duration::from_secs(60);
/// The longest claim taken at once, unless `LOOPX_LEASE_MAX` says otherwise; see [`lease_ttl`].
pub const LEASE_MAX: Duration = Duration::from_secs(10 * 60);
/// The wall-time limit of a probe: the first slice after a vendor hold ended.
const PROBE_MAX_TIME: Duration = Duration::from_secs(5 * 60);

/// A slice recorded as begun, and owned by its guard: the value every later stage carries
/// on, to its writeback.
#[derive(Debug)]
pub(crate) struct Begun {
    pub setup: AgentSetup,
    pub goal: Option<loopx_kernel::model::Goal>,
    /// The decision's store, until it has recorded the spawned process.
    pub store: Option<std::sync::Arc<loopx_kernel::Store>>,
    pub record: SliceRecord,
    /// The launch, with the slice's own id in its file names.
    pub plan: LaunchPlan,
    /// What everything the slice leaves is redacted with (its log, its reports, its
    /// writeback), built once from the plan and loopx's environment.
    pub redactor: loopx_kernel::Redactor,
    pub guard: SliceGuard,
    /// The todo's worktree, made ready (a worktree goal's todo slice), or why it could not be
    /// (then the slice is a failed spawn); `None` when the agent works in the project's tree.
    pub tree: Option<Result<loopx_git::worktree::Prepared, loopx_git::GitError>>,
    /// The claim's renewal from the spawn (a todo slice's), until the agent ended or, for a
    /// worktree goal, until its todo's landing is done.
    pub renewal: Option<crate::renew::Renewal>,
    /// The person's messages its prompt carries.
    pub messages: Vec<loopx_kernel::ids::MessageId>,
}

/// Where the begin leads.
#[derive(Debug)]
pub(crate) enum Began {
    Begun(Box<Begun>),
    /// Nothing was begun (quota said wait, or a peer got there first); nothing was left behind.
    Not(Box<Once>),
}

impl Decided {
    /// The slice's prompt: the profile's template filled from the store as it is now, headed by
    /// the person's messages to the agent and the goal's amendment when there were any; and
    /// the messages it carries, which its begin takes.
    fn prompt(&self, req: &RunOnce) -> Result<(String, Vec<MessageId>), SupervisorError> {
        let setup = &self.setup;
        let rules = crate::notify::project_config(&req.project)?.evidence;
        let now = req.world.clock.now();
        let mut judge = loopx_domain::freshness::Freshness::new(&req.project, &rules, now);
        let values = self.store.read(|s| {
            let todo: Option<Todo> = match self.todo {
                Some(id) => s.todo(id)?,
                None => None,
            };
            // The goal as it is now: a person may have amended it since the decision.
            let goal = match self.goal.as_ref() {
                Some(g) => s.goal(g.id)?.or_else(|| Some(g.clone())),
                None => None,
            };
            let values = prompt_values(
                s,
                PromptFor {
                    agent: &setup.agent.name,
                    role: setup.view.role.as_deref(),
                    goal: goal.as_ref(),
                    todo: todo.as_ref(),
                    kind: self.how.kind,
                },
                &mut judge,
            )?;
            let note = match goal.as_ref() {
                Some(goal) => loopx_domain::amendment::goal_change_note(s, goal)?,
                None => None,
            };
            let messages = s.waiting_messages(&setup.agent.name)?;
            Ok((values, note, messages))
        })?;
        let (values, note, messages) = values;
        // A person's messages, then an amended goal's change, head the prompt, whatever the
        // profile's template holds.
        let heads = [loopx_domain::prompt::messages_note(&messages), note];
        let mut prompt: Vec<String> = heads.into_iter().flatten().collect();
        prompt.push(render_prompt(
            &setup.loaded.profile.prompt_template,
            &values,
        ));
        Ok((prompt.join("\n\n"), messages.iter().map(|m| m.id).collect()))
    }

    /// A worktree goal's tree for the slice, made ready (`None`: the goal shares the person's
    /// tree).
    fn prepare_tree(
        &self,
        req: &RunOnce,
        record: &SliceRecord,
    ) -> Option<Result<loopx_git::worktree::Prepared, loopx_git::GitError>> {
        // A person answered a land gate of this todo with anything but `drop`: its branch
        // gets the goal's merged in, conflicts and all, for the agent to resolve.
        let rebase_asked = record.todo.is_some_and(|todo| {
            self.store
                .read(|s| s.gates())
                .unwrap_or_default()
                .iter()
                .any(|g| {
                    g.kind == loopx_kernel::model::GateKind::Land { todo } && g.answer.is_some()
                })
        });
        match &self.goal {
            Some(goal) if goal.isolation.is_worktree() => Some(loopx_git::worktree::prepare(
                &req.project,
                goal,
                record.todo,
                &record.id.to_string(),
                rebase_asked,
            )),
            _ => None,
        }
    }

    /// Renders the prompt and begins the slice.
    pub(crate) fn begin(
        self,
        req: &RunOnce,
        on_step: &mut dyn FnMut(Step<'_>),
    ) -> Result<Began, SupervisorError> {
        let setup = &self.setup;
        let (prompt, messages) = self.prompt(req)?;
        let root = req.project.root();
        let plan = plan_for(req, setup, self.how, &prompt, SLICE_PLACEHOLDER, root)?;
        let begin = BeginSlice {
            slice: NewSlice {
                agent: setup.agent.name.clone(),
                todo: self.todo,
                epoch: None,
                kind: self.how.kind,
                profile_hash: setup.loaded.content_hash.to_string(),
                argv: recorded_argv(&plan, &prompt),
                limit_secs: plan.limits.max_time.as_secs(),
                log: Some(slice_file(SLICE_PLACEHOLDER, "log")),
                owner: Some(req.world.me.clone()),
                goal: self.goal.as_ref().map(|g| g.id),
            },
            claim_ttl: lease_ttl(setup, req.world.lease_max),
            admit: setup.quota_request((0, 0.0), None, self.goal.as_ref().map(|g| g.id)),
            messages: messages.clone(),
        };
        let beginning = Beginning::start();
        let begun = self.store.run(begin, &actor(setup), req.world.clock.now());
        let (record, took_claim) = match begun {
            Ok(loopx_kernel::store::Begun { slice, took_claim }) => (slice, took_claim),
            Err(KernelError::Conflict(Conflict::QuotaBlocked { until, reason })) => {
                return Ok(Began::Not(Box::new(Once::Refused {
                    agent: setup.agent.name.to_string(),
                    decision: self.decision,
                    until,
                    reason,
                })));
            }
            Err(KernelError::Conflict(c)) if lost_race(&c) => {
                return Ok(Began::Not(Box::new(Once::Contended {
                    agent: setup.agent.name.to_string(),
                    decision: self.decision,
                    why: c.to_string(),
                })));
            }
            Err(e) => return Err(e.into()),
        };
        let mut guard = SliceGuard::new(
            &req.project,
            &req.world.stores,
            &req.world.clock,
            record.id,
            beginning,
        );
        keep_prompt(req, &plan, &record.id.to_string(), &prompt);
        let name = &setup.agent.name;
        if let (Some(todo), Some(epoch)) = (record.todo, record.epoch) {
            on_step(Step::Claimed {
                agent: name,
                todo,
                epoch,
                held: !took_claim,
            });
        }
        let log = record.log.clone().unwrap_or_default();
        on_step(Step::Started {
            agent: name,
            slice: record.id,
            kind: record.kind,
            todo: record.todo,
            log: &log,
        });
        let tree = self.prepare_tree(req, &record);
        let workdir = match &tree {
            Some(Ok(prepared)) => prepared.tree.workdir(),
            _ => req.project.root().to_path_buf(),
        };
        let plan = match plan_for(
            req,
            setup,
            self.how,
            &prompt,
            &record.id.to_string(),
            &workdir,
        ) {
            Ok(plan) => plan,
            Err(e) => {
                guard.fail(format!(
                    "its launch could not be rendered: {}",
                    crate::errors::chain(&e)
                ));
                return Err(e);
            }
        };
        let Decided {
            setup, goal, store, ..
        } = self;
        Ok(Began::Begun(Box::new(Begun {
            setup,
            goal,
            store: Some(store),
            record,
            redactor: super::contain::slice_redactor(&plan, &req.project),
            plan,
            guard,
            tree,
            renewal: None,
            messages,
        })))
    }
}

/// The command line as the slice record keeps it: the prompt, when an argument carries it
/// (Codex's `exec … PROMPT`), stands as a reference to the slice's prompt file, which is
/// written for it. A record holding the whole prompt would make every read of recent slices
/// (each decision reads 200) decode every prompt.
fn recorded_argv(plan: &LaunchPlan, prompt: &str) -> Vec<String> {
    let reference = format!("{{prompt: {}}}", slice_file(SLICE_PLACEHOLDER, "prompt"));
    let by_argument = plan.prompt_delivery == loopx_adapters::PromptDelivery::Argument;
    std::iter::once(&plan.program)
        .chain(&plan.args)
        .map(|arg| match by_argument && !prompt.is_empty() {
            // The argument that is the prompt, or carries it whole (`--prompt=…`).
            true if arg.contains(prompt) => arg.replace(prompt, &reference),
            _ => arg.clone(),
        })
        .collect()
}

/// Keeps the prompt of a slice that was given it as an argument or on stdin in the slice's
/// prompt file, as the record and `docs/cli.md` say (a prompt given as a file is written by the
/// launch). Best effort: the record is already written, and the slice runs whether or not its
/// prompt could be kept.
fn keep_prompt(req: &RunOnce, plan: &LaunchPlan, slice: &str, prompt: &str) {
    if matches!(
        plan.prompt_delivery,
        loopx_adapters::PromptDelivery::File { .. }
    ) {
        return;
    }
    let path = slice_path(req, &slice_file(slice, "prompt"));
    // 0600, and a symlink an agent planted in its place is not followed.
    if let Err(e) = loopx_pty::write_private(&path, prompt.as_bytes()) {
        tracing::warn!(
            "could not keep the prompt of {slice} in {}: {e}",
            path.display()
        );
    }
}

/// Conflicts that mean a peer got there first, not that anything is wrong.
fn lost_race(c: &Conflict) -> bool {
    matches!(
        c,
        Conflict::Claimed { .. }
            | Conflict::AgentBusy { .. }
            | Conflict::SliceRunning { .. }
            | Conflict::PlanRunning { .. }
            | Conflict::GoalState { .. }
            | Conflict::StaleEpoch { .. }
            | Conflict::NotHolder { .. }
            | Conflict::TodoState { .. }
            | Conflict::Gated { .. }
            | Conflict::Waiting { .. }
            | Conflict::MessageTaken { .. }
    )
}

/// How long a claim lasts before it must be renewed: the slice's whole run (wall time, grace,
/// a margin) up to the supervisor's longest claim (`World::lease_max`, [`LEASE_MAX`] unless
/// the surface's `LOOPX_LEASE_MAX` says otherwise). A longer slice renews it while it runs, so
/// a supervisor that dies frees its todo within minutes, not after the slice's whole limit.
pub(crate) fn lease_ttl(setup: &AgentSetup, lease_max: Duration) -> Duration {
    let limits = &setup.loaded.profile.limits;
    (limits.max_time + limits.grace + LEASE_MARGIN).min(lease_max)
}

/// Who writes on the slice's behalf.
pub(crate) fn actor(setup: &AgentSetup) -> String {
    loopx_vocab::actor::agent(setup.agent.name.as_str())
}

/// Where a slice's files go: `.loopx/slices/<id>.<ext>`, relative to the project root.
pub(crate) fn slice_file(slice: &str, ext: &str) -> String {
    format!("{}/slices/{slice}.{ext}", loopx_kernel::project::STATE_DIR)
}

/// The launch for `slice` (the placeholder before the id is known, the id after).
fn plan_for(
    req: &RunOnce,
    setup: &AgentSetup,
    how: How,
    prompt: &str,
    slice: &str,
    workdir: &std::path::Path,
) -> Result<LaunchPlan, SupervisorError> {
    let ctx = LaunchContext {
        loopx_exe: req.loopx_exe.clone(),
        // The agent's tree: the project's, or its todo's worktree.
        project_root: workdir.to_path_buf(),
        prompt_file: req.project.root().join(slice_file(slice, "prompt")),
    };
    let mut plan =
        render_launch(&setup.loaded, how.permission, prompt, &ctx).map_err(|source| {
            SupervisorError::Launch {
                agent: setup.agent.name.to_string(),
                source,
            }
        })?;
    if how.probe {
        // The vendor's limit may not be gone: find out in minutes, not in a whole slice.
        plan.limits.max_time = plan.limits.max_time.min(PROBE_MAX_TIME);
    }
    plan.limits.max_tokens = how.max_tokens;
    Ok(plan)
}

/// The absolute path of a slice's file.
pub(crate) fn slice_path(req: &RunOnce, relative: &str) -> PathBuf {
    req.project.root().join(relative)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn slice_files_live_in_the_state_directory() {
        assert_eq!(slice_file("s3", "log"), ".loopx/slices/s3.log");
        assert!(Path::new(&slice_file(SLICE_PLACEHOLDER, "prompt")).starts_with(".loopx"));
    }
}
