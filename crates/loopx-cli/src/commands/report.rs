//! `loopx report evidence|handoff|todo|ask|done`: an agent writes into the kernel from inside
//! its slice, while the slice runs.
//!
//! Who writes comes from the environment loopx gave the slice: `LOOPX_SLICE` (the marker, bound
//! to this project's root), `LOOPX_AGENT`, and for a todo's slice `LOOPX_TODO` and
//! `LOOPX_EPOCH`. Every write is one batch that starts with [`Op::InSlice`]: the slice must be
//! running, run this agent, and still hold its claim, or nothing is written (exit 5). Writes about
//! the todo carry the epoch as well, so the kernel fences them like the supervisor's own.

use loopx_kernel::model::{Blocks, EvidenceKind, GateKind};
use loopx_kernel::store::{Applied, NewEvidence, NewGate, NewHandoff, NewTodo};
use loopx_kernel::{AgentName, Op, SliceId, TodoId};

use super::evidence::{evidence_kind, file_refs, show_evidence, show_handoff};
use super::id;
use crate::args::ReportCommand;
use crate::context::{Ctx, slice_id};
use crate::errors::ExpectedError;

/// The slice a report is written for, as its environment names it.
#[derive(Debug, Clone)]
struct Reporter {
    slice: SliceId,
    agent: AgentName,
    /// The slice's todo and the epoch of its claim.
    claim: Option<(TodoId, u64)>,
}

impl Reporter {
    fn actor(&self) -> String {
        format!("agent:{}", self.agent)
    }

    /// Applies `ops` behind the slice's guard; the record the last one yields.
    fn apply(&self, ctx: &Ctx, ops: Vec<Op>) -> Result<Applied, ExpectedError> {
        let guard = Op::InSlice {
            slice: self.slice,
            agent: self.agent.clone(),
            todo: self.claim.map(|(t, _)| t),
            epoch: self.claim.map(|(_, e)| e),
        };
        let batch = std::iter::once(guard).chain(ops).collect();
        let mut applied = ctx.store()?.apply_all(batch, &self.actor(), ctx.now())?;
        Ok(applied.pop().expect("a report writes at least one record"))
    }

    fn todo(&self) -> Option<TodoId> {
        self.claim.map(|(t, _)| t)
    }

    fn epoch(&self) -> Option<u64> {
        self.claim.map(|(_, e)| e)
    }

    fn evidence(&self, kind: EvidenceKind, summary: String, detail: String) -> NewEvidence {
        NewEvidence {
            kind,
            summary,
            detail,
            files: vec![],
            todo: self.todo(),
            slice: Some(self.slice),
            epoch: self.epoch(),
        }
    }
}

pub fn run(ctx: &mut Ctx, cmd: ReportCommand) -> Result<(), ExpectedError> {
    let me = reporter(ctx)?;
    match cmd {
        ReportCommand::Evidence {
            kind,
            text,
            detail,
            files,
        } => {
            let mut new = me.evidence(evidence_kind(&kind), text.join(" "), detail);
            new.files = file_refs(ctx.project()?.root(), &files)?;
            let Applied::Evidence(evidence) = me.apply(ctx, vec![Op::EvidenceAdd(new)])? else {
                unreachable!("evidence add yields evidence")
            };
            show_evidence(ctx, &evidence)
        }
        ReportCommand::Handoff(text) => {
            let new = NewHandoff {
                todo: me.todo(),
                epoch: me.epoch(),
                done: text.done,
                next: text.next,
                files: text.files,
                questions: text.questions,
                slice: Some(me.slice),
            };
            let Applied::Handoff(handoff) = me.apply(ctx, vec![Op::HandoffAdd(new)])? else {
                unreachable!("handoff write yields a handoff")
            };
            show_handoff(ctx, &handoff)
        }
        ReportCommand::Todo {
            title,
            detail,
            priority,
            role,
        } => {
            let new = NewTodo {
                goal: None,
                title,
                detail,
                priority,
                needs: vec![],
                after: vec![],
                role,
            };
            let Applied::Todo(todo) = me.apply(ctx, vec![Op::TodoAdd(new)])? else {
                unreachable!("todo add yields a todo")
            };
            let message = format!(
                "Proposed {} for goal {}: {}",
                todo.id, todo.goal, todo.title
            );
            super::todo::show(ctx, &todo, message)
        }
        ReportCommand::Ask(ask) => {
            let new = NewGate {
                question: ask.question,
                options: ask.options,
                context: ask_context(&me, ask.context),
                blocks: match me.todo() {
                    Some(todo) => Blocks::Todos(vec![todo]),
                    None => Blocks::Agent(me.agent.clone()),
                },
                kind: GateKind::Question,
            };
            let Applied::Gate(gate) = me.apply(ctx, vec![Op::GateAsk(new)])? else {
                unreachable!("gate ask yields a gate")
            };
            super::gate::show_opened(ctx, &gate)
        }
        ReportCommand::Done { summary } => {
            let Some((todo, epoch)) = me.claim else {
                return Err(ExpectedError::Usage(format!(
                    "slice {} has no todo, so there is nothing to mark done\n(hint: a planning slice proposes work with `loopx report todo \"TITLE\"`)",
                    me.slice
                )));
            };
            let mut ops = Vec::new();
            if let Some(summary) = summary.filter(|s| !s.trim().is_empty()) {
                ops.push(Op::EvidenceAdd(me.evidence(
                    EvidenceKind::Note,
                    summary,
                    String::new(),
                )));
            }
            ops.push(Op::TodoFinish {
                todo,
                to: loopx_kernel::model::TodoState::Done,
                agent: Some(me.agent.clone()),
                epoch: Some(epoch),
            });
            let Applied::Todo(todo) = me.apply(ctx, ops)? else {
                unreachable!("todo done yields the todo")
            };
            let message = format!("Done: {} {}", todo.id, todo.title);
            super::todo::show(ctx, &todo, message)
        }
    }
}

/// The person's context, then who asked and where.
fn ask_context(me: &Reporter, context: String) -> String {
    let on = me.todo().map(|t| format!(" on {t}")).unwrap_or_default();
    let asked = format!("asked by `{}` in slice {}{on}", me.agent, me.slice);
    if context.trim().is_empty() {
        asked
    } else {
        format!("{}\n\n{asked}", context.trim_end())
    }
}

/// The slice, agent and claim from the environment; a usage error outside a slice.
fn reporter(ctx: &Ctx) -> Result<Reporter, ExpectedError> {
    let Some(marker) = slice_id() else {
        return Err(ExpectedError::Usage(
            "`loopx report` is for agents inside a slice, and LOOPX_SLICE is not set\n(hint: loopx sets it for the agents it runs; people record with `loopx evidence add`, `loopx handoff write`, `loopx todo add`, `loopx gate ask` and `loopx todo done`)".to_owned(),
        ));
    };
    let agent = env("LOOPX_AGENT").ok_or_else(|| {
        ExpectedError::Usage(format!(
            "LOOPX_AGENT is not set inside slice `{marker}`\n(hint: loopx sets it with LOOPX_SLICE; keep the slice's environment as given)"
        ))
    })?;
    let agent: AgentName = id(&agent)?;
    let project = ctx.project()?;
    let slice = loopx_kernel::marker::marker_slice(project.root(), &marker)?;
    let claim = match (env("LOOPX_TODO"), env("LOOPX_EPOCH")) {
        (None, None) => None,
        (Some(todo), Some(epoch)) => {
            let epoch = epoch.parse::<u64>().map_err(|_| {
                ExpectedError::Usage(format!("LOOPX_EPOCH=`{epoch}` is not a number"))
            })?;
            Some((id(&todo)?, epoch))
        }
        _ => {
            return Err(ExpectedError::Usage(
                "LOOPX_TODO and LOOPX_EPOCH come together: set both or neither\n(hint: loopx sets both for a todo's slice; keep them as given)".to_owned(),
            ));
        }
    };
    Ok(Reporter {
        slice,
        agent,
        claim,
    })
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
