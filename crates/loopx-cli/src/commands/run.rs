//! `loopx run --once`: one decision and at most one slice of one agent (DESIGN §1, §6).
//!
//! The lifecycle lives in `loopx-supervisor`; this prints its steps, one line each on stderr,
//! and with `--json` one object on stdout at the end (shape in `docs/cli.md`).

use std::io::Write;

use loopx_kernel::Timestamp;
use loopx_kernel::time::short_duration;
use loopx_quota::DecisionKind;
use loopx_supervisor::{Once, RunOnce, SliceSummary, Step};
use serde::Serialize;

use crate::args::RunArgs;
use crate::context::{Ctx, slice_id};
use crate::errors::ExpectedError;

/// `--json`: the decision, and the slice when one ran.
#[derive(Debug, Serialize)]
struct RunJson<'a> {
    format_version: u32,
    agent: &'a str,
    decision: DecisionKind,
    reason: &'a str,
    wake_at: Option<Timestamp>,
    gate: Option<GateJson<'a>>,
    slice: Option<&'a SliceSummary>,
}

#[derive(Debug, Serialize)]
struct GateJson<'a> {
    id: &'a str,
    question: &'a str,
}

pub fn run(ctx: &mut Ctx, args: RunArgs) -> Result<(), ExpectedError> {
    if !args.once {
        return Err(ExpectedError::Usage(
            "`loopx run` runs one slice at a time for now\n(hint: `loopx run --once`)".to_owned(),
        ));
    }
    // An agent that starts a supervisor would run agents of its own, outside every limit.
    if let Some(slice) = slice_id() {
        return Err(ExpectedError::Usage(format!(
            "`loopx run` cannot run inside a slice (LOOPX_SLICE={slice})"
        )));
    }
    let loopx_exe = std::env::current_exe()
        .map_err(|e| ExpectedError::Usage(format!("cannot find the loopx executable: {e}")))?;
    let req = RunOnce {
        project: ctx.project()?,
        agent: args.agent,
        loopx_exe,
    };
    let once = loopx_supervisor::run_once(&req, &mut |step| say(&step_line(&step)))?;
    let (agent, decision, slice) = match &once {
        Once::Decided { agent, decision } => {
            if let Some((id, question)) = &decision.gate {
                say(&format!("question {id}: {question}"));
                say(&format!("answer with: loopx gate answer {id} \"ANSWER\""));
            }
            (agent.as_str(), decision.clone(), None)
        }
        Once::Refused {
            agent,
            decision,
            until,
            reason,
        } => {
            let until = until.map_or_else(|| "resumed".to_owned(), |u| u.to_string());
            say(&format!(
                "{agent}: wait until {until}: quota refused the slice: {reason}"
            ));
            let mut wait = decision.clone();
            wait.decision = DecisionKind::Wait;
            wait.wake_at = None;
            wait.reason = reason.clone();
            (agent.as_str(), wait, None)
        }
        Once::Ran { decision, slice } => (slice.agent.as_str(), decision.clone(), Some(&**slice)),
    };
    if ctx.json {
        let wake_at = match &once {
            Once::Refused { until, .. } => *until,
            _ => decision.wake_at.map(Timestamp),
        };
        return ctx.json_out(&RunJson {
            format_version: 1,
            agent,
            decision: decision.decision,
            reason: &decision.reason,
            wake_at,
            gate: decision
                .gate
                .as_ref()
                .map(|(id, question)| GateJson { id, question }),
            slice,
        });
    }
    Ok(())
}

/// A progress line on stderr: stdout carries results only.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn step_line(step: &Step<'_>) -> String {
    match step {
        Step::Decided {
            agent,
            decision,
            now,
        } => format!("{agent}: {}", super::quota::describe(decision, *now)),
        Step::Claimed {
            agent,
            todo,
            epoch,
            held,
        } => {
            let verb = if *held { "holds" } else { "claimed" };
            format!("{agent}: {verb} {todo} (epoch {epoch})")
        }
        Step::Started {
            slice,
            kind,
            todo,
            log,
        } => {
            let on = todo.map(|t| format!(" on {t}")).unwrap_or_default();
            let kind = loopx_supervisor::prompt::kind_name(*kind);
            format!("slice {slice} started: {kind}{on} (log {log})")
        }
        Step::Spawned { slice, pid } => format!("slice {slice} spawned: pid {pid}"),
        Step::Ended(s) => ended_line(s),
    }
}

fn ended_line(s: &SliceSummary) -> String {
    let took = short_duration(std::time::Duration::from_millis(s.duration_ms));
    let exit = s
        .exit
        .as_deref()
        .map(|e| format!(", {e}"))
        .unwrap_or_default();
    let mut line = format!(
        "slice {} ended: {} in {took}{exit}: {}",
        s.id, s.outcome, s.reason
    );
    let mut wrote = Vec::new();
    if let (Some(todo), Some(state)) = (&s.todo, s.todo_state) {
        wrote.push(format!("{todo} {state}"));
    }
    if !s.new_todos.is_empty() {
        wrote.push(format!("new todos {}", s.new_todos.join(", ")));
    }
    if let Some(gate) = &s.gate {
        wrote.push(format!("gate {gate} asks a person"));
    }
    if !s.violations.is_empty() {
        let asks = s
            .violation_gate
            .as_deref()
            .map(|g| format!(": gate {g} asks a person to keep or roll them back"))
            .unwrap_or_default();
        wrote.push(format!(
            "changed files it may not change ({}){asks}",
            s.violations.join(", ")
        ));
    }
    if let Some(until) = s.hold_until {
        wrote.push(format!("account held until {until}"));
    }
    match s.writeback {
        "applied" => {}
        "stale_epoch" => wrote.push(
            "the claim moved on (stale epoch): only the slice's end and usage were recorded"
                .to_owned(),
        ),
        other => wrote.push(format!(
            "writeback {other}: only the slice's end and usage were recorded"
        )),
    }
    if !wrote.is_empty() {
        line.push_str(&format!("\nslice {}: {}", s.id, wrote.join("; ")));
    }
    line
}
