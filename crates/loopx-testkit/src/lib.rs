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
//! - [`todo`]: a [`NewTodo`] with a title and every other field at its default; a test names
//!   only the fields it is about, with struct update syntax
//!   (`NewTodo { priority: 5, ..todo("Ship it") }`).
//! - [`git`]: git run in a directory as a test user, insisting on success.
//!
//! It depends on `loopx-kernel` for the model's types only. The kernel's own integration tests
//! use it too (cargo allows a dev-dependency on a crate that depends on the one under test); its
//! unit tests cannot, since there the kernel is a different build of the crate than the one the
//! kit sees.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub use loopx_kernel::store::NewTodo;

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
