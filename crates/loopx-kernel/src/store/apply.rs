//! Transitions: every change to the kernel is an [`Op`], validated and applied in one write
//! transaction that also appends its event.

mod agent;
pub mod amend;
mod answer;
pub mod budget;
mod caps;
mod edit;
mod entities;
mod goal_met;
mod message;
mod monitor;
mod new_evidence;
mod op;
pub mod quota;
mod replan;
mod slice;
mod todo;
mod typed;
mod which_goal;

pub use agent::AgentChange;
pub use caps::{OPEN_MONITORS, OPEN_PROPOSALS, OPEN_QUESTIONS, OPEN_TODOS};
pub use edit::EditTodo;
pub use message::{LiveMessages, NewMessage, WAITING as WAITING_MESSAGES};
pub use monitor::{ClaimPoll, RecordPoll};
pub use op::{
    AgentWaits, AmendGoal, AnswerChoice, AnswerGate, Applied, BatchError, BeginSlice, ChangeAgent,
    ClaimTodo, FinishTodo, Interrupt, NewAgent, NewEvidence, NewGate, NewGoal, NewHandoff, NewHold,
    NewSlice, NewTodo, Op, ReleaseClaim, RemoveAgent, RenewClaim, Resume, SLICE_PLACEHOLDER,
    SetGoalStatus, SliceEnd, WithdrawGate,
};
pub use replan::{ReplanTodo, Replanning};
pub use todo::CONTINUATION_HOLD;
pub use typed::{Amended, Begun, Interrupted, NewSpend, TypedOp};
