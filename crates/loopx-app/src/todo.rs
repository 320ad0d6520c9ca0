//! Todos: added, claimed, renewed, released, finished (done or dropped), read. A person's
//! `done` in a worktree goal lands the todo's branch first; a finished todo's worktree goes.

use std::time::Duration;

use loopx_git::worktree::{self, Landing, Repo, integration_branch, short, todo_branch};
use loopx_kernel::model::{EvidenceKind, GateKind, GateState, Goal, Todo, TodoState};
use loopx_kernel::store::{
    Applied, ClaimTodo, EditTodo, FinishTodo, NewEvidence, NewTodo, ReleaseClaim, RenewClaim,
};
use loopx_kernel::{AgentName, GoalId, Invalid, Op, TodoId};

use crate::{App, AppError, ConflictError, NotLanded, UsageError};

/// A todo with what `todo show` shows beside it.
#[derive(Debug, Clone)]
pub struct TodoDetail {
    pub todo: Todo,
    pub latest_handoff: Option<crate::evidence::JudgedHandoff>,
    /// Its branch, in a worktree goal.
    pub branch: Option<Branch>,
}

/// Where a worktree goal's todo branch stands (`todo show`, `status`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Branch {
    pub name: String,
    /// `None`: no branch yet (made at the first claim).
    pub ahead: Option<u64>,
    pub behind: Option<u64>,
    /// Done, with nothing on its branch that is not on the goal's.
    pub landed: bool,
}

impl Branch {
    /// `+2 commits, not landed`, `landed`, `no branch yet`.
    pub fn describe(&self) -> String {
        match self.ahead {
            None => "no branch yet: made at its first claim".to_owned(),
            Some(0) if self.landed => "landed".to_owned(),
            Some(0) => "nothing committed yet".to_owned(),
            Some(n) => format!("+{n} commit{}, not landed", if n == 1 { "" } else { "s" }),
        }
    }
}

/// How far back a continuation looks for the agent that worked on the todo it continues.
const RECENT_SLICES: usize = 500;

/// Which todos to list.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoQuery {
    /// Only todos in this state; `None`: the open and claimed ones (every one with `all`).
    pub state: Option<TodoState>,
    pub all: bool,
    pub page: Option<Page>,
    /// Only this goal's todos.
    pub goal: Option<GoalId>,
}

/// A page: todos added after `after`, at most `limit` (in the order they were added).
#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub after: Option<TodoId>,
    pub limit: Option<usize>,
}

/// A todo finished, and its landing in words when a person's `done` landed it.
#[derive(Debug, Clone)]
pub struct Finished {
    pub todo: Todo,
    pub landed: Option<String>,
    /// Its successor, created in the same transaction (`todo done --next`).
    pub next: Option<Todo>,
}

/// The successor of a todo marked done (`todo done --next TITLE [--same-agent]`).
#[derive(Debug, Clone)]
pub struct Successor {
    pub title: String,
    /// Held for the agent that worked on the finished todo ([`NewTodo::held_for`]).
    pub same_agent: bool,
}

/// A todo's diff: its branch, and the text of what changed.
#[derive(Debug, Clone)]
pub struct Diff {
    pub todo: Todo,
    pub branch: String,
    pub text: String,
}

impl App {
    /// Adds a todo. A monitor's profile is loaded now, so a misspelt name is refused when it is
    /// given rather than at the first poll, hours later.
    ///
    /// A person's monitor pins the files of the project its check names: a poll does not run
    /// one an agent may have changed since (`loopx_domain::pin`).
    pub fn add_todo(&self, mut new: NewTodo) -> Result<Todo, AppError> {
        if let Some(profile) = new.monitor.as_ref().and_then(|m| m.profile.as_deref()) {
            self.profile(profile)?;
        }
        if let Some(monitor) = new.monitor.as_mut() {
            monitor.pins = if loopx_vocab::Actor::of(&self.caller.actor).is_person() {
                loopx_domain::pin::pins_of(self.project.root(), &monitor.check)
            } else {
                Vec::new()
            };
        }
        self.run(new)
    }

    /// A person changes a todo's title, detail or priority. Refused inside a slice: the task
    /// an agent is held to is a person's to change.
    pub fn edit_todo(&self, edit: EditTodo) -> Result<Todo, AppError> {
        self.refuse_in_slice(|actor| loopx_kernel::Refused::EditByAgent { actor })?;
        self.run(edit)
    }

    pub fn claim_todo(
        &self,
        todo: TodoId,
        agent: AgentName,
        ttl: Duration,
    ) -> Result<Todo, AppError> {
        self.run(ClaimTodo { todo, agent, ttl })
    }

    pub fn renew_claim(
        &self,
        todo: TodoId,
        agent: AgentName,
        epoch: u64,
        ttl: Duration,
    ) -> Result<Todo, AppError> {
        self.run(RenewClaim {
            todo,
            agent,
            epoch,
            ttl,
        })
    }

    pub fn release_claim(
        &self,
        todo: TodoId,
        agent: AgentName,
        epoch: u64,
    ) -> Result<Todo, AppError> {
        self.run(ReleaseClaim { todo, agent, epoch })
    }

    /// Finishes a todo, done or dropped. A person's `done` in a worktree goal means "on the
    /// goal's branch": the todo's work lands first, by the same rules as an agent's, or the
    /// todo stays as it is (a conflict, naming why). Done or dropped, its worktree goes; its
    /// branch stays.
    pub fn finish_todo(&self, finish: FinishTodo) -> Result<Finished, AppError> {
        self.finish_todo_then(finish, None)
    }

    /// [`App::finish_todo`], and with `next` (a title) its successor in the same transaction:
    /// a todo on the same goal, with the same role, needs and priority, after the finished one (so
    /// the link says where it came from). Done or nothing: a successor the kernel refuses
    /// leaves the todo as it was.
    pub fn finish_todo_then(
        &self,
        finish: FinishTodo,
        next: Option<Successor>,
    ) -> Result<Finished, AppError> {
        let tid = finish.todo;
        if next.is_some() && finish.to != TodoState::Done {
            return Err(UsageError::SuccessorNotDone.into());
        }
        let successor = match next {
            Some(next) => Some(self.successor(&finish, next)?),
            None => None,
        };
        let worktree_goal = self.read(|s| {
            let Some(t) = s.todo(tid)? else {
                return Ok(None);
            };
            Ok(s.goal(t.goal)?
                .filter(|g| g.isolation.is_worktree())
                .map(|g| (g, t.title)))
        })?;
        // The successor is checked before anything lands: a branch merged for a todo the
        // kernel then leaves open would break "both or neither".
        if let Some(next) = &successor {
            next.check()?;
        }
        let landed = match (&worktree_goal, finish.to, &finish.agent) {
            (Some((goal, title)), TodoState::Done, None) => {
                self.land_for_person(goal, tid, title)?
            }
            _ => None,
        };
        let mut ops: Vec<Op> = landed.iter().map(|s| land_evidence(tid, s)).collect();
        // The successor first, waiting on the todo; finishing the todo then frees it, in the
        // same transaction.
        let with_next = successor.is_some();
        ops.extend(successor.map(Op::TodoAdd));
        ops.push(Op::TodoFinish(finish));
        let applied = self
            .store()?
            .apply_all(ops, &self.caller().actor, self.now())?;
        let (todo, next) = finished_and_next(tid, applied, with_next)?;
        if let Some((goal, _)) = &worktree_goal
            && let Err(e) = worktree::remove(self.project(), goal.id, todo.id)
        {
            tracing::warn!(todo = %todo.id, error = %e, "cannot remove the todo's worktree");
        }
        Ok(Finished { todo, landed, next })
    }

    /// The todo `next` makes to follow the one `finish` finishes: on its goal, with its role,
    /// needs and priority, after it; held for the agent that worked on it when asked.
    fn successor(&self, finish: &FinishTodo, next: Successor) -> Result<NewTodo, AppError> {
        let tid = finish.todo;
        let before = self.read(|s| s.todo(tid))?.ok_or(Invalid::NotFound {
            what: "todo",
            id: tid.to_string(),
        })?;
        let held_for = match next.same_agent {
            true => Some(self.worked_on_by(&before, finish.agent.as_ref())?),
            false => None,
        };
        Ok(NewTodo {
            goal: Some(before.goal),
            title: next.title,
            priority: before.priority,
            role: before.role.clone(),
            needs: before.needs.clone(),
            after: vec![tid],
            held_for,
            ..NewTodo::default()
        })
    }

    /// The agent a continuation of `todo` is held for: the one finishing it, else its claim's
    /// holder (its lease lapsed), else the agent of its latest recent slice.
    fn worked_on_by(
        &self,
        todo: &Todo,
        finishing: Option<&AgentName>,
    ) -> Result<AgentName, AppError> {
        if let Some(agent) = finishing.or(todo.lease.as_ref().map(|l| &l.agent)) {
            return Ok(agent.clone());
        }
        let last = self.read(|s| {
            Ok(s.slices_tail(RECENT_SLICES)?
                .into_iter()
                .rev()
                .find(|slice| slice.todo == Some(todo.id))
                .map(|slice| slice.agent))
        })?;
        last.ok_or_else(|| {
            UsageError::NoSameAgent {
                todo: todo.id,
                recent: RECENT_SLICES,
            }
            .into()
        })
    }

    /// Lands a todo a person marks done; what landed, in words (`None`: it has no branch, or
    /// nothing on it to land), or why the todo stays open.
    fn land_for_person(
        &self,
        goal: &Goal,
        todo: TodoId,
        title: &str,
    ) -> Result<Option<String>, AppError> {
        let project = self.project();
        let branch = todo_branch(goal.id, todo);
        if !Repo::of(project).is_ok_and(|repo| repo.has_branch(&branch)) {
            return Ok(None);
        }
        let rollback_open = self.read(|s| {
            Ok(s.gates()?.into_iter().any(|g| {
                g.state == GateState::Open
                    && matches!(g.kind, GateKind::Rollback { todo: t, .. } if t == todo)
            }))
        })?;
        if rollback_open {
            return Err(ConflictError::RollbackAsked(todo).into());
        }
        if worktree::has_uncommitted(project, goal.id, todo).unwrap_or(false) {
            return Err(ConflictError::UncommittedWork(todo).into());
        }
        let into = integration_branch(goal.id);
        let refused = |why: NotLanded| ConflictError::NotLanded { todo, why }.into();
        // No claim to lose: the kernel refuses the person's `done` if someone took the todo.
        match loopx_domain::land::land_todo(project, self.exe()?, goal, todo, title, &|| true) {
            Landing::Landed {
                commit, commits, ..
            } => Ok(Some(format!(
                "{todo} landed on {into} as {}: {commits} commit(s)",
                short(&commit)
            ))),
            Landing::Empty => Ok(None),
            Landing::Conflict { files, .. } => Err(refused(NotLanded::Conflict {
                branch,
                into,
                files,
            })),
            Landing::CheckFailed { how, output } => {
                let tail: Vec<&str> = output.lines().rev().take(10).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                let tail = tail.join("\n");
                Err(refused(NotLanded::CheckFailed { how, into, tail }))
            }
            Landing::Failed(why) => Err(refused(NotLanded::Failed(why))),
        }
    }

    /// The todos a query asks for, and whether more follow the page.
    pub fn todos(&self, query: TodoQuery) -> Result<(Vec<Todo>, bool), AppError> {
        if query.page.is_some_and(|p| p.limit == Some(0)) {
            return Err(
                Invalid::Other("`--limit 0` lists nothing: give 1 or more".to_owned()).into(),
            );
        }
        let TodoQuery {
            state,
            all,
            page,
            goal,
        } = query;
        let wanted = |todo: &Todo| {
            goal.is_none_or(|g| todo.goal == g)
                && match state {
                    Some(state) => todo.state == state,
                    None => all || !todo.state.is_final(),
                }
        };
        // Open and claimed todos come from the active index; finished ones need every todo.
        let finished_wanted = all || state.is_some_and(TodoState::is_final);
        self.read(|s| match page {
            Some(page) => s.todos_page(
                page.after.map_or(0, |t| t.0),
                page.limit.unwrap_or(usize::MAX),
                !finished_wanted,
                wanted,
            ),
            None => {
                let todos = if finished_wanted {
                    s.todos_where(wanted)?
                } else {
                    s.active_todos()?
                };
                Ok((todos.into_iter().filter(|t| wanted(t)).collect(), false))
            }
        })
    }

    /// A todo, its latest handoff and, in a worktree goal, its branch.
    pub fn todo(&self, id: TodoId) -> Result<TodoDetail, AppError> {
        let judge = self.evidence_judge(self.evidence_rules().unwrap_or_default());
        let (todo, latest_handoff, goal) = self.read(|s| {
            let todo = s.todo(id)?.ok_or_else(|| Invalid::NotFound {
                what: "todo",
                id: id.to_string(),
            })?;
            let handoff = match todo.latest_handoff {
                Some(h) => s.handoff(h)?.map(|h| judge.handoff(s, h)).transpose()?,
                None => None,
            };
            let goal = s.goal(todo.goal)?;
            Ok((todo, handoff, goal))
        })?;
        let branch = goal
            .filter(|g| g.isolation.is_worktree())
            .map(|g| self.branch_of(&todo, g.id));
        Ok(TodoDetail {
            todo,
            latest_handoff,
            branch,
        })
    }

    /// Where a worktree goal's todo branch stands.
    pub fn branch_of(&self, todo: &Todo, goal: GoalId) -> Branch {
        let states = worktree::branch_states(self.project(), goal).unwrap_or_default();
        let state = states.iter().find(|s| s.todo == todo.id);
        Branch {
            name: todo_branch(goal, todo.id),
            ahead: state.map(|s| s.ahead),
            behind: state.map(|s| s.behind),
            landed: todo.state == TodoState::Done && state.is_some_and(|s| s.ahead == 0),
        }
    }

    /// What the todo's branch changed since it forked from the goal's branch, and what its
    /// worktree holds uncommitted.
    pub fn todo_diff(&self, id: TodoId, stat: bool) -> Result<Diff, AppError> {
        let (todo, goal) = self.read(|s| {
            let todo = s.todo(id)?.ok_or_else(|| Invalid::NotFound {
                what: "todo",
                id: id.to_string(),
            })?;
            let goal = s.goal(todo.goal)?;
            Ok((todo, goal))
        })?;
        let Some(goal) = goal.filter(|g| g.isolation.is_worktree()) else {
            return Err(UsageError::SharedTreeTodo(todo.id).into());
        };
        let text =
            worktree::todo_diff(self.project(), goal.id, todo.id, stat).map_err(UsageError::Git)?;
        Ok(Diff {
            branch: todo_branch(goal.id, todo.id),
            todo,
            text,
        })
    }
}

/// The finished todo and its successor, from what the transaction applied (the todo last, the
/// successor before it).
fn finished_and_next(
    tid: TodoId,
    mut applied: Vec<Applied>,
    with_next: bool,
) -> Result<(Todo, Option<Todo>), AppError> {
    let todo = match applied.pop() {
        Some(Applied::Todo(todo)) => todo,
        other => {
            let yielded = other.map(Box::new);
            return Err(ConflictError::FinishYielded { todo: tid, yielded }.into());
        }
    };
    let next = match (with_next, applied.pop()) {
        (true, Some(Applied::Todo(next))) => Some(next),
        _ => None,
    };
    Ok((todo, next))
}

/// The `land` evidence of a todo a person's `done` landed: what landed, in words.
fn land_evidence(todo: TodoId, summary: &str) -> Op {
    Op::EvidenceAdd(NewEvidence {
        kind: EvidenceKind::Land,
        summary: summary.to_owned(),
        detail: String::new(),
        files: vec![],
        todo: Some(todo),
        slice: None,
        epoch: None,
        work: None,
        metric: None,
    })
}
