//! Gates: a question asked, answered by a person, or withdrawn. Answering a rollback gate does
//! what the answer says to the todo's worktree before the answer is recorded; answering a stall
//! or land gate `drop` tidies the dropped todo's worktree.

use loopx_kernel::model::{Blocks, Gate, GateKind, GateState, ROLLBACK_OPTIONS, TodoState};
use loopx_kernel::store::{AnswerChoice, AnswerGate, NewGate, WithdrawGate};
use loopx_kernel::{GateId, GoalId, Invalid, Op};

use crate::{App, AppError, ConflictError};

/// Whether a gate is one of loopx's approvals (the one definition is `loopx-domain`'s).
pub use loopx_domain::approval::is_approval;

/// A question to ask. `blocks: None` holds back the caller's todo when asked from a slice,
/// else everyone.
#[derive(Debug, Clone)]
pub struct Ask {
    pub question: String,
    pub options: Vec<String>,
    pub context: String,
    pub blocks: Option<Blocks>,
}

/// A gate answered, and what was done because of the answer.
#[derive(Debug, Clone)]
pub struct Answered {
    pub gate: Gate,
    /// The rollback carried out, in words (a rollback gate answered `rollback`).
    pub rolled_back: Option<String>,
    /// The landing of the kept work, in words (a rollback gate answered `keep` after its slice
    /// reported the todo done).
    pub kept: Option<String>,
}

impl App {
    pub fn ask_gate(&self, ask: Ask) -> Result<Gate, AppError> {
        let blocks =
            ask.blocks
                .unwrap_or_else(|| match (&self.caller().slice, self.caller().slice_todo) {
                    (Some(_), Some(todo)) => Blocks::Todos(vec![todo]),
                    _ => Blocks::Global,
                });
        self.run(NewGate {
            question: ask.question,
            options: ask.options,
            context: ask.context,
            blocks,
            kind: GateKind::Question,
        })
    }

    /// Whether `gate` holds back work of `goal` ([`crate::history::gate_holds_goal`]).
    pub fn gate_holds_goal(&self, gate: &Gate, goal: GoalId) -> bool {
        self.read(|s| crate::history::gate_holds_goal(s, gate, goal))
            .unwrap_or(false)
    }

    /// The open gates, or every gate.
    pub fn gates(&self, all: bool) -> Result<Vec<Gate>, AppError> {
        let gates = self.read(|s| s.gates())?;
        Ok(gates
            .into_iter()
            .filter(|g| all || g.state == GateState::Open)
            .collect())
    }

    pub fn gate(&self, id: GateId) -> Result<Gate, AppError> {
        self.read(|s| s.gate(id))?.ok_or_else(|| {
            Invalid::NotFound {
                what: "gate",
                id: id.to_string(),
            }
            .into()
        })
    }

    /// Answers a gate. Only a person's answer outside a slice does anything besides the
    /// kernel's refusal: a rollback is carried out first (when it cannot be, nothing changes),
    /// kept work lands first (the answer is recorded whether it lands or not, with its
    /// evidence), and a dropped todo's worktree goes afterwards.
    pub fn answer_gate(
        &self,
        gate: GateId,
        choice: AnswerChoice,
        note: Option<String>,
    ) -> Result<Answered, AppError> {
        let rolled_back = self.roll_back_first(gate, &choice)?;
        let kept = self.land_kept_first(gate, &choice)?;
        let answer = AnswerGate {
            gate,
            choice,
            slice: self.caller().slice.clone(),
            note,
        };
        let (gate, kept) = match kept {
            None => (self.run(answer)?, None),
            // The answer, the landing's evidence and (when it landed) the todo done, as one.
            Some((said, ops)) => {
                let gate =
                    self.store()?
                        .run_before(answer, ops, &self.caller().actor, self.now())?;
                (gate, Some(said))
            }
        };
        self.tidy_dropped(&gate);
        Ok(Answered {
            gate,
            rolled_back,
            kept,
        })
    }

    pub fn withdraw_gate(&self, gate: GateId) -> Result<Gate, AppError> {
        self.run(WithdrawGate { gate })
    }

    /// A rollback gate answered `rollback` is carried out before the answer is recorded: the
    /// todo's branch and worktree go back to the slice's checkpoint. When that cannot be done
    /// the answer is refused and nothing changes.
    fn roll_back_first(
        &self,
        gate: GateId,
        choice: &AnswerChoice,
    ) -> Result<Option<String>, AppError> {
        if self.in_slice() {
            return Ok(None);
        }
        let found = self.read(|s| {
            let Some(g) = s.gate(gate)? else {
                return Ok(None);
            };
            let todo = match &g.kind {
                GateKind::Rollback { todo, .. } => s.todo(*todo)?,
                _ => None,
            };
            Ok(Some((g, todo)))
        })?;
        let Some((g, Some(todo))) = found else {
            return Ok(None);
        };
        let GateKind::Rollback {
            checkpoint, commit, ..
        } = &g.kind
        else {
            return Ok(None);
        };
        // The kernel's own reading of the answer: `2`, `--option 2`, `rollback` and the board's
        // second button all roll back, and only they do.
        let wants = choice.clone().resolve(&g)? == AnswerChoice::Option(2)
            && g.options.get(1).is_some_and(|o| o == ROLLBACK_OPTIONS[1]);
        if !wants || g.state != GateState::Open {
            return Ok(None);
        }
        loopx_git::worktree::roll_back(self.project(), todo.goal, todo.id, checkpoint, commit)
            .map(Some)
            .map_err(|why| ConflictError::RollBack(why).into())
    }

    /// A rollback gate answered `keep`, when the slice that opened it reported its todo done,
    /// finishes the todo as the agent reported: its branch lands on the goal's branch first
    /// (the project's `[land] check` and all), as any landing does. When it does not land (a
    /// conflict, a failed check) the answer is recorded all the same, with the landing's
    /// evidence, and the todo goes on with a fresh budget. The landing in words, and its ops.
    fn land_kept_first(
        &self,
        gate: GateId,
        choice: &AnswerChoice,
    ) -> Result<Option<(String, Vec<Op>)>, AppError> {
        if self.in_slice() {
            return Ok(None);
        }
        let found = self.read(|s| {
            let Some(g) = s.gate(gate)? else {
                return Ok(None);
            };
            let GateKind::Rollback {
                todo,
                reported_done: true,
                ..
            } = g.kind
            else {
                return Ok(None);
            };
            let Some(t) = s.todo(todo)? else {
                return Ok(None);
            };
            Ok(s.goal(t.goal)?.map(|goal| (g, t, goal)))
        })?;
        let Some((g, todo, goal)) = found else {
            return Ok(None);
        };
        let keeps = choice.clone().resolve(&g)? == AnswerChoice::Option(1)
            && g.options.first().is_some_and(|o| o == ROLLBACK_OPTIONS[0]);
        if !keeps || g.state != GateState::Open || todo.state.is_final() {
            return Ok(None);
        }
        Ok(Some(loopx_domain::land::land_kept(
            self.project(),
            self.exe()?,
            &goal,
            &todo,
        )))
    }

    /// A stall or land gate answered `drop` dropped its todo: the todo's worktree goes (its
    /// branch stays). Best effort: `loopx doctor --repair` finds what is left.
    fn tidy_dropped(&self, gate: &Gate) {
        let (GateKind::Stall { todo } | GateKind::Land { todo }) = gate.kind else {
            return;
        };
        let found = self
            .read(|s| {
                let Some(t) = s.todo(todo)? else {
                    return Ok(None);
                };
                Ok(s.goal(t.goal)?.map(|g| (t.state, g)))
            })
            .ok()
            .flatten();
        if let Some((TodoState::Dropped, goal)) = found
            && goal.isolation.is_worktree()
            && let Err(e) = loopx_git::worktree::remove(self.project(), goal.id, todo)
        {
            tracing::warn!(%todo, error = %e, "cannot remove the todo's worktree");
        }
    }
}
