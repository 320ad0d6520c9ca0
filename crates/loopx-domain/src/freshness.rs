//! Whether evidence is still fresh: one judgement that `evidence list`, `status`, the slice
//! prompt and the done check all use (`docs/goals.md`, "Evidence that ages"). Handoffs and
//! answers age here too: a handoff written before its todo or goal changed, an answer given
//! under an older revision or longer ago than `decision_max_age`.
//!
//! Evidence is stale, first reason first, when
//! 1. a file it pinned no longer has the content it pinned (or is gone);
//! 2. its kind's shelf life (`[evidence] shelf_life` in `loopx.toml`) has passed;
//! 3. it judges the work ([`Freshness::judges`]) and an amendment since it was recorded
//!    changed the objective, or narrowed the scope away from a file it pinned;
//! 4. it judges the work and a file in the goal's scope has other content now than the tree had
//!    when it was recorded (its [`WorkMark`]): the tests ran on other code.
//!
//! Only evidence that judges something ages with the work: a test result, an artifact, a kind
//! the done check reads (`done_needs`). A record of what happened (`t1 landed on loopx/g1 as
//! 3d50e41`, `slice s2 changed 2 files`) stays true whatever the objective says now.
//!
//! Where the work is: the project's tree, or in a worktree goal the todo's worktree (its
//! branch once the worktree is gone). A tree loopx cannot check (no git, a commit no longer in
//! the repository) is said so, and counts as stale: evidence that cannot be shown to be about
//! this code does not prove this code.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use loopx_adapters::EvidenceRules;
use loopx_git::Git;
use loopx_kernel::model::{
    Blocks, Evidence, EvidenceKind, Gate, Goal, GoalStatus, Handoff, Isolation, WorkMark,
};
use loopx_kernel::scope::Scope;
use loopx_kernel::{GoalId, KernelError, Project, Snapshot, Timestamp, TodoId};
use sha2::{Digest, Sha256};

/// Where a todo's work is, for marks and comparisons.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    /// A checked-out tree.
    Tree(PathBuf),
    /// A branch with no tree (a worktree goal's todo after its worktree was removed).
    Branch(String),
}

/// A comparison already made: the tree, the scope, and the recorded mark (as text).
type Compared = (Work, Vec<String>, String);

/// Judges evidence against the tree as it is now; marks of the present are taken once per
/// tree, comparisons once per recorded mark, and the comparisons share what git said about
/// the repository (`loopx_git::work::Comparer`).
#[derive(Debug)]
pub struct Freshness<'a> {
    root: &'a Path,
    git: Git,
    rules: &'a EvidenceRules,
    now: Timestamp,
    marks: BTreeMap<Work, Result<WorkMark, String>>,
    compared: BTreeMap<Compared, Result<Vec<String>, String>>,
    /// What git said in earlier comparisons (where a tree is, a file's id at a commit).
    comparer: loopx_git::work::Comparer,
    goals: BTreeMap<GoalId, Option<Goal>>,
}

impl<'a> Freshness<'a> {
    pub fn new(project: &'a Project, rules: &'a EvidenceRules, now: Timestamp) -> Self {
        Freshness {
            root: project.root(),
            git: Git::of(project),
            rules,
            now,
            marks: BTreeMap::new(),
            compared: BTreeMap::new(),
            comparer: loopx_git::work::Comparer::default(),
            goals: BTreeMap::new(),
        }
    }

    /// Why `e` is stale, in a few words (`src/lib.rs changed since it was recorded`); `None`
    /// when it is fresh.
    pub fn stale(
        &mut self,
        snap: &Snapshot<'_>,
        e: &Evidence,
    ) -> Result<Option<String>, KernelError> {
        // A file pinned from inside a slice is named relative to the tree the slice worked
        // in: a worktree goal's todo's own worktree.
        let pinned_in = match (e.slice, self.goal_of(snap, e)?) {
            (Some(_), Some(goal)) => match work_of(self.root, &goal, e.todo) {
                Work::Tree(dir) => dir,
                Work::Branch(_) => self.root.to_path_buf(),
            },
            _ => self.root.to_path_buf(),
        };
        if let Some(why) = e.files.iter().find_map(|f| pinned_changed(&pinned_in, f)) {
            return Ok(Some(why));
        }
        if let Some(life) = self.rules.shelf_life.get(&e.kind) {
            let age = self.now.0.saturating_sub(e.at.0);
            if u128::from(age) > life.as_millis() {
                return Ok(Some(format!(
                    "older than the {} shelf life of {}",
                    e.kind,
                    loopx_kernel::time::short_duration(*life)
                )));
            }
        }
        if !self.judges(e.kind) {
            return Ok(None);
        }
        let Some(goal) = self.goal_of(snap, e)? else {
            return Ok(None);
        };
        if let Some(why) = revised(snap, &goal, e)? {
            return Ok(Some(why));
        }
        let Some(then) = &e.work else {
            return Ok(None);
        };
        let work = work_of(self.root, &goal, e.todo);
        let changed = self.changed_since(&work, &goal.scope, then);
        Ok(match changed {
            Ok(files) if files.is_empty() => None,
            Ok(files) => Some(format!("{} changed since it was recorded", named(&files))),
            Err(why) => Some(format!("its work cannot be compared: {why}")),
        })
    }

    /// Whether evidence of `kind` judges the work, so that it ages with it: a test result or an
    /// artifact, or a kind the done check reads. `diff`, `land` and the rest say what happened.
    pub fn judges(&self, kind: EvidenceKind) -> bool {
        kind.judges_work() || self.rules.done_needs.contains(&kind)
    }

    /// What changed since `h` was written (its todo's words, the goal's revision), in a few
    /// words; `None` while it still describes the work as it is.
    pub fn handoff(
        &mut self,
        snap: &Snapshot<'_>,
        h: &Handoff,
    ) -> Result<Option<String>, KernelError> {
        let todo = match h.todo {
            Some(id) => snap.todo(id)?,
            None => None,
        };
        let revision = self.goal_about(snap, h.todo)?.map_or(0, |g| g.revision);
        Ok(h.changed_since(todo.as_ref(), revision))
    }

    /// How an answered gate's answer has aged, where it is used: `answered under revision 1;
    /// the goal is at revision 2`, or `answered 9d ago`; `None` when it is recent and the goal
    /// has not changed since.
    pub fn answer(
        &mut self,
        snap: &Snapshot<'_>,
        gate: &Gate,
    ) -> Result<Option<String>, KernelError> {
        let Some(answer) = &gate.answer else {
            return Ok(None);
        };
        let todo = match &gate.blocks {
            Blocks::Todos(todos) => todos.first().copied(),
            _ => None,
        };
        let mut why = Vec::new();
        if let Some(goal) = self.goal_about(snap, todo)? {
            // Recorded with the answer since record version 13; an older answer is dated by
            // its time (which a wall clock stepped back across an amendment can misdate).
            let under = match gate.answered_under {
                0 => snap
                    .goal_revisions(goal.id)?
                    .iter()
                    .filter(|r| r.at <= answer.at)
                    .map(|r| r.number)
                    .max()
                    .unwrap_or(1),
                under => under,
            };
            if under < goal.revision {
                why.push(format!(
                    "answered under revision {under}; the goal is at revision {}",
                    goal.revision
                ));
            }
        }
        let age = self.now.since(answer.at);
        if age > self.rules.decision_max_age {
            why.push(format!(
                "answered {} ago",
                loopx_kernel::time::short_duration(age)
            ));
        }
        Ok((!why.is_empty()).then(|| why.join("; ")))
    }

    fn goal_of(&mut self, snap: &Snapshot<'_>, e: &Evidence) -> Result<Option<Goal>, KernelError> {
        self.goal_about(snap, e.todo)
    }

    /// The goal of `todo`, or the active one for none.
    fn goal_about(
        &mut self,
        snap: &Snapshot<'_>,
        todo: Option<TodoId>,
    ) -> Result<Option<Goal>, KernelError> {
        let id = match todo {
            Some(todo) => snap.todo(todo)?.map(|t| t.goal),
            None => snap
                .goals()?
                .into_iter()
                .rev()
                .find(|g| g.status == GoalStatus::Active)
                .map(|g| g.id),
        };
        let Some(id) = id else {
            return Ok(None);
        };
        if let std::collections::btree_map::Entry::Vacant(slot) = self.goals.entry(id) {
            slot.insert(snap.goal(id)?);
        }
        Ok(self.goals.get(&id).cloned().flatten())
    }

    fn changed_since(
        &mut self,
        work: &Work,
        scope: &[String],
        then: &WorkMark,
    ) -> Result<Vec<String>, String> {
        let key = (work.clone(), scope.to_vec(), format!("{then:?}"));
        if let Some(known) = self.compared.get(&key) {
            return known.clone();
        }
        let now = self
            .marks
            .entry(work.clone())
            .or_insert_with(|| mark_of(self.git, self.root, work))
            .clone();
        let result = now.and_then(|now| {
            let scope = Scope::recorded(scope);
            let dir = match work {
                Work::Tree(dir) => dir.as_path(),
                Work::Branch(_) => self.root,
            };
            (self.comparer)
                .changed_between(self.git, dir, then, &now, &|p| scope.contains(p))
                .map_err(|e| e.to_string())
        });
        self.compared.insert(key, result.clone());
        result
    }
}

/// The mark to record with new evidence about `todo`'s work (or the project's, for none):
/// `None` for a kind that speaks about no work, or a tree git cannot read.
pub fn mark_for(
    project: &Project,
    snap: &Snapshot<'_>,
    kind: EvidenceKind,
    todo: Option<TodoId>,
) -> Option<WorkMark> {
    if !kind.speaks_about_work() {
        return None;
    }
    let (git, root) = (Git::of(project), project.root());
    let goal = match todo {
        Some(t) => snap.todo(t).ok()??.goal,
        None => {
            return loopx_git::work::mark_or_unknown(git, root);
        }
    };
    let goal = snap.goal(goal).ok()??;
    match work_of(root, &goal, todo) {
        Work::Tree(dir) => loopx_git::work::mark_or_unknown(git, &dir),
        Work::Branch(branch) => loopx_git::work::mark_at(git, root, &branch).ok(),
    }
}

/// Why a later revision of the goal makes evidence stale: its objective changed, or it took a
/// file the evidence pins out of the scope.
fn revised(snap: &Snapshot<'_>, goal: &Goal, e: &Evidence) -> Result<Option<String>, KernelError> {
    if e.revision == 0 || e.revision >= goal.revision {
        return Ok(None);
    }
    let revisions = snap.goal_revisions(goal.id)?;
    for pair in revisions.windows(2) {
        let (before, rev) = (&pair[0], &pair[1]);
        if rev.number <= e.revision {
            continue;
        }
        if rev.changed.iter().any(|c| c == "objective") {
            return Ok(Some(format!(
                "recorded under revision {}; the objective changed in revision {}",
                e.revision, rev.number
            )));
        }
        // Only a file the scope held before and not after: evidence pinning a file
        // that was never in the scope is not aged by a change of it.
        let (old, new) = (Scope::recorded(&before.scope), Scope::recorded(&rev.scope));
        if rev.changed.iter().any(|c| c == "scope")
            && let Some(f) = e
                .files
                .iter()
                .find(|f| old.contains(&f.path) && !new.contains(&f.path))
        {
            return Ok(Some(format!(
                "recorded under revision {}; revision {} took {} out of the scope",
                e.revision, rev.number, f.path
            )));
        }
    }
    Ok(None)
}

fn work_of(root: &Path, goal: &Goal, todo: Option<TodoId>) -> Work {
    match (&goal.isolation, todo) {
        (Isolation::Worktree { .. }, Some(todo)) => {
            let dir = loopx_git::worktree::worktree_dir(root, goal.id, todo);
            if dir.is_dir() {
                Work::Tree(dir)
            } else {
                Work::Branch(loopx_git::worktree::todo_branch(goal.id, todo))
            }
        }
        _ => Work::Tree(root.to_path_buf()),
    }
}

fn mark_of(git: Git, root: &Path, work: &Work) -> Result<WorkMark, String> {
    match work {
        Work::Tree(dir) => loopx_git::work::mark(git, dir),
        Work::Branch(branch) => loopx_git::work::mark_at(git, root, branch),
    }
    .map_err(|e| e.to_string())
}

/// Why a pinned file no longer holds what was pinned; `None` while it does.
fn pinned_changed(root: &Path, f: &loopx_kernel::model::FileRef) -> Option<String> {
    let path = root.join(&f.path);
    let Ok(mut file) = loopx_adapters::open_regular(&path) else {
        return Some(format!("{} is gone", f.path));
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) => return Some(format!("{} cannot be read ({e})", f.path)),
        }
    }
    let now = hex::encode(hasher.finalize());
    (now != f.sha256).then(|| {
        format!(
            "{} changed since it was pinned (sha256 {} now {})",
            f.path,
            f.sha256.get(..12).unwrap_or(&f.sha256),
            &now[..12]
        )
    })
}

/// `a` / `a and b` / `a, b and 3 more files`.
fn named(files: &[String]) -> String {
    match files {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [a, b, rest @ ..] => format!("{a}, {b} and {} more files", rest.len()),
        [] => "nothing".to_owned(),
    }
}
