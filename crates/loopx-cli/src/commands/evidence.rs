//! `loopx evidence add|list` and `loopx handoff [write]`.

use std::io::Read;
use std::path::{Path, PathBuf};

use loopx_kernel::model::{Evidence, FileRef, Handoff};
use loopx_kernel::store::{NewEvidence, NewHandoff};
use loopx_kernel::{Invalid, SliceId, TodoId};
use sha2::{Digest, Sha256};

use super::id;
use crate::args::{EvidenceCommand, HandoffArgs, HandoffCommand};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::output::{document, views};

pub fn run(ctx: &mut Ctx, cmd: EvidenceCommand) -> Result<(), ExpectedError> {
    match cmd {
        EvidenceCommand::Add {
            summary,
            todo,
            epoch,
            kind,
            detail,
            files,
        } => {
            let project = ctx.project()?;
            let new = NewEvidence {
                epoch,
                kind,
                summary,
                detail,
                files: file_refs(project.root(), &files)?,
                todo: todo.as_deref().map(id).transpose()?,
                slice: current_slice(),
            };
            let store = ctx.store()?;
            let evidence = store.run(new, &ctx.actor(), ctx.now())?;
            show_evidence(ctx, &evidence)
        }
        EvidenceCommand::List { todo, limit } => {
            let todo: Option<TodoId> = todo.as_deref().map(id).transpose()?;
            let evidence = ctx
                .store_read()?
                .read(|s| s.evidence_newest(limit, |e| todo.is_none() || e.todo == todo))?;
            if ctx.json {
                return ctx.json_out(&document("evidence", &evidence));
            }
            if evidence.is_empty() {
                return ctx.line("No evidence yet.");
            }
            let now = ctx.now();
            for e in &evidence {
                ctx.line(views::evidence_line(ctx.style, e, now))?;
            }
            Ok(())
        }
    }
}

pub fn handoff(ctx: &mut Ctx, args: HandoffArgs) -> Result<(), ExpectedError> {
    if let Some(HandoffCommand::Write { todo, epoch, text }) = args.write {
        let new = NewHandoff {
            epoch,
            todo: todo.as_deref().map(id).transpose()?,
            done: text.done,
            next: text.next,
            files: text.files,
            questions: text.questions,
            slice: current_slice(),
        };
        let store = ctx.store()?;
        let handoff = store.run(new, &ctx.actor(), ctx.now())?;
        return show_handoff(ctx, &handoff);
    }
    let todo: Option<TodoId> = args.todo.as_deref().map(id).transpose()?;
    let handoff = ctx.store_read()?.read(|s| {
        if let Some(t) = todo
            && s.todo(t)?.is_none()
        {
            return Err(Invalid::NotFound {
                what: "todo",
                id: t.to_string(),
            }
            .into());
        }
        s.latest_handoff(todo)
    })?;
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

/// Pins every file by its content.
pub(super) fn file_refs(root: &Path, files: &[PathBuf]) -> Result<Vec<FileRef>, ExpectedError> {
    files.iter().map(|f| file_ref(root, f)).collect()
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

/// The slice this process runs in, when `LOOPX_SLICE` names one.
fn current_slice() -> Option<SliceId> {
    crate::context::slice_id().and_then(|s| s.parse().ok())
}

/// Pins a file by its content: path relative to the project when inside it, size and sha256.
fn file_ref(root: &Path, path: &PathBuf) -> Result<FileRef, ExpectedError> {
    let unreadable =
        |e: std::io::Error| ExpectedError::Usage(format!("cannot read `{}`: {e}", path.display()));
    let mut file = loopx_adapters::open_regular(path).map_err(unreadable)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    let absolute = std::path::absolute(path).map_err(unreadable)?;
    let shown = absolute
        .strip_prefix(root)
        .unwrap_or(&absolute)
        .display()
        .to_string();
    let sha256 = hex::encode(hasher.finalize());
    Ok(FileRef {
        path: shown,
        sha256,
        bytes,
    })
}
