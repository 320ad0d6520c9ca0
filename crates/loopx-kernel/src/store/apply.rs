//! Transitions: every change to the kernel is an [`Op`], validated and applied in one write
//! transaction that also appends its event.

mod agent;
pub mod budget;
mod entities;
mod op;
pub mod quota;
mod slice;
mod todo;
mod typed;

pub use agent::AgentChange;
pub use op::{
    AnswerChoice, Applied, BatchError, BeginSlice, FinishTodo, Interrupt, NewEvidence, NewGate,
    NewGoal, NewHandoff, NewHold, NewSlice, NewTodo, Op, SLICE_PLACEHOLDER, SetGoalStatus,
    SliceEnd,
};
pub use typed::{Begun, Interrupted, NewSpend, TypedOp};
