//! What a renewal of a slice's claim found, from the kernel's answer (`docs/design/run-loop.md`).
//! The supervisor renews the claim every third of its lease while the slice runs and stops the
//! slice once it is lost, because two agents must never work on one todo.

use loopx_kernel::KernelError;
use loopx_kernel::store::Applied;

/// What one renewal found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewed {
    /// The claim runs on.
    Kept,
    /// The agent finished the todo itself (`loopx report done`) and works on: its claim is
    /// complete, nothing is left to renew.
    Finished,
    /// The kernel refused: the claim moved on, and the slice must stop.
    Lost(String),
    /// A busy or unreadable store: the claim still has two thirds of its time; try again at
    /// the next turn.
    Failed(String),
}

impl Renewed {
    /// What the kernel's answer to a renewal means: a todo finished under the claim is done
    /// with, a conflict (a person released it, or a peer took it after it expired) loses it,
    /// and any other error is a failure to try again.
    pub fn of(answer: Result<Applied, KernelError>) -> Renewed {
        match answer {
            Ok(Applied::Todo(todo)) if todo.state.is_final() => Renewed::Finished,
            Ok(_) => Renewed::Kept,
            Err(KernelError::Conflict(c)) => Renewed::Lost(c.to_string()),
            Err(e) => Renewed::Failed(crate::run_error::chain(&e)),
        }
    }
}
