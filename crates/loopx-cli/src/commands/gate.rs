//! `loopx gate ask|list|show|answer|withdraw`: the application layer's gate operations, shown.

use loopx_app::gate::Ask;
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
        } => {
            let blocks = if !blocks.is_empty() {
                Some(Blocks::Todos(ids(&blocks)?))
            } else if let Some(agent) = agent {
                Some(Blocks::Agent(id(&agent)?))
            } else if global {
                Some(Blocks::Global)
            } else {
                None
            };
            let gate = app.ask_gate(Ask {
                question: ask.question,
                options: ask.options,
                context: ask.context,
                blocks,
            })?;
            show_opened(ctx, &gate)
        }
        GateCommand::List { all } => {
            let gates = app.gates(all)?;
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
            let gate = app.gate(id(&text)?)?;
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
            let answered = app.answer_gate(id(&text)?, choice, note)?;
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
            if let Some(done) = answered.rolled_back {
                ctx.line(format!("Rolled back: {done}"))?;
            }
            if let Some(kept) = answered.kept {
                ctx.line(format!("Kept: {kept}"))?;
            }
            Ok(())
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
