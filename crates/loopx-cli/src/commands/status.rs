//! `loopx status`: what needs you, what runs, what waits, what is next, the latest evidence.

use loopx_kernel::model::{Evidence, Gate, GateState, Goal, SliceRecord, Todo};
use loopx_kernel::store::TodoCounts;
use loopx_kernel::time::short_duration;
use loopx_kernel::{Timestamp, TodoId};
use serde::Serialize;

use loopx_kernel::decision::DecisionState;

use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::views;

/// How many of the next todos and latest evidence the first screen shows.
const FIRST_SCREEN: usize = 5;

#[derive(Debug, Serialize)]
struct Status {
    format_version: u32,
    project: String,
    goal: Option<Goal>,
    needs_you: Vec<NeedsYou>,
    running: Vec<Running>,
    claimed: Vec<Claimed>,
    waiting: Vec<Waiting>,
    /// How many todos wait on a dependency in all (`waiting` lists the first of them).
    waiting_total: u64,
    next: Vec<Next>,
    latest_evidence: Vec<Evidence>,
    counts: TodoCounts,
    /// What each registered agent would do now (the decision `quota should-run` prints).
    agents: Vec<AgentNow>,
    /// Where the goal's agents work.
    isolation: Option<IsolationNow>,
}

/// A goal's isolation as `status` shows it.
#[derive(Debug, Serialize)]
struct IsolationNow {
    /// `worktree` or `shared`.
    mode: &'static str,
    /// Why the agents share the project's tree, in words (shared only).
    why: Option<String>,
    /// The goal's integration branch (worktree only).
    branch: Option<String>,
    /// The open and claimed todos' branches: commits ahead of the goal's branch.
    todo_branches: Vec<loopx_supervisor::worktree::BranchState>,
    /// What brings the goal's work into the person's branch, once it is done.
    merge_commands: Vec<String>,
}

#[derive(Debug, Serialize)]
struct AgentNow {
    agent: String,
    /// The slice it is running now, if any: then `decision` is what it would do next.
    running: Option<String>,
    decision: Option<loopx_quota::DecisionKind>,
    wake_at: Option<Timestamp>,
    todo: Option<String>,
    gate: Option<String>,
    /// The decision in words, or why it could not be made (an invalid profile).
    summary: String,
}

#[derive(Debug, Serialize)]
struct NeedsYou {
    gate: Gate,
    answer_command: String,
}

#[derive(Debug, Serialize)]
struct Running {
    slice: SliceRecord,
    elapsed_secs: u64,
    /// Its `loopx run` (on this machine) is gone: the slice is not running, whatever its
    /// record says, and the next `loopx run` recovers it.
    orphaned: bool,
}

#[derive(Debug, Serialize)]
struct Claimed {
    todo: TodoId,
    title: String,
    agent: String,
    epoch: u64,
    expires_at: Timestamp,
    expired: bool,
}

#[derive(Debug, Serialize)]
struct Waiting {
    todo: TodoId,
    title: String,
    reason: String,
}

#[derive(Debug, Serialize)]
struct Next {
    todo: TodoId,
    title: String,
    priority: i32,
}

pub fn run(ctx: &mut Ctx) -> Result<(), ExpectedError> {
    let project = ctx.project()?;
    let now = ctx.now();
    let store = loopx_kernel::Store::open_read(&project)?;
    // Profiles are files: load each once (agents often share one), outside the read transaction.
    let mut profiles: std::collections::HashMap<
        String,
        Result<loopx_adapters::LoadedProfile, String>,
    > = std::collections::HashMap::new();
    let views: Vec<(String, Result<loopx_quota::AgentView, String>)> = store
        .read(|s| s.agents())?
        .iter()
        .map(|a| {
            let loaded = profiles.entry(a.profile.clone()).or_insert_with(|| {
                super::quota::load_profile(ctx, &a.profile).map_err(|e| e.render())
            });
            (
                a.name.to_string(),
                loaded
                    .as_ref()
                    .map(|l| loopx_supervisor::agent_view(a, l))
                    .map_err(Clone::clone),
            )
        })
        .collect();
    // A broken loopx.toml is reported by `loopx run` and `loopx quota status`; the overview
    // still shows what it can.
    let budget = super::quota::project_budget(ctx).unwrap_or_default();
    // Everything below reads a bounded number of records, whatever the number of todos: the
    // claimed ones, the first of the waiting and ready ones, counts kept as counters.
    let (goal, gates, running, todos, latest_evidence, agents) = store.read(|s| {
        let counts = s.todo_counts()?;
        let agents = agents_now(s, &views, &budget, now)?;
        // The active or paused goal; else the latest one, so a finished goal shows as done.
        let goal = match s.current_goal()? {
            Some(goal) => Some(goal),
            None => s.goals()?.pop(),
        };
        let gates: Vec<Gate> = s
            .gates()?
            .into_iter()
            .filter(|g| g.state == GateState::Open)
            .collect();
        let todos = match &goal {
            Some(goal) => first_todos(s, goal.id, &gates, counts)?,
            None => FirstTodos {
                claimed: s.claimed_todos()?,
                counts,
                ..FirstTodos::default()
            },
        };
        Ok((
            goal,
            gates,
            s.running_slices()?
                .into_iter()
                .map(|slice| {
                    let owner = s.slice_owner(slice.id)?;
                    Ok((
                        slice,
                        owner.is_some_and(|o| loopx_supervisor::owner_gone(&o)),
                    ))
                })
                .collect::<Result<Vec<_>, loopx_kernel::KernelError>>()?,
            todos,
            s.evidence_newest(FIRST_SCREEN, |_| true)?,
            agents,
        ))
    })?;
    let isolation = goal
        .as_ref()
        .map(|g| isolation_now(project.root(), g, &store));
    drop(store);
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
    status.isolation = isolation;
    for agent in &mut status.agents {
        agent.running = status
            .running
            .iter()
            .find(|r| r.slice.agent.as_str() == agent.agent)
            .map(|r| r.slice.id.to_string());
    }
    if ctx.json {
        return ctx.json_out(&status);
    }
    render(ctx, &status, now)
}

/// How many waiting todos `status` lists (the count says how many there are).
const WAITING_SHOWN: usize = 10;

/// The todos `status` shows: every claimed one, and the first of the goal's waiting and ready
/// ones.
#[derive(Debug, Default)]
struct FirstTodos {
    claimed: Vec<Todo>,
    /// Waiting on a dependency, with the dependency: the first [`WAITING_SHOWN`].
    waiting: Vec<(Todo, TodoId)>,
    /// Ready todos that an open gate holds back.
    gated: Vec<(Todo, loopx_kernel::GateId)>,
    /// The first ready todos in the order agents take them, none of them gated.
    ready: Vec<Todo>,
    waiting_total: u64,
    counts: TodoCounts,
}

fn first_todos(
    s: &loopx_kernel::Snapshot<'_>,
    goal: loopx_kernel::GoalId,
    gates: &[Gate],
    counts: TodoCounts,
) -> Result<FirstTodos, loopx_kernel::KernelError> {
    let mut first = FirstTodos {
        claimed: s.claimed_todos()?,
        waiting_total: s.waiting_count(goal)?,
        counts,
        ..FirstTodos::default()
    };
    for todo in s.waiting_todos(goal, WAITING_SHOWN)? {
        let mut on = None;
        for dep in &todo.after {
            if s.todo(*dep)?.is_some_and(|d| !d.state.is_final()) {
                on = Some(*dep);
                break;
            }
        }
        if let Some(dep) = on {
            first.waiting.push((todo, dep));
        }
    }
    // A global gate holds back every todo; other gates name the todos they hold back: a few
    // lookups, not a scan.
    let global = gates
        .iter()
        .find(|g| matches!(g.blocks, loopx_kernel::model::Blocks::Global))
        .map(|g| g.id);
    let named_by = |id: TodoId| {
        gates
            .iter()
            .find(|g| matches!(&g.blocks, loopx_kernel::model::Blocks::Todos(ids) if ids.contains(&id)))
            .map(|g| g.id)
    };
    let mut named: Vec<TodoId> = gates
        .iter()
        .flat_map(|g| match &g.blocks {
            loopx_kernel::model::Blocks::Todos(ids) => ids.clone(),
            _ => Vec::new(),
        })
        .collect();
    named.sort_unstable();
    named.dedup();
    for id in &named {
        let Some(todo) = s.todo(*id)? else { continue };
        if todo.state != loopx_kernel::model::TodoState::Open || todo.goal != goal {
            continue;
        }
        // Listed as gated only when nothing else holds it: a todo waiting on a dependency
        // is listed (and counted) as waiting.
        let mut ready = true;
        for dep in &todo.after {
            ready &= s.todo(*dep)?.is_none_or(|d| d.state.is_final());
        }
        if let (true, Some(gate)) = (ready, named_by(*id)) {
            first.gated.push((todo, gate));
        }
    }
    let wanted = FIRST_SCREEN + named.len();
    for role in s.ready_roles(goal)? {
        for needs in [false, true] {
            first.ready.extend(
                s.ready_todos(goal, role.as_deref(), needs, wanted)?
                    .into_iter()
                    .filter(|t| named_by(t.id).is_none()),
            );
        }
    }
    first
        .ready
        .sort_by_key(|t| (std::cmp::Reverse(t.priority), t.id));
    first.ready.truncate(FIRST_SCREEN);
    if let Some(gate) = global {
        // Nothing is next while a gate holds back everything: the first in line wait on it.
        first.gated.extend(first.ready.drain(..).map(|t| (t, gate)));
    }
    Ok(first)
}

fn isolation_now(root: &std::path::Path, goal: &Goal, store: &loopx_kernel::Store) -> IsolationNow {
    use loopx_kernel::model::Isolation;
    match &goal.isolation {
        Isolation::Shared => IsolationNow {
            mode: "shared",
            why: Some(
                match loopx_supervisor::worktree::in_git(root) {
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
            let branches =
                loopx_supervisor::worktree::branch_states(root, goal.id).unwrap_or_default();
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
                branch: Some(loopx_supervisor::worktree::integration_branch(goal.id)),
                todo_branches,
                merge_commands: match goal.status {
                    loopx_kernel::model::GoalStatus::Done => super::goal::merge_hint(goal),
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
    running: Vec<(SliceRecord, bool)>,
    todos: FirstTodos,
    latest_evidence: Vec<Evidence>,
    agents: Vec<AgentNow>,
) -> Status {
    let FirstTodos {
        claimed: claimed_todos,
        waiting: waiting_todos,
        gated,
        ready,
        waiting_total,
        counts,
    } = todos;
    let mut claimed = Vec::new();
    let mut waiting = Vec::new();
    let mut next = Vec::new();
    for todo in &claimed_todos {
        if let Some(lease) = &todo.lease {
            claimed.push(Claimed {
                todo: todo.id,
                title: todo.title.clone(),
                agent: lease.agent.to_string(),
                epoch: lease.epoch,
                expires_at: lease.expires_at,
                expired: !lease.is_live(now),
            });
        }
    }
    for (todo, dep) in &waiting_todos {
        waiting.push(Waiting {
            todo: todo.id,
            title: todo.title.clone(),
            reason: format!("waits on {dep}"),
        });
    }
    for (todo, gate) in &gated {
        waiting.push(Waiting {
            todo: todo.id,
            title: todo.title.clone(),
            reason: format!("blocked by gate {gate}"),
        });
    }
    // An expired lease is free to reclaim: next in line with the ready ones.
    for todo in &claimed_todos {
        if todo.lease.as_ref().is_some_and(|l| !l.is_live(now))
            && !gates.iter().any(|g| {
                g.blocks.blocks(None, Some(todo.id))
                    && !matches!(g.blocks, loopx_kernel::model::Blocks::Agent(_))
            })
        {
            next.push(Next {
                todo: todo.id,
                title: todo.title.clone(),
                priority: todo.priority,
            });
        }
    }
    for todo in &ready {
        next.push(Next {
            todo: todo.id,
            title: todo.title.clone(),
            priority: todo.priority,
        });
    }
    next.sort_by_key(|n| (std::cmp::Reverse(n.priority), n.todo));
    next.truncate(FIRST_SCREEN);
    Status {
        format_version: 1,
        project,
        goal,
        needs_you: gates
            .into_iter()
            .map(|gate| NeedsYou {
                answer_command: gate.answer_command(),
                gate,
            })
            .collect(),
        running: running
            .into_iter()
            .map(|(slice, orphaned)| Running {
                elapsed_secs: now.since(slice.started_at).as_secs(),
                slice,
                orphaned,
            })
            .collect(),
        claimed,
        waiting,
        waiting_total,
        next,
        latest_evidence,
        counts,
        agents,
        isolation: None,
    }
}

fn render(ctx: &mut Ctx, status: &Status, now: Timestamp) -> Result<(), ExpectedError> {
    let style = ctx.style;
    match &status.goal {
        Some(goal) => ctx.line(format!(
            "{} {}",
            style.bold(&format!("Goal {} ({}):", goal.id, goal.status.as_str())),
            goal.objective
        ))?,
        None => ctx.line("No goal yet. Start one: loopx goal start \"OBJECTIVE\"")?,
    }
    if let Some(iso) = &status.isolation {
        match (&iso.branch, &iso.why) {
            (Some(branch), _) => {
                ctx.line(format!(
                    "Worktrees: each todo on its own branch, landing on {branch} when done"
                ))?;
                for b in &iso.todo_branches {
                    let ahead = match b.ahead {
                        0 => "nothing committed yet".to_owned(),
                        n => format!("+{n} commit{}, not landed", if n == 1 { "" } else { "s" }),
                    };
                    ctx.line(format!("  {:<5} {}  {ahead}", b.todo.to_string(), b.branch))?;
                }
                for line in &iso.merge_commands {
                    ctx.line(line)?;
                }
            }
            (None, Some(why)) => ctx.line(style.dim(&format!(
                "Shared tree: agents work in this project's own files ({why})"
            )))?,
            (None, None) => {}
        }
    }
    let support = loopx_pty::SandboxSupport::quick();
    if !(support.namespaces && support.landlock_abi.is_some()) {
        ctx.line(style.yellow(
            "Sandbox: this kernel cannot fully contain slices; agents may reach the store (see `loopx doctor`)",
        ))?;
    }
    ctx.line("")?;
    ctx.line(style.bold(&format!("Needs you ({})", status.needs_you.len())))?;
    if status.needs_you.is_empty() {
        ctx.line(style.dim("  nothing: no open questions"))?;
    }
    for need in &status.needs_you {
        for line in views::gate_lines(style, &need.gate, now) {
            ctx.line(format!("  {line}"))?;
        }
    }
    ctx.line("")?;
    let slices = status.running.len();
    let in_a_slice = |todo: TodoId| status.running.iter().any(|r| r.slice.todo == Some(todo));
    let claims_alone = status
        .claimed
        .iter()
        .filter(|c| !c.expired && !in_a_slice(c.todo))
        .count();
    let also_claimed = match claims_alone {
        0 => String::new(),
        n => format!(" · {n} claimed"),
    };
    ctx.line(style.bold(&format!(
        "Running ({slices} slice{}{also_claimed})",
        if slices == 1 { "" } else { "s" }
    )))?;
    for run in &status.running {
        let slice = &run.slice;
        let on = slice.todo.map(|t| format!(" on {t}")).unwrap_or_default();
        let limit = if slice.limit_secs > 0 {
            format!(
                " / {} limit",
                short_duration(std::time::Duration::from_secs(slice.limit_secs))
            )
        } else {
            String::new()
        };
        let gone = match run.orphaned {
            true => "  (its loopx run is gone: the next `loopx run` recovers it)",
            false => "",
        };
        ctx.line(format!(
            "  {:<5} {}{on}  {} elapsed{limit}{gone}",
            slice.id.to_string(),
            slice.agent,
            short_duration(std::time::Duration::from_secs(run.elapsed_secs))
        ))?;
    }
    for claim in status
        .claimed
        .iter()
        .filter(|c| !c.expired && !in_a_slice(c.todo))
    {
        ctx.line(format!(
            "  {:<5} claimed by {} (epoch {}), lease ends {}  {}",
            claim.todo.to_string(),
            claim.agent,
            claim.epoch,
            views::relative(now, claim.expires_at),
            views::one_line(&claim.title)
        ))?;
    }
    if status.running.is_empty() && status.claimed.iter().all(|c| c.expired) {
        ctx.line(style.dim("  nothing"))?;
    }
    if !status.agents.is_empty() {
        ctx.line("")?;
        ctx.line(style.bold("Agents"))?;
        for a in &status.agents {
            // An agent in a slice is running it, whatever it would decide next.
            let now_doing = match status
                .running
                .iter()
                .find(|r| r.slice.agent.as_str() == a.agent)
            {
                Some(run) => format!(
                    "running {}{} ({} elapsed)",
                    run.slice.id,
                    run.slice
                        .todo
                        .map(|t| format!(" on {t}"))
                        .unwrap_or_default(),
                    short_duration(std::time::Duration::from_secs(run.elapsed_secs))
                ),
                None => a.summary.clone(),
            };
            ctx.line(format!("  {:<12} {now_doing}", a.agent))?;
        }
    }
    let expired: Vec<&Claimed> = status.claimed.iter().filter(|c| c.expired).collect();
    if !status.waiting.is_empty() || !expired.is_empty() {
        ctx.line("")?;
        let gated = status
            .waiting
            .iter()
            .filter(|w| w.reason.starts_with("blocked"))
            .count() as u64;
        let total = status.waiting_total + gated + expired.len() as u64;
        ctx.line(style.bold(&format!("Waiting ({total})")))?;
        for wait in &status.waiting {
            ctx.line(format!(
                "  {:<5} {}  {}",
                wait.todo.to_string(),
                style.dim(&wait.reason),
                views::one_line(&wait.title)
            ))?;
        }
        let unshown = total.saturating_sub((status.waiting.len() + expired.len()) as u64);
        if unshown > 0 {
            ctx.line(style.dim(&format!(
                "  … and {unshown} more waiting (loopx todo list --state open)"
            )))?;
        }
        for claim in expired {
            ctx.line(format!(
                "  {:<5} {}  {}",
                claim.todo.to_string(),
                style.yellow(&format!(
                    "lease of {} expired {}: free to reclaim",
                    claim.agent,
                    views::relative(now, claim.expires_at)
                )),
                views::one_line(&claim.title)
            ))?;
        }
    }
    ctx.line("")?;
    ctx.line(style.bold("Next"))?;
    if status.next.is_empty() {
        ctx.line(style.dim("  nothing open: add work with loopx todo add \"TITLE\""))?;
    }
    for next in &status.next {
        ctx.line(format!(
            "  {:<5} [{}] {}",
            next.todo.to_string(),
            next.priority,
            views::one_line(&next.title)
        ))?;
    }
    if !status.latest_evidence.is_empty() {
        ctx.line("")?;
        ctx.line(style.bold("Latest evidence"))?;
        for e in &status.latest_evidence {
            ctx.line(format!("  {}", views::evidence_line(style, e, now)))?;
        }
    }
    ctx.line("")?;
    let c = &status.counts;
    ctx.line(style.dim(&format!(
        "Todos: {} open · {} claimed · {} done · {} dropped",
        c.open, c.claimed, c.done, c.dropped
    )))
}

/// Each registered agent's decision, made on the same snapshot as the rest of the screen.
/// Profiles are read first (file I/O stays outside the read transaction).
fn agents_now(
    snap: &loopx_kernel::Snapshot<'_>,
    views: &[(String, Result<loopx_quota::AgentView, String>)],
    budget: &loopx_quota::Budget,
    now: Timestamp,
) -> Result<Vec<AgentNow>, loopx_kernel::KernelError> {
    let mut out = Vec::with_capacity(views.len());
    if views.is_empty() {
        return Ok(out);
    }
    let shared = std::sync::Arc::new(
        loopx_kernel::decision::SharedState::read(snap, now)?.with_budget(budget.clone()),
    );
    for (name, view) in views {
        let decided = view.clone().and_then(|view| {
            DecisionState::for_agent(shared.clone(), snap, view)
                .map(|state| state.decide())
                .map_err(|e| e.to_string())
        });
        out.push(match decided {
            Ok(d) => AgentNow {
                agent: name.clone(),
                running: None,
                decision: Some(d.decision),
                wake_at: d.wake_at.map(Timestamp),
                todo: d.todo.as_ref().map(|(id, _)| id.to_string()),
                gate: d.gate.as_ref().map(|(id, _)| id.to_string()),
                summary: super::quota::describe(&d, now),
            },
            Err(why) => AgentNow {
                agent: name.clone(),
                running: None,
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
