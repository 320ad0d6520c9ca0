//! # Theory of operation
//!
//! `loopx-testkit` holds what loopx's tests would otherwise spell again in each file: the
//! kernel's, the supervisor's and the end-to-end tests (`tests/e2e`) depend on it as a
//! dev-dependency, and nothing else does. It is test code: it panics (naming what it waited
//! for, or the command that failed) where a product crate would return an error.
//!
//! - [`wait_for`] and [`wait_for_some`]: poll a condition until it holds or a deadline passes.
//!   A test waits for the thing it needs (a file, an event, a state in the store), never for a
//!   guessed time: a fixed sleep is either too short on a loaded machine or wasted on an idle
//!   one. [`poll`] is the same loop giving `None` at the deadline, for a caller that reports
//!   the failure itself.
//! - The model's fixtures, each a value with its plain defaults that a test changes by struct
//!   update syntax where it is about a field (`NewTodo { priority: 5, ..todo("Ship it") }`):
//!   [`goal`] (workspace-write, shared, a whole share), [`agent`], [`todo`] (the current goal,
//!   priority 0, nothing else), and [`begin`] (a slice begun on a todo, or a planning slice,
//!   claimed for ten minutes, admitted with no pacing and no windows).
//! - [`git`]: git run in a directory as a test user, insisting on success; [`committed_repo`]:
//!   a repository on `main` with some files in its first commit, as most projects are.
//!
//! It depends on `loopx-kernel` for the model's types only. The kernel's own integration tests
//! use it too (cargo allows a dev-dependency on a crate that depends on the one under test); its
//! unit tests cannot, since there the kernel is a different build of the crate than the one the
//! kit sees.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use loopx_kernel::model::{Isolation, PermissionLevel, SliceKind};
use loopx_kernel::store::QuotaRequest;
pub use loopx_kernel::store::{BeginSlice, NewAgent, NewGoal, NewSlice, NewTodo};
use loopx_kernel::{AgentName, TodoId};

/// Polls `condition` until it holds; panics naming `what` if it does not within `within`.
///
/// The first check is immediate; later ones back off from 5 ms to 100 ms, so a condition that
/// is quick to hold is seen at once and a slow one costs little CPU on a shared machine.
#[track_caller]
pub fn wait_for(what: &str, within: Duration, mut condition: impl FnMut() -> bool) {
    wait_for_some(what, within, || condition().then_some(()));
}

/// Polls `probe` until it gives a value, and returns it; panics naming `what` if it gives none
/// within `within`.
#[track_caller]
pub fn wait_for_some<T>(what: &str, within: Duration, probe: impl FnMut() -> Option<T>) -> T {
    poll(within, probe).unwrap_or_else(|| panic!("{what}: not within {within:?}"))
}

/// Polls `probe` until it gives a value, and returns it; `None` if it gives none within
/// `within`, for a caller that has more to say than [`wait_for_some`]'s panic (the page it
/// shows, the events seen so far) or a process to kill first.
pub fn poll<T>(within: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// A new todo titled `title`, every other field at its default (the current goal, priority 0,
/// no dependencies, no role, not a monitor).
pub fn todo(title: impl Into<String>) -> NewTodo {
    NewTodo {
        title: title.into(),
        ..NewTodo::default()
    }
}

/// A new goal with `objective`: the next id, the whole project in scope, workspace-write, the
/// whole share, worked in the checkout itself.
pub fn goal(objective: impl Into<String>) -> NewGoal {
    NewGoal {
        priority: 0,
        id: None,
        objective: objective.into(),
        scope: vec![],
        permission: PermissionLevel::WorkspaceWrite,
        share: 1.0,
        isolation: Isolation::Shared,
    }
}

/// A new agent `name` running profile `profile`, with no capabilities and no role.
#[track_caller]
pub fn agent(name: &str, profile: &str) -> NewAgent {
    NewAgent {
        name: name.parse().expect("an agent name"),
        profile: profile.into(),
        capabilities: vec![],
        role: None,
    }
}

/// A slice of `agent` begun on `todo` (a work slice), or with none (a planning slice): a
/// 60 s limit, claimed for ten minutes, admitted on account `acct` with no pacing or windows.
pub fn begin(agent: &AgentName, todo: Option<TodoId>) -> BeginSlice {
    BeginSlice {
        slice: NewSlice {
            goal: None,
            agent: agent.clone(),
            todo,
            epoch: None,
            kind: if todo.is_some() {
                SliceKind::Work
            } else {
                SliceKind::Plan
            },
            profile_hash: "h".into(),
            argv: vec!["agent".into()],
            limit_secs: 60,
            log: None,
            owner: None,
        },
        claim_ttl: Duration::from_secs(600),
        admit: QuotaRequest {
            goal: None,
            agent: agent.clone(),
            account: "acct".into(),
            tokens: 0,
            cost_usd: 0.0,
            busy: None,
            rules: std::sync::Arc::new(loopx_domain::account::AccountLimits {
                pacing: None,
                windows: vec![],
            }),
        },
        messages: vec![],
    }
}

/// Runs git in `dir` as a test user (so a commit needs no configured identity) and insists on
/// success; its stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `dir` a git repository on `main` whose first commit (`start`) holds `files` (paths
/// relative to `dir`, and their contents) and nothing else.
#[track_caller]
pub fn committed_repo(dir: &Path, files: &[(&str, &str)]) {
    git(dir, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("a directory for a committed file");
        }
        std::fs::write(&path, text).expect("a committed file");
    }
    // These files only: anything else in `dir` (a `.loopx/`) stays out of the commit.
    let paths: Vec<&str> = files.iter().map(|(path, _)| *path).collect();
    git(dir, &[&["add", "--"][..], &paths].concat());
    git(dir, &["commit", "-q", "-m", "start"]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_that_comes_to_hold_is_waited_for() {
        let mut polls = 0;
        wait_for("the third poll", Duration::from_secs(5), || {
            polls += 1;
            polls == 3
        });
        assert_eq!(polls, 3);
    }

    #[test]
    #[should_panic(expected = "the impossible: not within")]
    fn a_condition_that_never_holds_names_what_was_waited_for() {
        wait_for("the impossible", Duration::from_millis(30), || false);
    }

    #[test]
    fn a_todo_has_its_title_and_the_defaults() {
        let t = todo("Ship it");
        assert_eq!(t.title, "Ship it");
        assert_eq!(
            t,
            NewTodo {
                title: "Ship it".into(),
                ..NewTodo::default()
            }
        );
    }
}
