//! `loopx report evidence|handoff|todo|ask|done|propose-goal`: an agent writes into the kernel from inside
//! its slice, while the slice runs.
//!
//! The report goes over the slice's channel (`LOOPX_REPORT_SOCKET`), never into the store
//! directly: the supervisor running the slice checks that this process belongs to the slice
//! and writes under the slice's own agent, todo and epoch (`loopx_kernel::report`). Nothing in
//! this process's environment chooses who it writes as.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use loopx_kernel::report::{AgentReport, ReportRefused, ReportReply, Reported, SOCKET_VAR};

use super::evidence::{show_evidence, show_handoff};
use crate::args::{ReportCommand, WaitArgs};
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

pub fn run(ctx: &mut Ctx, cmd: ReportCommand) -> Result<(), ExpectedError> {
    let socket = std::env::var_os(SOCKET_VAR).filter(|v| !v.is_empty()).ok_or_else(|| {
        ExpectedError::Usage(format!(
            "`loopx report` is for agents inside a slice, and {SOCKET_VAR} is not set\n(hint: loopx sets it for the agents it runs; people record with `loopx evidence add`, `loopx handoff write`, `loopx todo add`, `loopx gate ask` and `loopx todo done`)"
        ))
    })?;
    let report = report_of(ctx, cmd)?;
    let reply = match send(std::path::Path::new(&socket), &report)? {
        ReportReply::Written(reported) => *reported,
        ReportReply::Refused(refused) => return Err(refusal(refused)),
    };
    match reply {
        Reported::Evidence(evidence) => show_evidence(ctx, &evidence),
        Reported::Handoff(handoff) => show_handoff(ctx, &handoff),
        Reported::Gate(gate) => super::gate::show_opened(ctx, &gate),
        Reported::Todo(todo) => {
            let message = match report {
                AgentReport::Done { .. } => format!("Done: {} {}", todo.id, todo.title),
                _ => format!(
                    "Proposed {} for goal {}: {}",
                    todo.id, todo.goal, todo.title
                ),
            };
            super::todo::show(ctx, &todo, message)
        }
    }
}

/// The report a `loopx report` command makes, checked as far as the command line can be.
fn report_of(ctx: &Ctx, cmd: ReportCommand) -> Result<AgentReport, ExpectedError> {
    Ok(match cmd {
        ReportCommand::Evidence {
            kind,
            text,
            unit,
            detail,
            files,
        } => {
            // Paths are shown relative to the project, as the agent sees it.
            let root = std::env::var_os("LOOPX_PROJECT").unwrap_or_else(|| ".".into());
            let (summary, metric) =
                loopx_app::evidence::measured(kind, &text.join(" "), unit.as_deref())
                    .map_err(|e| ExpectedError::Usage(e.to_string()))?;
            AgentReport::Evidence {
                kind,
                summary,
                detail,
                files: loopx_app::evidence::file_refs(std::path::Path::new(&root), &files)?,
                metric,
            }
        }
        ReportCommand::Handoff(text) => AgentReport::Handoff {
            done: text.done,
            next: text.next,
            files: text.files,
            questions: text.questions,
        },
        ReportCommand::Todo {
            title,
            detail,
            priority,
            role,
            after,
            wait,
        } => AgentReport::Todo {
            title,
            detail,
            priority,
            role,
            after: super::ids(&after)?,
            monitor: agent_check(&wait)?,
            not_before: super::todo::waits(&wait, ctx.now())?.1,
        },
        ReportCommand::Ask(ask) => AgentReport::Ask {
            question: ask.question,
            options: ask.options,
            context: ask.context,
        },
        ReportCommand::Done { summary } => AgentReport::Done { summary },
        ReportCommand::ProposeGoal {
            objective,
            scope,
            why,
        } => AgentReport::ProposeGoal {
            objective,
            scope,
            why,
        },
    })
}

/// A monitor's check an agent proposes: refused here, where the flag is, with a profile (the
/// kernel refuses it from any agent).
fn agent_check(wait: &WaitArgs) -> Result<Option<loopx_vocab::MonitorWords>, ExpectedError> {
    match wait.profile {
        Some(_) => Err(ExpectedError::Usage(
            "only a person may give a monitor's check a profile; an agent's check runs read-only in the sandbox\n(hint: leave out --profile)".to_owned(),
        )),
        None => Ok(wait.words()),
    }
}

/// One request, one reply.
fn send(socket: &std::path::Path, report: &AgentReport) -> Result<ReportReply, ExpectedError> {
    let unreachable = |e: std::io::Error| ExpectedError::Reported {
        summary: format!(
            "cannot reach the slice's report channel at {}: {e}\n(hint: reports are accepted only while the slice runs)",
            socket.display()
        ),
        code: exit_code::CONFLICT,
    };
    let mut stream = UnixStream::connect(socket).map_err(unreachable)?;
    // The supervisor may wait for a busy store (up to its patience) before it answers.
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(unreachable)?;
    let mut line = serde_json::to_vec(report).map_err(std::io::Error::from)?;
    line.push(b'\n');
    // The channel may answer (a refusal of a caller outside the slice) and close before it
    // reads the request: the write then fails, but the answer is there to read.
    let written = stream.write_all(&line);
    let mut reply = String::new();
    let read = BufReader::new(&stream).read_line(&mut reply);
    match (written, read) {
        (_, Ok(n)) if n > 0 => {}
        (Err(e), _) | (Ok(()), Err(e)) => return Err(unreachable(e)),
        (Ok(()), Ok(_)) => {}
    }
    serde_json::from_str(&reply).map_err(|e| ExpectedError::Reported {
        summary: format!("the slice's report channel answered something unreadable: {e}"),
        code: exit_code::INTERNAL,
    })
}

fn refusal(refused: ReportRefused) -> ExpectedError {
    ExpectedError::Reported {
        summary: refused.message,
        code: exit_code::of(refused.class),
    }
}
