//! How `loopx run` says what happens: one line per step of `--once` and per event of the loop
//! (peers' lines interleave, so each names its agent).

use loopx_kernel::time::short_duration;
use loopx_kernel::{AgentName, GateId, Timestamp};
use loopx_supervisor::poll::PollSummary;
use loopx_supervisor::{EndReason, Recovered, RunEvent, SliceSummary, Step};

pub(super) fn step_line(step: &Step<'_>, now: Timestamp) -> String {
    match step {
        Step::Decided {
            agent,
            decision,
            now,
            ..
        } => format!("{agent}: {}", loopx_app::quota::describe(decision, *now)),
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
            ..
        } => {
            let on = todo.map(|t| format!(" on {t}")).unwrap_or_default();
            let kind = kind.as_str();
            format!("slice {slice} started: {kind}{on} (log {log})")
        }
        Step::Spawned { slice, pid } => format!("slice {slice} spawned: pid {pid}"),
        Step::Ended(s) => ended_line(s, now),
    }
}

fn ended_line(s: &SliceSummary, now: Timestamp) -> String {
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
    let wrote = what_it_wrote(s, now);
    if !wrote.is_empty() {
        line.push_str(&format!("\nslice {}: {}", s.id, wrote.join("; ")));
    }
    // What the person would otherwise find only in the run's log: the agent asked for
    // something loopx would not do.
    for item in &s.dropped {
        let item = item
            .strip_prefix(loopx_domain::writeback::DROPPED)
            .unwrap_or(item);
        line.push_str(&format!(
            "\nslice {}: loopx refused one item of the report: {}",
            s.id,
            item.replace('\n', " ")
        ));
    }
    line
}

/// What a slice's end changed, in short clauses: the todo's state, landing, new todos, gates,
/// files it may not change, a held account, the goal's end, a writeback not applied.
fn what_it_wrote(s: &SliceSummary, now: Timestamp) -> Vec<String> {
    let mut wrote = Vec::new();
    if let (Some(todo), Some(state)) = (&s.todo, s.todo_state) {
        wrote.push(format!("{todo} {state}"));
    }
    if let Some(commit) = &s.landed {
        wrote.push(format!(
            "landed on the goal's branch as {}",
            loopx_git::worktree::short(commit)
        ));
    }
    if let Some(why) = &s.land_failed {
        wrote.push(format!(
            "it did not land: {why} (its output is in the todo's `land` evidence, and the next slice's prompt)"
        ));
    }
    if let Some(gate) = &s.land_gate {
        wrote.push(format!(
            "its branch does not land: gate {gate} asks a person to rebase or drop it"
        ));
    }
    if !s.new_todos.is_empty() {
        wrote.push(format!("new todos {}", joined(&s.new_todos)));
    }
    if let Some(gate) = &s.gate {
        wrote.push(format!("gate {gate} asks a person"));
    }
    if !s.violations.is_empty() {
        let asks = s
            .violation_gate
            .map(|g| format!(": gate {g} asks a person to keep or roll them back"))
            .unwrap_or_default();
        wrote.push(format!(
            "changed files it may not change ({}){asks}",
            s.violations.join(", ")
        ));
    }
    if let Some(until) = s.hold_until {
        wrote.push(format!("account held until {}", at_and_in(until, now)));
    }
    if s.goal_done {
        wrote.push("the goal is done".to_owned());
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
    wrote
}

/// The progress line of a loop event.
pub(crate) fn event_line(event: &RunEvent, now: Timestamp) -> String {
    match event {
        RunEvent::Running { agents, pid } => {
            format!("loopx run (pid {pid}): agents {}", joined(agents))
        }
        RunEvent::Recovered(r) => recovered(r),
        RunEvent::SliceStarted {
            agent,
            slice,
            kind,
            todo,
            log,
        } => {
            let on = on(*todo);
            format!("{agent}: slice {slice} started: {kind}{on} (log {log})")
        }
        RunEvent::SliceEnded(s) => {
            // Both lines name the agent: peers' lines interleave.
            let agent = &s.agent;
            format!("{agent}: {}", ended_line(s, now))
                .replace("\nslice ", &format!("\n{agent}: slice "))
        }
        RunEvent::Paused {
            agent,
            until,
            reason,
        } => {
            let until =
                until.map_or_else(|| "resumed by a person".to_owned(), |at| at_and_in(at, now));
            format!("{agent}: paused until {until}: {reason}")
        }
        RunEvent::Resumed { agent } => format!("{agent}: resumed"),
        RunEvent::Question {
            agent,
            gate,
            question,
            options,
            answer_with,
        } => asked(agent, *gate, question, options, answer_with),
        RunEvent::Quiet { agent, reason } => format!("{agent}: quiet: {reason}"),
        RunEvent::Polled(p) => polled(p, now),
        RunEvent::AgentStopped { agent, reason } => format!("{agent}: stopped: {reason}"),
        RunEvent::AgentError { agent, error } => format!("{agent}: error: {error}"),
        RunEvent::Stopping { reason, at_once } => match at_once {
            false => format!("{reason}: stopping running slices (again to kill them at once)"),
            true => format!("{reason}: killing running slices now"),
        },
        RunEvent::Finished {
            reason,
            slices,
            detail,
        } => finished(*reason, *slices, detail),
    }
}

/// Ids or names, as a line lists them.
fn joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A question that waits for a person, with its options and the command that answers it.
fn asked(
    agent: &AgentName,
    gate: GateId,
    question: &str,
    options: &[String],
    answer_with: &str,
) -> String {
    let options = match options {
        [] => String::new(),
        options => format!(" [{}]", options.join(" / ")),
    };
    format!("{agent}: waiting on gate {gate}: {question}{options}\nanswer with: {answer_with}")
}

/// `on t3` when the slice had a todo.
fn on(todo: Option<impl std::fmt::Display>) -> String {
    todo.map(|t| format!(" on {t}")).unwrap_or_default()
}

/// A monitor's poll: its result, and what comes next.
fn polled(p: &PollSummary, now: Timestamp) -> String {
    let exit = p.exit.map(|c| format!(" (exit {c})")).unwrap_or_default();
    let then = match (&p.gate, p.next_at) {
        (Some(gate), _) => format!("; a person is asked: gate {gate}"),
        (None, Some(at)) => format!("; next poll at {}", at_and_in(at, now)),
        (None, None) => String::new(),
    };
    format!("monitor {} polled: {}{exit}{then}", p.todo, p.result)
}

/// A slice whose supervisor died, recovered.
fn recovered(r: &Recovered) -> String {
    let todo = on(r.todo.as_deref());
    let stopped = if r.stopped.is_empty() {
        String::new()
    } else {
        format!(", stopped {} leftover process(es)", r.stopped.len())
    };
    let released = if r.released { ", claim released" } else { "" };
    format!(
        "recovered slice {} of {}{todo}: its supervisor is gone; recorded interrupted{stopped}{released}",
        r.slice, r.agent
    )
}

/// The run's last line: why it ended, after how many slices.
fn finished(reason: EndReason, slices: u64, detail: &str) -> String {
    let why = match reason {
        // "done" only when the goal is: a run whose goal a budget gate paused once
        // said it ended "(done)".
        EndReason::Goal if detail.split("; ").all(|d| d.ends_with(" is done")) => "done",
        EndReason::Goal => "every agent stopped",
        EndReason::MaxSlices => "slice limit reached",
        EndReason::Time => "time is up",
        EndReason::Gate => "halted on a gate",
        EndReason::Shutdown => "interrupted",
        EndReason::Error => "an agent could not go on",
    };
    format!("loopx run ended ({why}) after {slices} slice(s): {detail}")
}

/// `2026-11-30T15:00:00Z (in 5m)`: the instant, and how far it is from `now`.
pub(super) fn at_and_in(at: Timestamp, now: Timestamp) -> String {
    format!("{at} ({})", crate::output::views::relative(now, at))
}
