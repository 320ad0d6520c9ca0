//! Monitor polls: claimed like a slice, recorded in one transaction with what they mean
//! (`model/monitor.rs`, `docs/monitors.md`).
//!
//! A poll is claimed ([`claim_poll`]) by the supervisor that will run it: the claim bumps the
//! todo's epoch and sets a short poll lease, so a second supervisor finds it taken and a late
//! record of a poll whose claim lapsed is refused. Recording it ([`record_poll`]) judges the
//! result, compacts it into the monitor's observations, logs it when its verdict or exit code
//! changed (and the first, the one that met it, the one that asks a person: never each new
//! output of a check that prints a timestamp), and moves the monitor on: met is done
//! (with the output as evidence, which releases the todos after it), not yet is due one cadence
//! later, a failure backs off and asks a person after [`FAILURES_BEFORE_ASKING`] in a row. An
//! expired monitor is not polled: claiming it asks a person instead.

use std::time::Duration;

use super::op::{Applied, NewEvidence, NewGate};
use crate::errors::{Conflict, Invalid, KernelError};
use crate::ids::{AgentName, TodoId};
use crate::model::{
    Blocks, EventKind, EvidenceKind, FAILURES_BEFORE_ASKING, GateKind, GoalStatus, Lease,
    MONITOR_OPTIONS, Monitor, Observation, PollVerdict, Todo, TodoState,
};
use crate::store::tables;
use crate::store::writer::Writer;

/// A supervisor takes a due poll.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimPoll {
    pub todo: TodoId,
    /// Who polls (shown while it runs).
    pub by: AgentName,
    /// How long the claim lasts: the check's time limit and a margin.
    pub ttl: Duration,
}

/// What a poll saw, recorded under its claim.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordPoll {
    pub todo: TodoId,
    pub epoch: u64,
    /// The check's exit code; `None`: loopx stopped it or it never started.
    pub exit: Option<i32>,
    /// Why the poll failed whatever its exit (a time-out, an output flood, no start).
    pub failed: Option<String>,
    /// A hash of its whole output ([`crate::model::output_hash`]).
    pub hash: String,
    /// The tail of its output; redacted before it is written.
    pub tail: String,
    /// The pinned files that changed since a person last saw them, each with what it is now
    /// ([`crate::model::Pin::changed_to`]): the check was not run, and a person is asked.
    pub changed: Vec<crate::model::Pin>,
}

fn monitor_of(todo: &Todo) -> Result<&Monitor, KernelError> {
    todo.monitor.as_deref().ok_or_else(|| {
        Invalid::Other(format!("{} is not a monitor (it has no --check)", todo.id)).into()
    })
}

pub(super) fn claim_poll(w: &Writer<'_>, claim: ClaimPoll) -> Result<Applied, KernelError> {
    let ClaimPoll { todo: id, by, ttl } = claim;
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    let monitor = monitor_of(&todo)?.clone();
    let goal: crate::model::Goal = w.require(tables::GOALS, todo.goal.0, "goal", todo.goal)?;
    if todo.state != TodoState::Open || goal.status != GoalStatus::Active {
        return Err(Conflict::TodoState {
            todo: id,
            state: todo.state.as_str(),
            action: "polled",
        }
        .into());
    }
    super::todo::refuse_waiting(w, &todo)?;
    if !monitor.due(w.now) {
        return Err(not_due(&todo, &monitor));
    }
    // The poll's claim goes with the expiry question below: expired, it is not polled.
    if monitor.expired(w.now) {
        let gate = ask(w, &todo, expired_question(&todo, &monitor))?;
        let m = todo.monitor.as_mut().expect("checked above");
        m.asked = Some(gate);
        todo.updated_at = w.now;
        w.put_todo(&todo)?;
        return Ok(Applied::Todo(todo));
    }
    todo.epoch += 1;
    let m = todo.monitor.as_mut().expect("checked above");
    m.poll = Some(Lease {
        agent: by,
        epoch: todo.epoch,
        granted_at: w.now,
        expires_at: w.now.plus(ttl),
    });
    w.put_todo(&todo)?;
    Ok(Applied::Todo(todo))
}

fn not_due(todo: &Todo, monitor: &Monitor) -> KernelError {
    let why = match (&monitor.asked, &monitor.poll) {
        (Some(gate), _) => format!("a person is asked about it ({gate})"),
        (None, Some(lease)) => format!("{} polls it until {}", lease.agent, lease.expires_at),
        (None, None) => format!("its next poll is at {}", monitor.next_at),
    };
    Invalid::Other(format!("{} is not due for a poll: {why}", todo.id)).into()
}

pub(super) fn record_poll(w: &Writer<'_>, poll: RecordPoll) -> Result<Applied, KernelError> {
    let mut todo: Todo = w.require(tables::TODOS, poll.todo.0, "todo", poll.todo)?;
    let id = todo.id;
    monitor_of(&todo)?;
    check_poll_held(w, &todo, poll.epoch)?;
    if !poll.changed.is_empty() {
        return pinned_changed(w, todo, poll.changed, poll.tail);
    }
    let m = todo.monitor.as_mut().expect("checked above");
    let verdict = m.judge(poll.failed.is_some(), poll.exit, &poll.hash);
    let mut tail = poll.tail;
    if let Some(why) = &poll.failed {
        tail = format!("{why}\n{tail}");
    }
    let tail = crate::limits::clip_tail(&tail, crate::model::OUTPUT_TAIL_BYTES);
    // The log hears of a poll whose meaning changed, not of every new output: a check that
    // prints a timestamp would log each poll (360 an hour at 10 s).
    let changed = m
        .last()
        .is_none_or(|last| last.verdict != verdict || last.exit != poll.exit);
    m.observe(Observation {
        at: w.now,
        last_at: w.now,
        count: 1,
        verdict,
        exit: poll.exit,
        hash: poll.hash,
        tail: tail.clone(),
    });
    let polls = m.polls;
    schedule(m, verdict, w.now);
    let failures = m.failures;
    todo.epoch += 1;
    todo.updated_at = w.now;
    w.put_todo(&todo)?;
    let asks = verdict == PollVerdict::Failed && failures >= FAILURES_BEFORE_ASKING;
    if changed || verdict == PollVerdict::Met || asks {
        w.event(EventKind::MonitorPolled {
            todo: id,
            verdict,
            exit: poll_exit(&todo),
            polls,
        })?;
    }
    match verdict {
        PollVerdict::Met => return met(w, &todo, polls, tail),
        PollVerdict::Failed if asks => {
            let question = format!(
                "The check of monitor {id} ({}) failed {failures} times in a row; the last output is in the context. Poll it again, mark it met, or drop it?",
                todo.title
            );
            let gate = ask_with(w, &todo, question, tail)?;
            let m = todo.monitor.as_mut().expect("checked above");
            m.asked = Some(gate);
            w.put_todo(&todo)?;
        }
        _ => {}
    }
    Ok(Applied::Todo(todo))
}
/// A poll is recorded under the lease it was claimed with: the todo open, at the same epoch.
fn check_poll_held(w: &Writer<'_>, todo: &Todo, epoch: u64) -> Result<(), KernelError> {
    let held = todo.state == TodoState::Open
        && todo.epoch == epoch
        && todo
            .monitor
            .as_ref()
            .and_then(|m| m.poll.as_ref())
            .is_some_and(|l| l.epoch == epoch);
    if held {
        return Ok(());
    }
    Err(super::todo::stale(w, todo, epoch))
}

/// The poll is over (its lease goes); the next one after `verdict` is at the monitor's pace,
/// later after failures in a row.
fn schedule(m: &mut Monitor, verdict: PollVerdict, now: crate::time::Timestamp) {
    m.poll = None;
    match verdict {
        PollVerdict::Met => m.failures = 0,
        PollVerdict::NotYet => {
            m.failures = 0;
            m.next_at = now.plus(Duration::from_millis(m.every_ms));
        }
        PollVerdict::Failed => {
            m.failures += 1;
            m.next_at = now.plus(Duration::from_millis(m.backoff_ms()));
        }
    }
}

/// A monitor met: its evidence, and its todo done.
fn met(w: &Writer<'_>, todo: &Todo, polls: u64, tail: String) -> Result<Applied, KernelError> {
    let id = todo.id;
    super::entities::evidence_add(
        w,
        NewEvidence {
            kind: EvidenceKind::Monitor,
            summary: format!("{id} met after {polls} poll(s): {}", todo.title),
            detail: tail,
            files: vec![],
            todo: Some(id),
            slice: None,
            epoch: None,
            work: None,
            metric: None,
        },
    )?;
    super::todo::finish(w, id, TodoState::Done, None, None)
}

/// A file a person's check names changed since the person last saw it: the check was not run
/// (it would run code an agent may have written, with the person's rights), and the person is
/// asked. `poll` runs the content they were asked about, and pins it.
fn pinned_changed(
    w: &Writer<'_>,
    mut todo: Todo,
    changed: Vec<crate::model::Pin>,
    context: String,
) -> Result<Applied, KernelError> {
    let id = todo.id;
    let m = todo.monitor.as_mut().expect("checked by the caller");
    let mut named = Vec::new();
    for now in changed {
        let Some(pin) = m.pins.iter_mut().find(|p| p.path == now.path) else {
            continue;
        };
        named.push(match now.changed_to.as_deref() {
            Some("") => format!("{} is gone", pin.path),
            _ => format!("{} changed", pin.path),
        });
        pin.changed_to = now.changed_to;
    }
    if named.is_empty() {
        return Err(Invalid::Other(format!(
            "{id}'s check pins none of the files named as changed"
        ))
        .into());
    }
    m.poll = None;
    todo.epoch += 1;
    todo.updated_at = w.now;
    let question = format!(
        "The check of monitor {id} ({}) was not run: {} since you added it or last ran it, and an agent may have written it. Look at it (`git diff`, `git log -- <file>`); then run it as it is now (poll), mark the monitor met, or drop it?",
        todo.title,
        named.join(", ")
    );
    let gate = ask_with(w, &todo, question, context)?;
    todo.monitor.as_mut().expect("checked above").asked = Some(gate);
    w.put_todo(&todo)?;
    Ok(Applied::Todo(todo))
}

fn poll_exit(todo: &Todo) -> Option<i32> {
    todo.monitor
        .as_ref()
        .and_then(|m| m.last())
        .and_then(|o| o.exit)
}

fn expired_question(todo: &Todo, monitor: &Monitor) -> String {
    let seen = monitor
        .last()
        .map(|o| format!("its last poll was {}", o.verdict.as_str()))
        .unwrap_or_else(|| "it was never polled".to_owned());
    format!(
        "Monitor {} ({}) expired after {} poll(s) without being met, and {seen}. Poll it again (for as long again), mark it met, or drop it?",
        todo.id, todo.title, monitor.polls
    )
}

fn ask(w: &Writer<'_>, todo: &Todo, question: String) -> Result<crate::ids::GateId, KernelError> {
    let context = todo
        .monitor
        .as_ref()
        .and_then(|m| m.last())
        .map(|o| o.tail.clone())
        .unwrap_or_default();
    ask_with(w, todo, question, context)
}

/// Opens the monitor gate for `todo`: it blocks the monitor (its dependents wait on it anyway).
fn ask_with(
    w: &Writer<'_>,
    todo: &Todo,
    question: String,
    context: String,
) -> Result<crate::ids::GateId, KernelError> {
    let applied = super::entities::gate_ask(
        w,
        NewGate {
            question: crate::limits::clip(&question, crate::limits::QUESTION),
            options: MONITOR_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            context: crate::limits::clip_tail(&context, crate::limits::DETAIL),
            blocks: Blocks::Todos(vec![todo.id]),
            kind: GateKind::Monitor { todo: todo.id },
        },
    )?;
    match applied {
        Applied::Gate(gate) => Ok(gate.id),
        _ => unreachable!("gate_ask yields a gate"),
    }
}

/// A person answered monitor `id`'s gate with `option` (1-based): `poll` polls it again now
/// (an expired one for as long again as it had), `met` marks it done, `drop` drops it.
pub(super) fn answered(
    w: &Writer<'_>,
    id: TodoId,
    option: Option<&str>,
) -> Result<(), KernelError> {
    let mut todo: Todo = w.require(tables::TODOS, id.0, "todo", id)?;
    if todo.state.is_final() {
        return Ok(());
    }
    match option {
        Some(o) if o == MONITOR_OPTIONS[1] => {
            super::todo::finish(w, id, TodoState::Done, None, None)?;
        }
        Some(o) if o == MONITOR_OPTIONS[2] => {
            super::todo::finish(w, id, TodoState::Dropped, None, None)?;
        }
        _ => {
            let Some(m) = todo.monitor.as_mut() else {
                return Ok(());
            };
            m.asked = None;
            m.failures = 0;
            m.next_at = w.now;
            // The person saw what the pinned files are now: that content, and no later one. A
            // file that was gone stays pinned as gone (`""`): one an agent writes there later
            // asks again (dropping the pin let a later script run unasked).
            for pin in &mut m.pins {
                if let Some(now) = pin.changed_to.take() {
                    pin.sha256 = now;
                }
            }
            // As long again as `--expires` gave it, from the answer.
            if m.expired(w.now) {
                m.expires_at = m
                    .expires_after_ms
                    .map(|ms| w.now.plus(Duration::from_millis(ms)));
            }
            todo.updated_at = w.now;
            w.put_todo(&todo)?;
        }
    }
    Ok(())
}
