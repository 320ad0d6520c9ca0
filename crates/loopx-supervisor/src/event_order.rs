//! The order `loopx run` shows its events in: the kernel's.
//!
//! Each agent's decision and slice run on a worker thread of its own ([`crate::run_loop`]), and
//! a worker tells the coordinator of its slice's start right after the kernel recorded it, and
//! of its end after the writeback and what follows it (removing a done todo's worktree, which
//! for a large build tree takes a second). A peer woken by that writeback decides, claims and
//! begins the next todo meanwhile: shown in the order the messages arrived, its start came
//! before the end that allowed it (`rev: slice s5 started: work on t5`, then `exec: slice s4
//! ended … t4 done`), though the kernel's log had them the other way round.
//!
//! So the coordinator does not emit events as they arrive; it queues them here, and this
//! releases them in the log's order:
//!
//! - A slice's start and end are keyed on the sequence number of the event that recorded them
//!   (`slice_started` and `slice_ended` of its id, found in the log). Queued slice events are
//!   released by that key; any other event (a decision, a question, a poll) keeps its place
//!   behind the event it came after.
//! - A slice event of sequence N waits while a worker of this run still owes a message for an
//!   event the log holds before N: a running slice whose `slice_ended` is there, or a deciding
//!   worker whose agent's newer `slice_started` is there. The kernel has committed it, so the
//!   message is on its way; and every worker ends with a message of its own (done), after which
//!   it owes nothing: a wait is short, and never forever.
//!
//! It cannot reorder: what it releases before an event of sequence N is either an event of a
//! lower sequence or an event that is no slice's; and nothing this run owes from before N is
//! still to come when N is released. What it can do is show an event late, by the moment a
//! worker takes to finish up after its commit. With one agent there is one worker, whose
//! messages come in its own order: the run does not read the log for that.
//!
//! The log is read from the last slice event released, at most [`LOOK_AHEAD`] events at a time;
//! an event not found there (a slice closed by recovery long before, a flood of other writes)
//! is shown where it came, as is everything when the store cannot be read.

use std::collections::VecDeque;

use loopx_kernel::{AgentName, Event, EventKind, Project, SliceId};

use crate::run_loop::RunEvent;
use crate::store_cache::StoreCache;

/// How many events of the log one release reads at most.
const LOOK_AHEAD: usize = 10_000;

/// A message a busy worker of this run may still send about an event the kernel recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owed {
    /// The end of its running slice.
    End(SliceId),
    /// The start of a slice of `agent` newer than `after`: the worker is deciding.
    Start {
        agent: AgentName,
        after: Option<SliceId>,
    },
}

impl Owed {
    /// Whether `event` is the one this message is about.
    fn is(&self, event: &Event) -> bool {
        match (self, &event.kind) {
            (Owed::End(slice), EventKind::SliceEnded { slice: ended, .. }) => slice == ended,
            (
                Owed::Start { agent, after },
                EventKind::SliceStarted {
                    slice, agent: a, ..
                },
            ) => a == agent && after.is_none_or(|after| slice.0 > after.0),
            _ => false,
        }
    }
}

/// The queue of events not shown yet.
#[derive(Debug, Default)]
pub(crate) struct EventOrder {
    queue: VecDeque<RunEvent>,
    /// Every slice event of this run recorded up to this sequence number is released.
    seen: u64,
}

impl EventOrder {
    /// An order whose log starts after sequence `seen` (the log's length when the run began).
    pub(crate) fn new(seen: u64) -> EventOrder {
        EventOrder {
            queue: VecDeque::new(),
            seen,
        }
    }

    /// An order whose log starts after the store's last event now (from the start when the
    /// store cannot be read: what is not found is shown as it came).
    pub(crate) fn after_log(stores: &StoreCache, project: &Project) -> EventOrder {
        let seen = stores
            .with(project, |store| store.read(|s| s.event_count()))
            .unwrap_or(0);
        EventOrder::new(seen)
    }

    pub(crate) fn push(&mut self, event: &RunEvent) {
        self.queue.push_back(event.clone());
    }

    /// Emits every queued event, in the order they came.
    pub(crate) fn release_all(&mut self, emit: &mut dyn FnMut(&RunEvent)) {
        for event in self.queue.drain(..) {
            emit(&event);
        }
    }

    /// [`EventOrder::release`] reading the project's log through the supervisor's handle.
    pub(crate) fn release_in(
        &mut self,
        owed: &[Owed],
        stores: &StoreCache,
        project: &Project,
        emit: &mut dyn FnMut(&RunEvent),
    ) {
        let mut read = |from: u64| {
            stores
                .with(project, |store| {
                    store.read(|s| s.events_from(from, LOOK_AHEAD))
                })
                .ok()
        };
        self.release(owed, &mut read, emit);
    }

    /// Emits what may be shown now, in the kernel's order. `owed`: what the busy workers of
    /// this run may still send; `read(from)`: the log from sequence `from` on, at most
    /// [`LOOK_AHEAD`] events (`None`: it cannot be read).
    pub(crate) fn release(
        &mut self,
        owed: &[Owed],
        read: &mut dyn FnMut(u64) -> Option<Vec<Event>>,
        emit: &mut dyn FnMut(&RunEvent),
    ) {
        if !self.queue.iter().any(|e| slice_of(e).is_some()) {
            return self.release_all(emit);
        }
        let Some(log) = read(self.seen + 1) else {
            return self.release_all(emit);
        };
        // Each event with the sequence it is sorted by: a slice event's own, else the one
        // before it (so that it stays behind the event it came after).
        let mut key = 0;
        let mut keyed: Vec<(u64, Option<u64>, RunEvent)> = self
            .queue
            .drain(..)
            .map(|event| {
                let seq = slice_of(&event).and_then(|slice| sequence(&log, &slice));
                key = seq.unwrap_or(key);
                (key, seq, event)
            })
            .collect();
        keyed.sort_by_key(|(key, ..)| *key);
        let mut rest = keyed.into_iter();
        for (_, seq, event) in rest.by_ref() {
            if let Some(seq) = seq {
                let waits = log
                    .iter()
                    .take_while(|e| e.seq < seq)
                    .any(|e| owed.iter().any(|o| o.is(e)));
                if waits {
                    self.queue.push_back(event);
                    break;
                }
                self.seen = self.seen.max(seq);
            }
            emit(&event);
        }
        self.queue.extend(rest.map(|(_, _, event)| event));
        // A window full of other writes: the next release reads on from its end.
        if log.len() >= LOOK_AHEAD
            && self.queue.is_empty()
            && let Some(last) = log.last()
        {
            self.seen = self.seen.max(last.seq);
        }
    }
}

/// The slice event `event` is: its slice, and whether it is the end.
#[derive(Debug, Clone, Copy)]
struct SliceMark {
    slice: SliceId,
    end: bool,
}

fn slice_of(event: &RunEvent) -> Option<SliceMark> {
    let (id, end) = match event {
        RunEvent::SliceStarted { slice, .. } => (*slice, false),
        RunEvent::SliceEnded(summary) => (summary.id, true),
        _ => return None,
    };
    Some(SliceMark { slice: id, end })
}

/// The sequence number of the log's event for `mark`.
fn sequence(log: &[Event], mark: &SliceMark) -> Option<u64> {
    log.iter()
        .find(|e| match &e.kind {
            EventKind::SliceStarted { slice, .. } => !mark.end && *slice == mark.slice,
            EventKind::SliceEnded { slice, .. } => mark.end && *slice == mark.slice,
            _ => false,
        })
        .map(|e| e.seq)
}

#[cfg(test)]
mod tests {
    use loopx_kernel::model::SliceKind;
    use loopx_kernel::{AgentName, Timestamp};

    use super::*;

    fn started(seq: u64, slice: u64, agent: &str) -> Event {
        Event {
            seq,
            at: Timestamp(0),
            actor: "loopx".into(),
            kind: EventKind::SliceStarted {
                slice: SliceId(slice),
                agent: name(agent),
                todo: None,
                epoch: None,
                kind: SliceKind::Work,
            },
        }
    }

    fn ended(seq: u64, slice: u64) -> Event {
        Event {
            seq,
            at: Timestamp(0),
            actor: "loopx".into(),
            kind: EventKind::SliceEnded {
                slice: SliceId(slice),
                outcome: "completed".into(),
            },
        }
    }

    fn name(agent: &str) -> AgentName {
        agent.parse().expect("a name")
    }

    fn start_event(slice: u64, agent: &str) -> RunEvent {
        RunEvent::SliceStarted {
            agent: name(agent),
            slice: SliceId(slice),
            kind: "work",
            todo: None,
            log: String::new(),
        }
    }

    fn quiet(agent: &str) -> RunEvent {
        RunEvent::Quiet {
            agent: name(agent),
            reason: "nothing to do".into(),
        }
    }

    /// What each event is, in a word: `s2+` (started), `s1-` (ended), `quiet:bob`.
    fn word(event: &RunEvent) -> String {
        match event {
            RunEvent::SliceStarted { slice, .. } => format!("{slice}+"),
            RunEvent::SliceEnded(s) => format!("{}-", s.id),
            RunEvent::Quiet { agent, .. } => format!("quiet:{agent}"),
            other => format!("{other:?}"),
        }
    }

    fn release(order: &mut EventOrder, owed: &[Owed], log: &[Event]) -> Vec<String> {
        let mut shown = Vec::new();
        order.release(
            owed,
            &mut |from| Some(log.iter().filter(|e| e.seq >= from).cloned().collect()),
            &mut |e| shown.push(word(e)),
        );
        shown
    }

    #[test]
    fn a_start_waits_for_the_end_the_log_has_before_it_and_then_follows_it() {
        // ann's slice s1 ended at 11; bob began s2 at 12; bob's start came first.
        let log = [started(10, 1, "ann"), ended(11, 1), started(12, 2, "bob")];
        let mut order = EventOrder::new(10);
        order.push(&start_event(2, "bob"));
        order.push(&quiet("cid"));
        let owed = [Owed::End(SliceId(1)), Owed::End(SliceId(2))];
        assert_eq!(release(&mut order, &owed, &log), Vec::<String>::new());
        // ann's end arrives; ann owes nothing more.
        order.push(&RunEvent::SliceEnded(Box::new(summary(1))));
        let owed = [Owed::End(SliceId(2))];
        assert_eq!(
            release(&mut order, &owed, &log),
            ["s1-", "s2+", "quiet:cid"]
        );
    }

    #[test]
    fn a_start_before_a_running_slice_s_end_goes_at_once() {
        let log = [started(10, 1, "ann"), started(11, 2, "bob")];
        let mut order = EventOrder::new(10);
        order.push(&start_event(2, "bob"));
        let owed = [Owed::End(SliceId(1)), Owed::End(SliceId(2))];
        assert_eq!(release(&mut order, &owed, &log), ["s2+"]);
    }

    #[test]
    fn an_end_waits_for_a_deciding_peer_s_start_the_log_has_before_it() {
        // bob began s2 at 11 (its message not in yet); ann's s1 ended at 12.
        let log = [started(10, 1, "ann"), started(11, 2, "bob"), ended(12, 1)];
        let mut order = EventOrder::new(10);
        order.push(&RunEvent::SliceEnded(Box::new(summary(1))));
        let bob = Owed::Start {
            agent: name("bob"),
            after: None,
        };
        assert_eq!(
            release(&mut order, std::slice::from_ref(&bob), &log),
            Vec::<String>::new()
        );
        // A peer's older slice of the same agent is not what bob owes.
        let older = Owed::Start {
            agent: name("bob"),
            after: Some(SliceId(2)),
        };
        assert_eq!(release(&mut order, &[older], &log), ["s1-"]);
    }

    #[test]
    fn an_unreadable_log_shows_events_as_they_came() {
        let mut order = EventOrder::new(0);
        order.push(&start_event(2, "bob"));
        order.push(&RunEvent::SliceEnded(Box::new(summary(1))));
        let mut shown = Vec::new();
        order.release(&[Owed::End(SliceId(1))], &mut |_| None, &mut |e| {
            shown.push(word(e))
        });
        assert_eq!(shown, ["s2+", "s1-"]);
    }

    fn summary(slice: u64) -> crate::SliceSummary {
        crate::SliceSummary {
            id: SliceId(slice),
            agent: name("ann"),
            kind: "work",
            todo: None,
            epoch: None,
            outcome: loopx_adapters::Outcome::Completed,
            reason: String::new(),
            leftovers: 0,
            exit: None,
            pid: None,
            started_at: Timestamp(0),
            ended_at: Timestamp(0),
            duration_ms: 0,
            limit_secs: 0,
            tokens: 0,
            cost_usd: 0.0,
            output_bytes: 0,
            log: String::new(),
            report: "none",
            todo_state: None,
            new_todos: Vec::new(),
            gate: None,
            hold_until: None,
            goal_done: false,
            changed_files: None,
            violations: Vec::new(),
            violation_gate: None,
            landed: None,
            land_gate: None,
            land_failed: None,
            writeback: "applied",
            dropped: Vec::new(),
            disk_full: None,
        }
    }
}
