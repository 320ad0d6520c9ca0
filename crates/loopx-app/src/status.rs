//! The status snapshot: what needs a person, what runs, what waits, what is next, the latest
//! evidence, what each agent would do now. `loopx status` renders it, `status --json` and the
//! board show it as it is.

use loopx_kernel::model::{Gate, Goal, SliceRecord, Todo};
use loopx_kernel::store::TodoCounts;
use loopx_kernel::{Project, Timestamp, TodoId};
use serde::Serialize;

use loopx_domain::decision::DecisionState;

use crate::evidence::JudgedEvidence;

mod first;
mod goals;
mod revision;
mod stale;

use crate::{App, AppError};
use first::{FirstTodos, waits_on};
pub use goals::GoalNow;
pub use revision::RevisionNow;
pub use stale::RestsOnStale;

/// How many of the next todos and latest evidence the first screen shows.
const FIRST_SCREEN: usize = 5;

#[derive(Debug, Serialize)]
pub struct Status {
    pub format_version: u32,
    pub project: String,
    /// The goal shown first: the active goal agents serve first, else the newest paused or
    /// finished one (`--goal`: the goal named). The sections below are about it, except that
    /// the todos (claimed, waiting, monitors, next) are those of every goal in `goals`.
    pub goal: Option<Goal>,
    /// Every goal shown: every active goal when several are (agents serve the first first),
    /// else the one in `goal`; `--goal` names one.
    pub goals: Vec<GoalNow>,
    /// The goal's revision once a person amended it: what changed, and whether the re-plan it
    /// calls for is still to come. `None` for a goal as started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<RevisionNow>,
    pub needs_you: Vec<NeedsYou>,
    pub running: Vec<Running>,
    pub claimed: Vec<Claimed>,
    pub waiting: Vec<Waiting>,
    /// The goal's monitors loopx polls (every dependency finished).
    pub monitors: Vec<MonitorNow>,
    /// How many todos wait on a dependency in all (`waiting` lists the first of them).
    pub waiting_total: u64,
    pub next: Vec<Next>,
    pub latest_evidence: Vec<JudgedEvidence>,
    /// The first todos of the goals shown that rest on stale evidence: done on evidence that
    /// is stale now, or after such a todo (`--after`, `--next`), as `goal history` marks them.
    pub rests_on_stale: Vec<RestsOnStale>,
    /// How many todos rest on stale evidence in all (`rests_on_stale` lists the first).
    pub rests_on_stale_total: u64,
    pub counts: TodoCounts,
    /// What each registered agent would do now (the decision `quota should-run` prints).
    pub agents: Vec<AgentNow>,
    /// Where the goal's agents work.
    pub isolation: Option<IsolationNow>,
    /// What could not be read (an invalid `loopx.toml`): the rest is shown without it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The projections off the machine (the Lark board) and how their last pass went.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub projections: Vec<crate::projection::ProjectionHealth>,
}

/// A goal's isolation as `status` shows it.
#[derive(Debug, Serialize)]
pub struct IsolationNow {
    /// `worktree` or `shared`.
    pub mode: &'static str,
    /// Why the agents share the project's tree, in words (shared only).
    pub why: Option<String>,
    /// The goal's integration branch (worktree only).
    pub branch: Option<String>,
    /// The open and claimed todos' branches: commits ahead of the goal's branch.
    pub todo_branches: Vec<loopx_git::worktree::BranchState>,
    /// What brings the goal's work into the person's branch, once it is done.
    pub merge_commands: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct AgentNow {
    pub agent: String,
    /// The slice it is running now, if any: then `decision` is what it would do next.
    pub running: Option<String>,
    pub decision: Option<loopx_quota::DecisionKind>,
    pub wake_at: Option<Timestamp>,
    pub todo: Option<String>,
    pub gate: Option<String>,
    /// The decision in words, or why it could not be made (an invalid profile).
    pub summary: String,
}

#[derive(Debug, Serialize)]
pub struct NeedsYou {
    pub gate: Gate,
    pub answer_command: String,
}

#[derive(Debug, Serialize)]
pub struct Running {
    pub slice: SliceRecord,
    pub elapsed_secs: u64,
    /// Its `loopx run` (on this machine) is gone: the slice is not running, whatever its
    /// record says, and the next `loopx run` recovers it.
    pub orphaned: bool,
}

#[derive(Debug, Serialize)]
pub struct Claimed {
    pub todo: TodoId,
    pub title: String,
    pub agent: String,
    pub epoch: u64,
    pub expires_at: Timestamp,
    pub expired: bool,
}

#[derive(Debug, Serialize)]
pub struct Waiting {
    pub todo: TodoId,
    pub title: String,
    pub reason: String,
}

/// A monitor as `status` shows it: its next poll and its last result.
#[derive(Debug, Serialize)]
pub struct MonitorNow {
    pub todo: TodoId,
    pub title: String,
    pub check: String,
    /// `None` while a person is asked about it (`gate`).
    pub next_poll: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    pub polls: u64,
    /// `met`, `not_yet` or `failed`; `None` before its first poll.
    pub last: Option<loopx_kernel::model::PollVerdict>,
    pub last_at: Option<Timestamp>,
    pub gate: Option<loopx_kernel::GateId>,
}

impl MonitorNow {
    fn of(todo: &Todo) -> Option<MonitorNow> {
        let m = todo.monitor.as_ref()?;
        let last = m.last();
        Some(MonitorNow {
            todo: todo.id,
            title: todo.title.clone(),
            check: m.check.clone(),
            next_poll: m.asked.is_none().then_some(m.next_at),
            expires_at: m.expires_at,
            polls: m.polls,
            last: last.map(|o| o.verdict),
            last_at: last.map(|o| o.last_at),
            gate: m.asked,
        })
    }
}

#[derive(Debug, Serialize)]
pub struct Next {
    pub todo: TodoId,
    pub title: String,
    pub priority: i32,
}

impl Status {
    /// How many todos wait: on a dependency, on a gate, or on an expired lease.
    pub fn waiting_count(&self) -> u64 {
        let gated = self
            .waiting
            .iter()
            .filter(|w| w.reason.starts_with("blocked"))
            .count();
        let expired = self.claimed.iter().filter(|c| c.expired).count();
        self.waiting_total + (gated + expired) as u64
    }

    /// Why nothing is next, in words, when the goal has work that is not ready (`None` when
    /// something is next, or when nothing is open at all): `nothing ready: 2 todos wait (see
    /// Waiting above)`.
    pub fn nothing_ready(&self) -> Option<String> {
        if !self.next.is_empty() {
            return None;
        }
        let plural = |n: u64, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        let mut why = Vec::new();
        if let Some(goal) = self
            .goal
            .as_ref()
            .filter(|g| g.status != loopx_kernel::model::GoalStatus::Active)
        {
            why.push(format!("goal {} is {}", goal.id, goal.status.as_str()));
        }
        let asked = self.needs_you.len() as u64;
        if asked > 0 {
            why.push(format!(
                "{} for you (see Needs you above)",
                plural(asked, "question waits", "questions wait")
            ));
        }
        let waiting = self.waiting_count();
        if waiting > 0 {
            why.push(format!(
                "{} (see Waiting above)",
                plural(waiting, "todo waits", "todos wait")
            ));
        }
        let running = self.running.len() as u64;
        if running > 0 {
            why.push(format!(
                "{} (see Running above)",
                plural(running, "slice runs", "slices run")
            ));
        }
        let monitors = self.monitors.len() as u64;
        if monitors > 0 {
            why.push(format!(
                "loopx polls {} (see Monitors above)",
                plural(monitors, "monitor", "monitors")
            ));
        }
        match why.is_empty() {
            true => None,
            false => Some(format!("nothing ready: {}", why.join("; "))),
        }
    }
}

impl App {
    /// The overview `loopx status` shows, read in one snapshot: what needs a person, what
    /// runs, what waits, what is next, the latest evidence, and what each agent would do now.
    pub fn status(&self) -> Result<Status, AppError> {
        self.status_of(None)
    }

    /// The overview, narrowed to one goal when `only` names one (`status --goal`): its todos,
    /// its slices and the questions that hold it back.
    pub fn status_of(&self, only: Option<loopx_kernel::GoalId>) -> Result<Status, AppError> {
        let project = self.project();
        let now = self.now();
        let store = self.store_read()?;
        // Profiles are files: load each once (agents often share one), outside the read
        // transaction.
        let views = crate::quota::views_of(self, &store.read(|s| s.agents())?);
        // A broken loopx.toml is reported by `loopx run` and `loopx quota status`; the
        // overview still shows what it can, and names it.
        let mut problems = Vec::new();
        let config = self.config_or_problem(&mut problems);
        let judge = self.evidence_judge(config.evidence.clone());
        // Everything below reads a bounded number of records, whatever the number of todos:
        // the claimed ones, the first of the waiting and ready ones, counts kept as counters;
        // once a todo is done, the shown goals' todos and their done ones' evidence too (what
        // rests on stale evidence: `stale.rs`).
        let (goal, goals, revision, gates, running, todos, latest_evidence, agents, mut stale) =
            store.read(|s| {
                let counts = s.todo_counts()?;
                let shown = goals::goals_shown(s, only)?;
                let goal = shown.first().cloned();
                let gates = s.open_gates()?;
                let revision = RevisionNow::read(s, goal.as_ref())?;
                let stale = stale::rests_on_stale(s, &shown, &counts, &judge)?;
                let (goals, todos) = goals::todos_of(s, &shown, &gates, counts, now)?;
                let running = running_now(s, now)?;
                let agents = agents_now(s, &views, &config, &running, now)?;
                // A goal's own evidence: the one before it is done with.
                let evidence = match &goal {
                    Some(goal) => s.goal_evidence_newest(goal, FIRST_SCREEN)?,
                    None => s.evidence_newest(FIRST_SCREEN, |_| true)?,
                };
                Ok((
                    goal,
                    goals,
                    revision,
                    gates,
                    running,
                    todos,
                    judge.all(s, evidence)?,
                    agents,
                    stale,
                ))
            })?;
        let isolation = goal.as_ref().map(|g| isolation_now(project, g, &store));
        drop(store);
        let (gates, running, todos) = match only {
            Some(id) => self.narrowed(id, gates, running, todos),
            None => (gates, running, todos),
        };
        let mut status = assemble(
            project.root().display().to_string(),
            now,
            goal,
            gates,
            running,
            todos,
            latest_evidence,
            agents,
        );
        status.goals = goals;
        status.rests_on_stale_total = stale.len() as u64;
        stale.truncate(FIRST_SCREEN);
        status.rests_on_stale = stale;
        status.isolation = isolation;
        status.revision = revision;
        status.problems = problems;
        status.projections = self.projection_health();
        Ok(status)
    }
}

impl App {
    /// What `status --goal` keeps: the questions that hold the goal back, its slices, its
    /// claimed todos.
    fn narrowed(
        &self,
        goal: loopx_kernel::GoalId,
        gates: Vec<Gate>,
        running: Vec<Running>,
        mut todos: FirstTodos,
    ) -> (Vec<Gate>, Vec<Running>, FirstTodos) {
        let gates = (gates.into_iter())
            .filter(|g| self.gate_holds_goal(g, goal))
            .collect();
        todos.claimed.retain(|t| t.goal == goal);
        let claimed: Vec<_> = todos.claimed.iter().map(|t| t.id).collect();
        let running = (running.into_iter())
            .filter(|r| {
                r.slice.goal == Some(goal)
                    || (r.slice.goal.is_none()
                        && r.slice.todo.is_some_and(|t| claimed.contains(&t)))
            })
            .collect();
        (gates, running, todos)
    }
}

fn isolation_now(project: &Project, goal: &Goal, store: &loopx_kernel::Store) -> IsolationNow {
    use loopx_kernel::model::Isolation;
    match &goal.isolation {
        Isolation::Shared => IsolationNow {
            mode: "shared",
            why: Some(
                match loopx_git::worktree::in_git(project.root()) {
                    true => "started with --isolation shared",
                    false => "the project is not a git repository",
                }
                .to_owned(),
            ),
            branch: None,
            todo_branches: Vec::new(),
            merge_commands: Vec::new(),
        },
        Isolation::Worktree { .. } => {
            let branches = loopx_git::worktree::branch_states(project, goal.id).unwrap_or_default();
            // Only the branches of open and claimed todos: a lookup each.
            let todo_branches = store
                .read(|s| {
                    let mut open = Vec::new();
                    for b in branches {
                        if s.todo(b.todo)?.is_some_and(|t| !t.state.is_final()) {
                            open.push(b);
                        }
                    }
                    Ok(open)
                })
                .unwrap_or_default();
            IsolationNow {
                mode: "worktree",
                why: None,
                branch: Some(loopx_git::worktree::integration_branch(goal.id)),
                todo_branches,
                merge_commands: match goal.status {
                    loopx_kernel::model::GoalStatus::Done => crate::goal::merge_commands(goal),
                    _ => Vec::new(),
                },
            }
        }
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one call site, which reads better with the parts named"
)]
fn assemble(
    project: String,
    now: Timestamp,
    goal: Option<Goal>,
    gates: Vec<Gate>,
    running: Vec<Running>,
    todos: FirstTodos,
    latest_evidence: Vec<JudgedEvidence>,
    agents: Vec<AgentNow>,
) -> Status {
    let FirstTodos {
        claimed: claimed_todos,
        waiting: waiting_todos,
        gated,
        ready,
        monitors,
        waiting_total,
        counts,
    } = todos;
    let claimed = claims(&claimed_todos, now);
    let waiting = waiting(&waiting_todos, &gated, now);
    let next = next_in_line(&claimed_todos, &ready, &gates, now);
    let monitors = monitors.iter().filter_map(MonitorNow::of).collect();
    Status {
        format_version: 1,
        project,
        goal,
        goals: Vec::new(),
        revision: None,
        needs_you: gates
            .into_iter()
            .map(|gate| NeedsYou {
                answer_command: gate.answer_command(),
                gate,
            })
            .collect(),
        running,
        claimed,
        waiting,
        monitors,
        waiting_total,
        next,
        latest_evidence,
        rests_on_stale: Vec::new(),
        rests_on_stale_total: 0,
        counts,
        agents,
        isolation: None,
        problems: Vec::new(),
        projections: Vec::new(),
    }
}

/// The running slices, each with its age and whether its `loopx run` is gone.
fn running_now(
    s: &loopx_kernel::Snapshot<'_>,
    now: Timestamp,
) -> Result<Vec<Running>, loopx_kernel::KernelError> {
    let slices = s.running_slices()?;
    let mut running = Vec::with_capacity(slices.len());
    for slice in slices {
        let owner = s.slice_owner(slice.id)?;
        running.push(Running {
            elapsed_secs: now.since(slice.started_at).as_secs(),
            orphaned: owner.is_some_and(|o| loopx_domain::process::owner_gone(&o)),
            slice,
        });
    }
    Ok(running)
}

/// What each todo shown as waiting waits for: a dependency, or a gate.
fn waiting(
    on_dependency: &[(Todo, Todo)],
    gated: &[(Todo, loopx_kernel::GateId)],
    now: Timestamp,
) -> Vec<Waiting> {
    let waiting_on = |todo: &Todo, reason| Waiting {
        todo: todo.id,
        title: todo.title.clone(),
        reason,
    };
    (on_dependency.iter())
        .map(|(todo, dep)| waiting_on(todo, waits_on(dep, now)))
        .chain(
            gated
                .iter()
                .map(|(todo, gate)| waiting_on(todo, format!("blocked by gate {gate}"))),
        )
        .collect()
}

/// Each claimed todo's lease, and whether it expired.
fn claims(claimed: &[Todo], now: Timestamp) -> Vec<Claimed> {
    claimed
        .iter()
        .filter_map(|todo| {
            let lease = todo.lease.as_ref()?;
            Some(Claimed {
                todo: todo.id,
                title: todo.title.clone(),
                agent: lease.agent.to_string(),
                epoch: lease.epoch,
                expires_at: lease.expires_at,
                expired: !lease.is_live(now),
            })
        })
        .collect()
}

/// The todos agents take next, highest priority first: the ready ones, and those whose lease
/// expired (free to reclaim) unless a gate holds them.
fn next_in_line(claimed: &[Todo], ready: &[Todo], gates: &[Gate], now: Timestamp) -> Vec<Next> {
    let gated = |todo: &Todo| {
        gates.iter().any(|g| {
            g.blocks.blocks(None, Some(todo.id), Some(todo.goal))
                && !matches!(g.blocks, loopx_kernel::model::Blocks::Agent(_))
        })
    };
    let expired = claimed
        .iter()
        .filter(|t| t.lease.as_ref().is_some_and(|l| !l.is_live(now)) && !gated(t));
    let mut next: Vec<Next> = expired
        .chain(ready)
        .map(|todo| Next {
            todo: todo.id,
            title: todo.title.clone(),
            priority: todo.priority,
        })
        .collect();
    next.sort_by_key(|n| (std::cmp::Reverse(n.priority), n.todo));
    next.truncate(FIRST_SCREEN);
    next
}

/// Each registered agent's decision, made on the same snapshot as the rest of the screen.
/// Profiles are read first (file I/O stays outside the read transaction).
fn agents_now(
    snap: &loopx_kernel::Snapshot<'_>,
    views: &[(String, Result<loopx_quota::AgentView, String>)],
    config: &loopx_adapters::ProjectConfig,
    running: &[Running],
    now: Timestamp,
) -> Result<Vec<AgentNow>, loopx_kernel::KernelError> {
    let mut out = Vec::with_capacity(views.len());
    if views.is_empty() {
        return Ok(out);
    }
    let shared =
        std::sync::Arc::new(loopx_domain::decision::SharedState::read(snap, now)?.under(config));
    for (name, view) in views {
        // The slice it runs now, if any: then its decision is what it would do next.
        let running = (running.iter())
            .find(|r| r.slice.agent.as_str() == name)
            .map(|r| r.slice.id.to_string());
        let decided = view.clone().and_then(|view| {
            DecisionState::for_agent(shared.clone(), snap, view)
                .map(|state| state.decide())
                .map_err(|e| e.to_string())
        });
        out.push(match decided {
            Ok(d) => AgentNow {
                agent: name.clone(),
                running,
                decision: Some(d.kind()),
                wake_at: d.wake_at().map(Timestamp),
                todo: d.todo().as_ref().map(|(id, _)| id.to_string()),
                gate: d.gate().as_ref().map(|(id, _)| id.to_string()),
                summary: crate::quota::describe(&d, now),
            },
            Err(why) => AgentNow {
                agent: name.clone(),
                running,
                decision: None,
                wake_at: None,
                todo: None,
                gate: None,
                summary: format!("cannot decide: {}", why.lines().next().unwrap_or_default()),
            },
        });
    }
    Ok(out)
}
