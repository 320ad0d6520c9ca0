//! `loopx evidence add|list` and `loopx handoff [write]`: the application layer's evidence and
//! handoff operations, shown.

use loopx_app::evidence::{AddEvidence, WriteHandoff};
use loopx_kernel::TodoId;
use loopx_kernel::model::{Evidence, Handoff};

use super::id;
use crate::args::{EvidenceCommand, HandoffArgs, HandoffCommand};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: EvidenceCommand) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    match cmd {
        EvidenceCommand::Add {
            summary,
            todo,
            epoch,
            kind,
            unit,
            detail,
            files,
        } => {
            let evidence = app.add_evidence(AddEvidence {
                kind,
                summary,
                detail,
                files,
                todo: todo.as_deref().map(id).transpose()?,
                epoch,
                unit,
            })?;
            show_evidence(ctx, &evidence)
        }
        EvidenceCommand::List { todo, limit } => {
            let evidence = app.evidence_judged(todo.as_deref().map(id).transpose()?, limit)?;
            if ctx.json {
                return ctx.json_out(&document("evidence", &evidence));
            }
            if evidence.is_empty() {
                return ctx.line("No evidence yet.");
            }
            let now = ctx.now();
            for judged in &evidence {
                for line in views::judged_evidence_lines(ctx.style, judged, now) {
                    ctx.line(line)?;
                }
            }
            Ok(())
        }
    }
}

pub fn handoff(ctx: &mut Ctx, args: HandoffArgs) -> Result<(), ExpectedError> {
    let app = ctx.app()?;
    if let Some(HandoffCommand::Write { todo, epoch, text }) = args.write {
        let handoff = app.write_handoff(WriteHandoff {
            todo: todo.as_deref().map(id).transpose()?,
            epoch,
            done: text.done,
            next: text.next,
            files: text.files,
            questions: text.questions,
        })?;
        return show_handoff(ctx, &handoff);
    }
    let todo: Option<TodoId> = args.todo.as_deref().map(id).transpose()?;
    let handoff = app.latest_handoff(todo)?;
    if ctx.json {
        return ctx.json_out(&document("handoff", &handoff));
    }
    match handoff {
        Some(h) => {
            for line in views::handoff_lines(ctx.style, &h, ctx.now()) {
                ctx.line(line)?;
            }
            Ok(())
        }
        None => ctx.line("No handoff yet."),
    }
}

/// Prints recorded evidence.
pub(super) fn show_evidence(ctx: &mut Ctx, evidence: &Evidence) -> Result<(), ExpectedError> {
    if ctx.json {
        ctx.json_out(&document("evidence", evidence))
    } else {
        ctx.line(format!(
            "Recorded evidence {}: {}",
            evidence.id, evidence.summary
        ))
    }
}

/// Prints a written handoff.
pub(super) fn show_handoff(ctx: &mut Ctx, handoff: &Handoff) -> Result<(), ExpectedError> {
    if ctx.json {
        ctx.json_out(&document("handoff", handoff))
    } else {
        ctx.line(format!("Wrote handoff {}", handoff.id))
    }
}
