//! `loopx gate ask|list|show|answer|withdraw`.

use loopx_kernel::model::{Blocks, Gate, GateState};
use loopx_kernel::store::{AnswerChoice, Applied, NewGate};
use loopx_kernel::store::{AnswerGate, WithdrawGate};
use loopx_kernel::{GateId, Invalid, Op, TodoId};

use super::{id, ids};
use crate::args::GateCommand;
use crate::context::{Ctx, slice_id};
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: GateCommand) -> Result<(), ExpectedError> {
    match cmd {
        GateCommand::Ask {
            ask,
            blocks,
            agent,
            global,
        } => {
            let blocks = if !blocks.is_empty() {
                Blocks::Todos(ids(&blocks)?)
            } else if let Some(agent) = agent {
                Blocks::Agent(id(&agent)?)
            } else if global {
                Blocks::Global
            } else {
                default_blocks()?
            };
            let gate = apply(
                ctx,
                Op::GateAsk(NewGate {
                    question: ask.question,
                    options: ask.options,
                    context: ask.context,
                    blocks,
                    kind: loopx_kernel::model::GateKind::Question,
                }),
            )?;
            show_opened(ctx, &gate)
        }
        GateCommand::List { all } => {
            let gates = ctx.store_read()?.read(|s| s.gates())?;
            let gates: Vec<Gate> = gates
                .into_iter()
                .filter(|g| all || g.state == GateState::Open)
                .collect();
            if ctx.json {
                return ctx.json_out(&document("gates", &gates));
            }
            if gates.is_empty() {
                return ctx.line(if all {
                    "No gates."
                } else {
                    "No open gates: nothing waits on you."
                });
            }
            let now = ctx.now();
            for gate in &gates {
                for line in views::gate_lines(ctx.style, gate, now) {
                    ctx.line(line)?;
                }
            }
            Ok(())
        }
        GateCommand::Show { id: text } => {
            let gid: GateId = id(&text)?;
            let gate = ctx
                .store_read()?
                .read(|s| s.gate(gid))?
                .ok_or(Invalid::NotFound {
                    what: "gate",
                    id: text,
                })?;
            if ctx.json {
                return ctx.json_out(&document("gate", &gate));
            }
            for line in views::gate_lines(ctx.style, &gate, ctx.now()) {
                ctx.line(line)?;
            }
            Ok(())
        }
        GateCommand::Answer {
            id: text,
            answer,
            option,
            note,
        } => {
            let choice = match (option, answer) {
                (Some(n), _) => AnswerChoice::Option(n),
                (None, Some(text)) => AnswerChoice::Text(text),
                (None, None) => {
                    return Err(ExpectedError::Usage(
                        "give an answer or --option N".to_owned(),
                    ));
                }
            };
            let gate_id = id(&text)?;
            let rolled_back = roll_back_first(ctx, gate_id, &choice)?;
            let kept = land_kept_first(ctx, gate_id, &choice)?;
            let answer = Op::GateAnswer(AnswerGate {
                gate: gate_id,
                choice,
                slice: slice_id(),
                note,
            });
            let gate = match &kept {
                None => apply(ctx, answer)?,
                // The answer, the landing's evidence and (when it landed) the todo done, as one.
                Some(kept) => {
                    let ops = std::iter::once(answer)
                        .chain(kept.ops.iter().cloned())
                        .collect();
                    let store = ctx.store()?;
                    let applied = store
                        .apply_all(ops, &ctx.actor(), ctx.now())
                        .map_err(ExpectedError::from)?;
                    match applied.into_iter().next() {
                        Some(Applied::Gate(gate)) => gate,
                        other => unreachable!("a gate answer yields the gate, not {other:?}"),
                    }
                }
            };
            if ctx.json {
                return ctx.json_out(&document("gate", &gate));
            }
            let answer = gate
                .answer
                .as_ref()
                .map(|a| a.text.as_str())
                .unwrap_or_default();
            ctx.line(format!("Answered gate {}: {answer}", gate.id))?;
            if let Some(done) = rolled_back {
                ctx.line(format!("Rolled back: {done}"))?;
            }
            if let Some(kept) = kept {
                ctx.line(format!("Kept: {}", kept.said))?;
            }
            tidy_dropped(ctx, &gate);
            Ok(())
        }
        GateCommand::Withdraw { id: text } => {
            let gate = apply(ctx, Op::GateWithdraw(WithdrawGate { gate: id(&text)? }))?;
            if ctx.json {
                ctx.json_out(&document("gate", &gate))
            } else {
                ctx.line(format!("Withdrew gate {}", gate.id))
            }
        }
    }
}

/// A rollback gate answered `rollback` is carried out before the answer is recorded: the
/// todo's branch and worktree go back to the slice's checkpoint. When that cannot be done
/// the answer is refused and nothing changes. Only a person's answer does anything: inside a
/// slice the kernel refuses the answer, so nothing is rolled back either.
fn roll_back_first(
    ctx: &Ctx,
    gate: loopx_kernel::GateId,
    choice: &AnswerChoice,
) -> Result<Option<String>, ExpectedError> {
    use loopx_kernel::model::{GateKind, GateState, ROLLBACK_OPTIONS};
    if slice_id().is_some() {
        return Ok(None);
    }
    let found = ctx.store_read()?.read(|s| {
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
    let root = ctx.project()?.root().to_path_buf();
    loopx_supervisor::worktree::roll_back(&root, todo.goal, todo.id, checkpoint, commit)
        .map(Some)
        .map_err(|why| ExpectedError::Reported {
            summary: format!("cannot roll back: {why}; the gate stays open"),
            code: crate::exit_code::CONFLICT,
        })
}

/// What keeping a worktree slice's changes did when the slice had reported its todo done.
struct Kept {
    /// The landing, in a sentence.
    said: String,
    /// Its evidence, and the todo done when it landed.
    ops: Vec<Op>,
}

/// A rollback gate answered `keep`, when the slice that opened it reported its todo done,
/// finishes the todo as the agent reported: its branch lands on the goal's branch first (the
/// project's `[land] check` and all), as any landing does. When it does not land (a conflict,
/// a failed check) the answer is recorded all the same, with the landing's evidence, and the
/// todo goes on with a fresh budget. Only a person's answer does anything.
fn land_kept_first(
    ctx: &Ctx,
    gate: GateId,
    choice: &AnswerChoice,
) -> Result<Option<Kept>, ExpectedError> {
    use loopx_kernel::model::{GateKind, ROLLBACK_OPTIONS};
    if slice_id().is_some() {
        return Ok(None);
    }
    let found = ctx.store_read()?.read(|s| {
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
    let root = ctx.project()?.root().to_path_buf();
    let exe = std::env::current_exe()
        .map_err(|e| ExpectedError::Usage(format!("cannot find the loopx executable: {e}")))?;
    let (said, ops) = loopx_supervisor::land_kept(&root, &exe, &goal, &todo);
    Ok(Some(Kept { said, ops }))
}

/// A stall or land gate answered `drop` dropped its todo: the todo's worktree goes (its
/// branch stays). Best effort: `loopx doctor --repair` finds what is left.
fn tidy_dropped(ctx: &Ctx, gate: &Gate) {
    use loopx_kernel::model::{GateKind, TodoState};
    let (GateKind::Stall { todo } | GateKind::Land { todo }) = gate.kind else {
        return;
    };
    let found = ctx.store_read().ok().and_then(|store| {
        store
            .read(|s| {
                let Some(t) = s.todo(todo)? else {
                    return Ok(None);
                };
                Ok(s.goal(t.goal)?.map(|g| (t.state, g)))
            })
            .ok()
            .flatten()
    });
    if let (Some((TodoState::Dropped, goal)), Ok(project)) = (found, ctx.project())
        && goal.isolation.is_worktree()
        && let Err(e) = loopx_supervisor::worktree::remove(project.root(), goal.id, todo)
    {
        tracing::warn!(%todo, error = %e, "cannot remove the todo's worktree");
    }
}

/// Prints a gate just opened, with the command that answers it.
pub(super) fn show_opened(ctx: &mut Ctx, gate: &Gate) -> Result<(), ExpectedError> {
    if ctx.json {
        return ctx.json_out(&document("gate", gate));
    }
    ctx.line(format!(
        "Opened gate {} (blocks {})",
        gate.id,
        gate.blocks.describe()
    ))?;
    ctx.line(format!("A person answers with: {}", gate.answer_command()))
}

/// Inside a slice a question holds back the slice's todo; elsewhere, everyone.
fn default_blocks() -> Result<Blocks, ExpectedError> {
    match (
        slice_id(),
        std::env::var("LOOPX_TODO").ok().filter(|t| !t.is_empty()),
    ) {
        (Some(_), Some(todo)) => Ok(Blocks::Todos(vec![id::<TodoId>(&todo)?])),
        _ => Ok(Blocks::Global),
    }
}

fn apply(ctx: &Ctx, op: Op) -> Result<Gate, ExpectedError> {
    let store = ctx.store()?;
    match store.apply(op, &ctx.actor(), ctx.now())? {
        Applied::Gate(gate) => Ok(gate),
        other => unreachable!("gate operations yield a gate, not {other:?}"),
    }
}
