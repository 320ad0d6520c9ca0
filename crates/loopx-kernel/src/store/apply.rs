//! Transitions: every change to the kernel is an [`Op`], validated and applied in one write
//! transaction that also appends its event.

mod agent;
pub mod budget;
mod entities;
mod op;
pub mod quota;
mod slice;
mod todo;

pub use agent::AgentChange;
pub use op::{
    AnswerChoice, Applied, BatchError, BeginSlice, NewEvidence, NewGate, NewHandoff, NewSlice,
    NewTodo, Op, SLICE_PLACEHOLDER, SliceEnd,
};
