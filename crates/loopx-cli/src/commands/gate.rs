//! `loopx gate ask|list|show|answer|withdraw`: the application layer's gate operations, shown.

use loopx_app::gate::{Answered, Ask};
use loopx_kernel::model::{Blocks, Gate};
use loopx_kernel::store::AnswerChoice;

use super::{id, ids};
use crate::args::GateCommand;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: GateCommand) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    match cmd {
        GateCommand::Ask {
            ask,
            blocks,
            agent,
            global,
            goal,
        } => {
            let blocks = match goal {
                Some(goal) => Some(Blocks::Goal(id(&goal)?)),
                None => what_it_blocks(&blocks, agent, global)?,
            };
            let gate = app.ask_gate(Ask {
                question: ask.question,
                options: ask.options,
                context: ask.context,
                blocks,
            })?;
            show_opened(ctx, &gate)
        }
        GateCommand::List { all, goal } => {
            let mut gates = app.gates(all)?;
            if let Some(goal) = goal.as_deref().map(id).transpose()? {
                // An unknown goal is an error, not an empty list.
                app.goal(Some(goal))?;
                gates.retain(|g| app.gate_holds_goal(g, goal));
            }
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
            lines(ctx, &gates)
        }
        GateCommand::Show { id: text } => {
            let gate = app.gate(id(&text)?)?;
            if ctx.json {
                return ctx.json_out(&document("gate", &gate));
            }
            lines(ctx, std::slice::from_ref(&gate))
        }
        GateCommand::Answer {
            id: text,
            answer,
            option,
            note,
        } => {
            let gate = id(&text)?;
            let answered = app.answer_gate(gate, choice(option, answer)?, note)?;
            said_answered(ctx, &answered)
        }
        GateCommand::Withdraw { id: text } => {
            let gate = app.withdraw_gate(id(&text)?)?;
            if ctx.json {
                ctx.json_out(&document("gate", &gate))
            } else {
                ctx.line(format!("Withdrew gate {}", gate.id))
            }
        }
    }
}

/// What `gate ask` blocks: todos, an agent, everything, or nothing.
fn what_it_blocks(
    blocks: &[String],
    agent: Option<String>,
    global: bool,
) -> Result<Option<Blocks>, ExpectedError> {
    Ok(if !blocks.is_empty() {
        Some(Blocks::Todos(ids(blocks)?))
    } else if let Some(agent) = agent {
        Some(Blocks::Agent(id(&agent)?))
    } else if global {
        Some(Blocks::Global)
    } else {
        None
    })
}

/// The answer given: `--option N`, else the text.
fn choice(option: Option<u32>, answer: Option<String>) -> Result<AnswerChoice, ExpectedError> {
    match (option, answer) {
        (Some(n), _) => Ok(AnswerChoice::Option(n)),
        (None, Some(text)) => Ok(AnswerChoice::Text(text)),
        (None, None) => Err(ExpectedError::Usage(
            "give an answer or --option N".to_owned(),
        )),
    }
}

/// Each gate in the lines of `gate list` and `gate show`.
fn lines(ctx: &mut Ctx, gates: &[Gate]) -> Result<(), ExpectedError> {
    let now = ctx.now();
    for gate in gates {
        for line in views::gate_lines(ctx.style, gate, now) {
            ctx.line(line)?;
        }
    }
    Ok(())
}

/// An answered gate, and what its answer did: a rollback made, a todo kept.
fn said_answered(ctx: &mut Ctx, answered: &Answered) -> Result<(), ExpectedError> {
    let gate = &answered.gate;
    if ctx.json {
        return ctx.json_out(&document("gate", gate));
    }
    let answer = gate
        .answer
        .as_ref()
        .map(|a| a.text.as_str())
        .unwrap_or_default();
    ctx.line(format!("Answered gate {}: {answer}", gate.id))?;
    if let Some(done) = &answered.rolled_back {
        ctx.line(format!("Rolled back: {done}"))?;
    }
    if let Some(kept) = &answered.kept {
        ctx.line(format!("Kept: {kept}"))?;
    }
    Ok(())
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
