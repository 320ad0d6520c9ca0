//! `loopx evidence add|list` and `loopx handoff [write]`.

use std::io::Read;
use std::path::{Path, PathBuf};

use loopx_kernel::model::{EvidenceKind, FileRef};
use loopx_kernel::store::{Applied, NewEvidence, NewHandoff};
use loopx_kernel::{Invalid, Op, SliceId, TodoId};
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
            let kind = EvidenceKind::ALL
                .into_iter()
                .find(|k| k.as_str() == kind)
                .unwrap_or(EvidenceKind::Note);
            let project = ctx.project()?;
            let files = files
                .iter()
                .map(|f| file_ref(project.root(), f))
                .collect::<Result<Vec<_>, _>>()?;
            let new = NewEvidence {
                epoch,
                kind,
                summary,
                detail,
                files,
                todo: todo.as_deref().map(id).transpose()?,
                slice: current_slice(),
            };
            let store = ctx.store()?;
            let Applied::Evidence(evidence) =
                store.apply(Op::EvidenceAdd(new), &ctx.actor(), ctx.now())?
            else {
                unreachable!("evidence add yields evidence")
            };
            if ctx.json {
                ctx.json_out(&document("evidence", &evidence))
            } else {
                ctx.line(format!(
                    "Recorded evidence {}: {}",
                    evidence.id, evidence.summary
                ))
            }
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
    if let Some(HandoffCommand::Write {
        todo,
        epoch,
        done,
        next,
        files,
        questions,
    }) = args.write
    {
        let new = NewHandoff {
            epoch,
            todo: todo.as_deref().map(id).transpose()?,
            done,
            next,
            files,
            questions,
            slice: current_slice(),
        };
        let store = ctx.store()?;
        let Applied::Handoff(handoff) =
            store.apply(Op::HandoffAdd(new), &ctx.actor(), ctx.now())?
        else {
            unreachable!("handoff write yields a handoff")
        };
        return if ctx.json {
            ctx.json_out(&document("handoff", &handoff))
        } else {
            ctx.line(format!("Wrote handoff {}", handoff.id))
        };
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

/// The slice this process runs in, when `LOOPX_SLICE` names one.
fn current_slice() -> Option<SliceId> {
    crate::context::slice_id().and_then(|s| s.parse().ok())
}

/// Pins a file by its content: path relative to the project when inside it, size and sha256.
fn file_ref(root: &Path, path: &PathBuf) -> Result<FileRef, ExpectedError> {
    let unreadable =
        |e: std::io::Error| ExpectedError::Usage(format!("cannot read `{}`: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(unreadable)?;
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
    let sha256 = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(FileRef {
        path: shown,
        sha256,
        bytes,
    })
}
