//! Operations with one kind of result. [`Store::run`] hands that result back typed, so that no
//! caller matches an [`Applied`] and asserts (with `unreachable!`) the variant it asked for:
//! which result an operation yields is said once, here, beside the operation.

use super::op::{
    AmendGoal, AnswerGate, Applied, BeginSlice, ChangeAgent, ClaimTodo, FinishTodo, Interrupt,
    NewAgent, NewEvidence, NewGate, NewGoal, NewHandoff, NewHold, NewSlice, NewTodo, Op,
    ReleaseClaim, RemoveAgent, RenewClaim, Resume, SetGoalStatus, WithdrawGate,
};
use super::quota::QuotaRequest;
use crate::errors::{KernelError, StoreError};
use crate::model::{Agent, Evidence, Gate, Goal, Handoff, QuotaHold, SliceRecord, Spend, Todo};
use crate::store::Store;
use crate::time::Timestamp;

/// An operation and the one kind of record it yields.
pub trait TypedOp: Sized {
    /// What [`Store::run`] returns for it.
    type Output;
    /// The operation, for [`Store::apply`] and batches.
    fn into_op(self) -> Op;
    /// Its result out of an [`Applied`]; `None` only if the kernel broke its own promise.
    fn output(applied: Applied) -> Option<Self::Output>;
}

/// A slice begun: its record, and whether beginning it took the todo's claim (else the agent
/// held it already).
#[derive(Debug, Clone, PartialEq)]
pub struct Begun {
    pub slice: SliceRecord,
    pub took_claim: bool,
}

/// A slice interrupted: its record, and whether its claim was given back (a peer may hold the
/// todo by now).
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupted {
    pub slice: SliceRecord,
    pub released: bool,
}

/// A spend, admitted before a slice or charged after it.
#[derive(Debug, Clone, PartialEq)]
pub enum NewSpend {
    /// A slice slot, refused when the account's quota has no room.
    Admit(QuotaRequest),
    /// Usage charged after the fact, whatever the quota says.
    Charge(QuotaRequest),
}

macro_rules! typed {
    ($input:ty => $output:ty, $op:ident, $applied:ident) => {
        impl TypedOp for $input {
            type Output = $output;
            fn into_op(self) -> Op {
                Op::$op(self)
            }
            fn output(applied: Applied) -> Option<$output> {
                match applied {
                    Applied::$applied(out) => Some(out),
                    _ => None,
                }
            }
        }
    };
}

typed!(NewGoal => Goal, GoalStart, Goal);
typed!(SetGoalStatus => Goal, GoalSetStatus, Goal);

/// A goal amended, and the revision it now is.
#[derive(Debug, Clone, PartialEq)]
pub struct Amended {
    pub goal: Goal,
    pub revision: crate::model::GoalRevision,
}

impl TypedOp for AmendGoal {
    type Output = Amended;
    fn into_op(self) -> Op {
        Op::GoalAmend(self)
    }
    fn output(applied: Applied) -> Option<Amended> {
        match applied {
            Applied::Amended { goal, revision } => Some(Amended { goal, revision }),
            _ => None,
        }
    }
}
typed!(NewTodo => Todo, TodoAdd, Todo);
typed!(super::edit::EditTodo => Todo, TodoEdit, Todo);
typed!(FinishTodo => Todo, TodoFinish, Todo);
typed!(NewGate => Gate, GateAsk, Gate);
typed!(NewSlice => SliceRecord, SliceStart, Slice);
typed!(NewHold => QuotaHold, QuotaHold, Hold);
typed!(NewEvidence => Evidence, EvidenceAdd, Evidence);
typed!(NewHandoff => Handoff, HandoffAdd, Handoff);
typed!(ClaimTodo => Todo, TodoClaim, Todo);
typed!(RenewClaim => Todo, TodoRenew, Todo);
typed!(ReleaseClaim => Todo, TodoRelease, Todo);
typed!(AnswerGate => Gate, GateAnswer, Gate);
typed!(super::monitor::ClaimPoll => Todo, PollClaim, Todo);
typed!(super::monitor::RecordPoll => Todo, PollRecord, Todo);
typed!(WithdrawGate => Gate, GateWithdraw, Gate);
typed!(NewAgent => Agent, AgentAdd, Agent);
typed!(ChangeAgent => Agent, AgentSet, Agent);
typed!(RemoveAgent => Agent, AgentRemove, Agent);
typed!(Resume => Vec<String>, QuotaResume, Resumed);
typed!(super::message::NewMessage => crate::model::Message, Say, Message);

impl TypedOp for BeginSlice {
    type Output = Begun;
    fn into_op(self) -> Op {
        Op::SliceBegin(self)
    }
    fn output(applied: Applied) -> Option<Begun> {
        match applied {
            Applied::SliceBegun { slice, took_claim } => Some(Begun { slice, took_claim }),
            _ => None,
        }
    }
}

impl TypedOp for Interrupt {
    type Output = Interrupted;
    fn into_op(self) -> Op {
        Op::SliceInterrupt(self)
    }
    fn output(applied: Applied) -> Option<Interrupted> {
        match applied {
            Applied::Interrupted { slice, released } => Some(Interrupted { slice, released }),
            _ => None,
        }
    }
}

impl TypedOp for NewSpend {
    type Output = Spend;
    fn into_op(self) -> Op {
        match self {
            NewSpend::Admit(req) => Op::QuotaAdmit(req),
            NewSpend::Charge(req) => Op::QuotaCharge(req),
        }
    }
    fn output(applied: Applied) -> Option<Spend> {
        match applied {
            Applied::Spend(spend) => Some(spend),
            _ => None,
        }
    }
}

impl Store {
    /// Applies one operation (as [`Store::apply`]) and returns its record, typed.
    pub fn run<T: TypedOp>(
        &self,
        op: T,
        actor: &str,
        now: Timestamp,
    ) -> Result<T::Output, KernelError> {
        let applied = self.apply(op.into_op(), actor, now)?;
        output_of::<T>(&self.path, applied)
    }

    /// Applies `before` and then `last` atomically (as [`Store::apply_all`]) and returns what
    /// `last` yields, typed: a batch whose point is its last operation (the checks before a
    /// todo is finished, a lapsed claim before the slice is interrupted).
    pub fn run_after<T: TypedOp>(
        &self,
        mut before: Vec<Op>,
        last: T,
        actor: &str,
        now: Timestamp,
    ) -> Result<T::Output, KernelError> {
        before.push(last.into_op());
        let mut applied = self.apply_all(before, actor, now)?;
        self.batch_output::<T>(applied.pop())
    }

    /// Applies `first` and then `after` atomically and returns what `first` yields, typed: a
    /// batch whose point is its first operation (a gate's answer, with the landing it caused).
    pub fn run_before<T: TypedOp>(
        &self,
        first: T,
        after: Vec<Op>,
        actor: &str,
        now: Timestamp,
    ) -> Result<T::Output, KernelError> {
        let ops = std::iter::once(first.into_op()).chain(after).collect();
        let applied = self.apply_all(ops, actor, now)?;
        self.batch_output::<T>(applied.into_iter().next())
    }
}

impl Store {
    /// `T`'s record out of a batch's, or the kernel's own bug named when there is none.
    fn batch_output<T: TypedOp>(&self, applied: Option<Applied>) -> Result<T::Output, KernelError> {
        match applied {
            Some(applied) => output_of::<T>(&self.path, applied),
            None => Err(StoreError::Bug {
                path: self.path.clone(),
                location: std::any::type_name::<T>().to_owned(),
                message: "a batch yielded no record".to_owned(),
            }
            .into()),
        }
    }
}

/// `T`'s record out of `applied`, or the kernel's own bug named (never a panic).
pub(crate) fn output_of<T: TypedOp>(
    path: &std::path::Path,
    applied: Applied,
) -> Result<T::Output, KernelError> {
    T::output(applied).ok_or_else(|| {
        StoreError::Bug {
            path: path.to_path_buf(),
            location: std::any::type_name::<T>().to_owned(),
            message: "the operation yielded another kind of record than it promises".to_owned(),
        }
        .into()
    })
}
