//! The todos `status` reads: every claimed one, and the first of the goal's waiting, gated and
//! ready ones — a bounded read whatever the number of todos.

use loopx_kernel::model::{Gate, Todo};
use loopx_kernel::store::TodoCounts;
use loopx_kernel::{Timestamp, TodoId};

use super::FIRST_SCREEN;

/// How many waiting todos `status` lists (the count says how many there are).
const WAITING_SHOWN: usize = 10;

/// The todos `status` shows: every claimed one, and the first of the goal's waiting and ready
/// ones.
#[derive(Debug, Default)]
pub(super) struct FirstTodos {
    pub claimed: Vec<Todo>,
    /// Waiting on a dependency, with the dependency: the first [`WAITING_SHOWN`].
    pub waiting: Vec<(Todo, Todo)>,
    /// Ready todos that an open gate holds back.
    pub gated: Vec<(Todo, loopx_kernel::GateId)>,
    /// The first ready todos in the order agents take them, none of them gated.
    pub ready: Vec<Todo>,
    /// The goal's monitors whose dependencies are all finished.
    pub monitors: Vec<Todo>,
    pub waiting_total: u64,
    pub counts: TodoCounts,
}

pub(super) fn first_todos(
    s: &loopx_kernel::Snapshot<'_>,
    goal: Option<loopx_kernel::GoalId>,
    gates: &[Gate],
    counts: TodoCounts,
) -> Result<FirstTodos, loopx_kernel::KernelError> {
    let claimed = s.claimed_todos()?;
    let Some(goal) = goal else {
        return Ok(FirstTodos {
            claimed,
            counts,
            ..FirstTodos::default()
        });
    };
    let mut first = FirstTodos {
        claimed,
        waiting_total: s.waiting_count(goal)?,
        monitors: s.monitors(goal)?,
        counts,
        ..FirstTodos::default()
    };
    for todo in s.waiting_todos(goal, WAITING_SHOWN)? {
        if let Some(dep) = first_open_dep(s, &todo)? {
            first.waiting.push((todo, dep));
        }
    }
    // A global gate holds back every todo, a goal's gate the goal's; other gates name the todos
    // they hold back: a few lookups, not a scan.
    let named = named_in(gates);
    first.gated = gated_named(s, goal, gates, &named)?;
    first.ready = ready_first(s, goal, gates, FIRST_SCREEN + named.len())?;
    let global = gates.iter().find(|g| g.blocks.holds_whole_goal(goal));
    if let Some(gate) = global {
        // Nothing is next while a gate holds back everything (or this whole goal): the first
        // in line wait on it.
        first
            .gated
            .extend(first.ready.drain(..).map(|t| (t, gate.id)));
    }
    Ok(first)
}

/// The gate that names `id` among the todos it holds back, if any.
fn named_by(gates: &[Gate], id: TodoId) -> Option<loopx_kernel::GateId> {
    gates
        .iter()
        .find(|g| matches!(&g.blocks, loopx_kernel::model::Blocks::Todos(ids) if ids.contains(&id)))
        .map(|g| g.id)
}

/// The goal's open todos in `named` that only their gate holds back, each with that gate.
fn gated_named(
    s: &loopx_kernel::Snapshot<'_>,
    goal: loopx_kernel::GoalId,
    gates: &[Gate],
    named: &[TodoId],
) -> Result<Vec<(Todo, loopx_kernel::GateId)>, loopx_kernel::KernelError> {
    let mut gated = Vec::new();
    for id in named {
        let Some(todo) = s.todo(*id)? else { continue };
        if todo.state != loopx_kernel::model::TodoState::Open || todo.goal != goal {
            continue;
        }
        // Listed as gated only when nothing else holds it: a todo waiting on a dependency
        // is listed (and counted) as waiting.
        if first_open_dep(s, &todo)?.is_some() {
            continue;
        }
        if let Some(gate) = named_by(gates, *id) {
            gated.push((todo, gate));
        }
    }
    Ok(gated)
}

/// The first [`FIRST_SCREEN`] ready todos no gate names, in the order agents take them;
/// `wanted` of each kind are read, enough to fill the screen once the named ones are left out.
fn ready_first(
    s: &loopx_kernel::Snapshot<'_>,
    goal: loopx_kernel::GoalId,
    gates: &[Gate],
    wanted: usize,
) -> Result<Vec<Todo>, loopx_kernel::KernelError> {
    let mut ready = Vec::new();
    for role in s.ready_roles(goal)? {
        for needs in [false, true] {
            ready.extend(
                s.ready_todos(goal, role.as_deref(), needs, wanted)?
                    .into_iter()
                    .filter(|t| named_by(gates, t.id).is_none()),
            );
        }
    }
    ready.sort_by_key(|t| (std::cmp::Reverse(t.priority), t.id));
    ready.truncate(FIRST_SCREEN);
    Ok(ready)
}

/// The first of `todo`'s dependencies that is not finished: what it waits on.
fn first_open_dep(
    s: &loopx_kernel::Snapshot<'_>,
    todo: &Todo,
) -> Result<Option<Todo>, loopx_kernel::KernelError> {
    for dep in &todo.after {
        if let Some(dep) = s.todo(*dep)?.filter(|d| !d.state.is_final()) {
            return Ok(Some(dep));
        }
    }
    Ok(None)
}

/// The todos the gates name (rather than holding back everything), each once.
fn named_in(gates: &[Gate]) -> Vec<TodoId> {
    let mut named: Vec<TodoId> = gates
        .iter()
        .flat_map(|g| match &g.blocks {
            loopx_kernel::model::Blocks::Todos(ids) => ids.clone(),
            _ => Vec::new(),
        })
        .collect();
    named.sort_unstable();
    named.dedup();
    named
}

/// What a todo waiting on `dep` waits for, in words: `waits on monitor t3 (Wait for CI), next
/// poll in 6s`, `waits on t2 (Tag the release)`.
pub(super) fn waits_on(dep: &Todo, now: Timestamp) -> String {
    let mut title = loopx_kernel::limits::clip(&dep.title, 60);
    if title.len() < dep.title.len() {
        title.push('…');
    }
    match &dep.monitor {
        Some(m) => match m.asked {
            Some(gate) => format!(
                "waits on monitor {} ({title}): a person is asked, gate {gate}",
                dep.id
            ),
            None => format!(
                "waits on monitor {} ({title}), next poll {}",
                dep.id,
                loopx_kernel::time::relative(now, m.next_at)
            ),
        },
        None => format!("waits on {} ({title})", dep.id),
    }
}
