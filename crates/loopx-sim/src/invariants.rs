//! The invariants, checked after every step. A broken one halts the run on the spot: the
//! [`Halt`] unwinds out of the run loop like a crash (nothing more is written), and the report
//! names the rule, the step and the virtual time, to replay with the same seed.
//!
//! | rule | what must hold |
//! |---|---|
//! | `one_slice_per_todo` | no todo has two running slices |
//! | `one_slice_per_agent` | no agent has two running slices, whichever supervisor runs them |
//! | `fenced_writes` | no write under a stale epoch is applied: a report, a renewal or a writeback is accepted only from the claim's holder under its current epoch |
//! | `forgeries_refused` | a report that lies about its slice, agent, todo or epoch, or comes after its slice ended, is refused |
//! | `window_not_overrun` | no slice begins on an account whose window (from the simulation's own ledger of what every slice reported) is spent |
//! | `vendor_hold_kept` | no slice begins before a vendor reset loopx recorded as a hold |
//! | `hold_resumes` | a minute after a recorded reset, an agent of the account has decided again |
//! | `backoff_kept` | after temporary failures in a row, an agent waits its backoff before the next slice |
//! | `no_orphan_after_recovery` | after recovery, every slice recorded as running is one a live worker runs |
//! | `acknowledged_kept` | every report the kernel acknowledged is in the store at the end |
//! | `goal_completes` | when the scenario's agents can finish the goals, each is done by the end, or all its todos are finished and a person is asked whether it is met |
//! | `goal_not_stalled` | with several goals, while one waits (a question holds it back, or it is over its share) another with a todo an idle, unheld agent could take gets a slice within the hour (`stall.rs`) |
//! | `kernel_consistent` | `loopx_kernel::check_consistency` finds nothing (every 500 steps and at the end) |
//! | `loop_ends_cleanly` | the run loop neither panics nor stops on an error |
//! | `no_spin` | the run loop does not ask for work again and again with no time passing |
//! | `done_on_fresh_evidence` | where people change the code, an agent's slice finishes its todo as done only with a test result recorded after the last change (by the simulation's own books, not loopx's judgement) |
//! | `amendment_heard` | once a person amended the goal, every slice's prompt starts with the revision it began under, and the first slice after an amendment plans |
//! | `handbacks_asked` | with executor/reviewer pairs, no work slice begins a round of a chain `[limits] handbacks` rounds past its start (or past the round a person last answered about), by the simulation's own count (`handbacks.rs`) |
//! | `replanned_by_the_replanner` | every todo dropped or rewritten by re-planning was changed by a slice the simulation launched as the planning slice after an amendment, and was an agent's (the re-planner tries a person's too); the others that tried were refused |

use std::collections::BTreeMap;
use std::time::Duration;

use loopx_kernel::model::{SliceRecord, Todo};
use loopx_kernel::store::Applied;
use loopx_kernel::{Clock, Store, Timestamp};
use loopx_supervisor::SliceSummary;
use serde::Serialize;

use crate::agent::Forgery;
use crate::books::Books;
use crate::host::{SimHost, acknowledged};

/// A broken invariant.
#[derive(Debug, Clone, Serialize)]
pub struct Halt {
    pub rule: &'static str,
    pub detail: String,
    /// The step it broke at.
    pub step: u64,
    /// The virtual (true) time it broke at.
    pub at: Timestamp,
}

impl Halt {
    pub(crate) fn new(
        books: &Books,
        at: Timestamp,
        rule: &'static str,
        detail: impl Into<String>,
    ) -> Halt {
        Halt {
            rule,
            detail: detail.into(),
            step: books.step,
            at,
        }
    }

    /// Unwinds out of the run loop, writing nothing more on the way (like a crash).
    pub(crate) fn raise(self, supervisor: &loopx_kernel::fault::Faults) -> ! {
        supervisor.crash_with(self)
    }
}

pub(crate) fn halt(host: &SimHost, rule: &'static str, detail: String) -> Result<(), Halt> {
    Err(Halt::new(&host.books, host.clock.true_now(), rule, detail))
}

/// After every step.
pub(crate) fn after_step(host: &mut SimHost) -> Result<(), Halt> {
    let now = host.clock.true_now();
    let store = Store::open_read(&host.project).map_err(|e| {
        Halt::new(
            &host.books,
            now,
            "kernel_consistent",
            format!("the store cannot be read: {e}"),
        )
    })?;
    let running = store
        .read(|s| s.running_slices())
        .map_err(|e| Halt::new(&host.books, now, "kernel_consistent", e.to_string()))?;
    let mut per_todo: BTreeMap<_, Vec<String>> = BTreeMap::new();
    let mut per_agent: BTreeMap<_, Vec<String>> = BTreeMap::new();
    for slice in &running {
        if let Some(todo) = slice.todo {
            per_todo.entry(todo).or_default().push(slice.id.to_string());
        }
        per_agent
            .entry(slice.agent.clone())
            .or_default()
            .push(slice.id.to_string());
    }
    if let Some((agent, slices)) = per_agent.iter().find(|(_, s)| s.len() > 1) {
        return halt(
            host,
            "one_slice_per_agent",
            format!(
                "agent {agent} has {} running slices: {}",
                slices.len(),
                slices.join(", ")
            ),
        );
    }
    if let Some((todo, slices)) = per_todo.iter().find(|(_, s)| s.len() > 1) {
        return halt(
            host,
            "one_slice_per_todo",
            format!(
                "todo {todo} has {} running slices: {}",
                slices.len(),
                slices.join(", ")
            ),
        );
    }
    hold_resumes(host)?;
    if host.books.step.is_multiple_of(500) {
        consistent(host, &store)?;
    }
    Ok(())
}

/// `loopx_kernel::check_consistency`.
pub(crate) fn consistent(host: &SimHost, store: &Store) -> Result<(), Halt> {
    let problems = store
        .read(loopx_kernel::check_consistency)
        .unwrap_or_else(|e| vec![e.to_string()]);
    match problems.is_empty() {
        true => Ok(()),
        false => halt(host, "kernel_consistent", problems.join("; ")),
    }
}

/// A minute after a recorded reset, an agent of the account has decided again (on loopx's
/// clock: the hold is in its time).
fn hold_resumes(host: &mut SimHost) -> Result<(), Halt> {
    let now = host.clock.now();
    let running_accounts: Vec<String> = host
        .running_accounts()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let books = &mut host.books;
    let mut late = None;
    books.resets.retain(|r| {
        if r.disturbed || r.resumed {
            return false;
        }
        if now < r.due.plus(Duration::from_secs(60)) {
            return true;
        }
        if !running_accounts.contains(&r.account) && late.is_none() {
            late = Some(r.clone());
        }
        false
    });
    if let Some(r) = late {
        let agents = host.agents_of(&r.account);
        if agents.iter().all(|a| host.books.stopped.contains(a)) {
            return Ok(());
        }
        let last: Vec<String> = agents
            .iter()
            .map(|a| match host.books.last_decision.get(a) {
                Some((at, kind, reason)) => format!("{a} last decided {kind:?} at {at}: {reason}"),
                None => format!("{a} never decided"),
            })
            .collect();
        return halt(
            host,
            "hold_resumes",
            format!(
                "account {} was held until its reset at {}, and a minute later no agent of it had decided anything but a wait on a hold ({})",
                r.account,
                r.reset,
                last.join("; ")
            ),
        );
    }
    Ok(())
}

/// Whether a decision shows the agent no longer held: anything but a `wait` on a hold.
pub(crate) fn resumes(decision: &loopx_quota::Decision) -> bool {
    let reason = decision.reason().to_lowercase();
    decision.kind() != loopx_quota::DecisionKind::Wait
        || !(reason.contains("hold") || reason.contains("held"))
}

/// A decision that is not held was taken: it resumes the holds of its account that have reset.
pub(crate) fn note_decision(books: &mut Books, account: &str, now: Timestamp) {
    for r in &mut books.resets {
        if r.account == account && now >= r.due {
            r.resumed = true;
        }
    }
}

/// When a slice begins, with the prompt it was given: once the goal was amended, the prompt
/// starts with the revision the slice began under, and the first slice after an amendment is a
/// planning slice.
pub(crate) fn amendment_heard(
    host: &mut SimHost,
    record: &SliceRecord,
    prompt: &str,
) -> Result<(), Halt> {
    let goal = Store::open_read(&host.project)
        .and_then(|s| s.read(|s| goal_of(s, record)))
        .ok()
        .flatten();
    if let Some(goal) = goal.filter(|g| g.revision > 1) {
        let heading = format!("The goal changed in revision {}", goal.revision);
        if !prompt.starts_with(&heading) {
            let first = prompt.lines().next().unwrap_or_default().to_owned();
            return halt(
                host,
                "amendment_heard",
                format!(
                    "slice {} of {} began under revision {} of goal {}, and its prompt does not start with it: `{first}`",
                    record.id, record.agent, goal.revision, goal.id
                ),
            );
        }
    }
    // The first slice of the amended goal: another goal's slices go on meanwhile.
    if let Some((amended, after)) = host.books.replan_after
        && record.id.0 > after
        && record.goal.is_none_or(|g| g == amended)
    {
        host.books.replan_after = None;
        if record.kind != loopx_kernel::model::SliceKind::Plan {
            return halt(
                host,
                "amendment_heard",
                format!(
                    "slice {} of {} is the first after the goal was amended, and it is a {} slice, not a planning one",
                    record.id,
                    record.agent,
                    record.kind.as_str()
                ),
            );
        }
    }
    Ok(())
}

/// The goal `record` works for: the one it records, else (a slice of an older loopx) the
/// current goal.
pub(crate) fn goal_of(
    snap: &loopx_kernel::store::Snapshot<'_>,
    record: &SliceRecord,
) -> Result<Option<loopx_kernel::model::Goal>, loopx_kernel::KernelError> {
    match record.goal {
        Some(id) => snap.goal(id),
        None => snap.current_goal(),
    }
}

/// When a slice begins.
pub(crate) fn at_begin(host: &mut SimHost, record: &SliceRecord) -> Result<(), Halt> {
    let agent = record.agent.to_string();
    let Some(account) = host.account_of(&agent).map(str::to_owned) else {
        return Ok(());
    };
    let wall = host.clock.now();
    // The window, by the ledger. A begin within five minutes of the window's end is not judged:
    // loopx stamps a charge when its writeback commits, the ledger when the agent ended.
    if let Some((limit, state)) = host.books.window(&account)
        && let Some(until) = state.exhausted_until(&limit, wall.0)
        && until > wall.0 + 5 * 60_000
    {
        let rolled = state.rolled(&limit, wall.0);
        return halt(
            host,
            "window_not_overrun",
            format!(
                "slice {} of {agent} began on account {account} with its window spent: {} of {} tokens used since {}, until {}",
                record.id,
                rolled.tokens,
                limit.tokens.unwrap_or(0),
                Timestamp(rolled.start),
                Timestamp(until)
            ),
        );
    }
    // On loopx's own clock: the hold it recorded lasts until the reset. A step of the clock
    // since (which may shorten a hold, by design) marks the reset disturbed.
    if let Some(r) = host
        .books
        .resets
        .iter()
        .find(|r| r.account == account && !r.disturbed)
        && wall < r.reset
    {
        return halt(
            host,
            "vendor_hold_kept",
            format!(
                "slice {} of {agent} began on account {account} before the vendor's reset at {} that loopx recorded as a hold",
                record.id, r.reset
            ),
        );
    }
    if record.todo.is_none() && host.plan.scenario.experiments.is_some() {
        quiet_while_waiting(host, record)?;
    }
    if let Some(streak) = host.books.streaks.get(&agent).copied() {
        let base =
            Duration::from_secs(30) * 2u32.saturating_pow(streak.count.saturating_sub(1).min(10));
        let least = base.min(Duration::from_secs(600)).mul_f64(0.8);
        let waited = host.clock.true_now().since(streak.ended);
        if waited + Duration::from_secs(1) < least {
            return halt(
                host,
                "backoff_kept",
                format!(
                    "slice {} of {agent} began {}s after its {} temporary failure(s) in a row; the backoff is at least {}s",
                    record.id,
                    waited.as_secs(),
                    streak.count,
                    least.as_secs()
                ),
            );
        }
    }
    Ok(())
}

/// No planning slice while every open todo is a monitor or waits on one (issue 28): the work
/// waits on the world, and the agents are quiet.
fn quiet_while_waiting(host: &SimHost, record: &SliceRecord) -> Result<(), Halt> {
    let open = Store::open_read(&host.project)
        .and_then(|s| s.read(|s| s.active_todos()))
        .unwrap_or_default();
    let monitors = open.iter().filter(|t| t.is_monitor()).count();
    let waiting =
        |t: &loopx_kernel::model::Todo| t.after.iter().any(|dep| open.iter().any(|o| o.id == *dep));
    if monitors > 0 && open.iter().all(|t| t.is_monitor() || waiting(t)) {
        return halt(
            host,
            "quiet_while_waiting",
            format!(
                "planning slice {} of {} began while all {} open todo(s) waited on {monitors} monitor(s)",
                record.id,
                record.agent,
                open.len()
            ),
        );
    }
    Ok(())
}

/// The claim `record` was renewed: it must still be the slice's own.
pub(crate) fn renewal_fenced(host: &SimHost, record: &SliceRecord) -> Result<(), Halt> {
    let todo = crate::host::read_todo(&host.project, record.todo);
    let (Some(todo), Some(epoch)) = (todo, record.epoch) else {
        return Ok(());
    };
    if todo.state.is_final() {
        return Ok(());
    }
    let holder_ok = todo
        .lease
        .as_ref()
        .is_some_and(|l| l.agent == record.agent && l.epoch == todo.epoch);
    if todo.epoch != epoch || !holder_ok {
        return halt(
            host,
            "fenced_writes",
            format!(
                "a renewal of {} by {} under epoch {epoch} was applied, but the todo's epoch is {} (held by {})",
                todo.id,
                record.agent,
                todo.epoch,
                todo.lease.as_ref().map_or("nobody".to_owned(), |l| format!(
                    "{} under {}",
                    l.agent, l.epoch
                ))
            ),
        );
    }
    Ok(())
}

/// Whether `agent` held `todo` under `epoch` just before a write.
fn held_under(todo: &Todo, agent: &loopx_kernel::AgentName, epoch: u64) -> bool {
    let live = todo
        .lease
        .as_ref()
        .is_some_and(|l| &l.agent == agent && l.epoch == epoch && todo.epoch == epoch);
    let finished = todo
        .finished_under
        .as_ref()
        .is_some_and(|l| &l.agent == agent && l.epoch == epoch);
    live || finished
}

/// The kernel acknowledged an agent's report.
pub(crate) fn report_accepted(
    host: &mut SimHost,
    who: &crate::host::Reporter,
    forged: Option<Forgery>,
    before: Option<&Todo>,
    applied: &Applied,
) -> Result<(), Halt> {
    if let Some(lie) = forged {
        return halt(
            host,
            "forgeries_refused",
            format!(
                "a forged report ({lie:?}) from slice {} as {} was accepted: {applied:?}",
                who.slice, who.agent
            ),
        );
    }
    if let (Some((_, epoch)), Some(todo)) = (who.claim, before)
        && !held_under(todo, &who.agent, epoch)
    {
        return halt(
            host,
            "fenced_writes",
            format!(
                "a report by {} about {} under epoch {epoch} was applied, but the todo's epoch was {}",
                who.agent, todo.id, todo.epoch
            ),
        );
    }
    if let Some(ack) = acknowledged(applied) {
        host.books.acks.push(ack);
    }
    Ok(())
}

/// Where people change the code (`[people] edit_per_day`, with `[evidence] done_needs =
/// ["test"]`): a slice that finished its todo as done had a test result about the code as it
/// is, one recorded after the last commit a person made. The simulation's agents change no
/// files, so the books' watermark (the newest evidence when the last edit was committed) is
/// the whole truth; loopx's own judgement (`freshness.rs`) is not consulted.
pub(crate) fn done_on_fresh_evidence(
    host: &SimHost,
    record: &SliceRecord,
    summary: &SliceSummary,
) -> Result<(), Halt> {
    if host.plan.scenario.people.edit_per_day <= 0.0 || summary.todo_state != Some("done") {
        return Ok(());
    }
    let Some(todo) = record.todo else {
        return Ok(());
    };
    let after = host.books.evidence_before_edit;
    let fresh = Store::open_read(&host.project)
        .and_then(|s| {
            s.read(|s| {
                s.evidence_newest(1, |e| {
                    e.todo == Some(todo)
                        && e.kind == loopx_kernel::model::EvidenceKind::Test
                        && e.id.0 > after
                })
            })
        })
        .map(|found| !found.is_empty());
    match fresh {
        Ok(true) => Ok(()),
        Ok(false) => halt(
            host,
            "done_on_fresh_evidence",
            format!(
                "slice {} finished {todo} as done with no test result recorded since the last change to the code (the newest evidence then was e{after})",
                record.id
            ),
        ),
        Err(e) => halt(host, "kernel_consistent", e.to_string()),
    }
}

/// A slice's writeback applied its todo's change only under the slice's own claim.
pub(crate) fn writeback_fenced(
    host: &SimHost,
    record: &SliceRecord,
    before: Option<&Todo>,
    summary: &SliceSummary,
) -> Result<(), Halt> {
    let (Some(todo), Some(epoch)) = (before, record.epoch) else {
        return Ok(());
    };
    let changed = matches!(summary.todo_state, Some("done" | "released"));
    if changed && !held_under(todo, &record.agent, epoch) {
        return halt(
            host,
            "fenced_writes",
            format!(
                "slice {}'s writeback marked {} {} under epoch {epoch}, but the todo's epoch was {}",
                record.id,
                todo.id,
                summary.todo_state.unwrap_or_default(),
                todo.epoch
            ),
        );
    }
    Ok(())
}

/// After recovery, every running slice is one a live worker runs.
pub(crate) fn after_recovery(host: &SimHost) -> Result<(), Halt> {
    let running = Store::open_read(&host.project)
        .and_then(|s| s.read(|s| s.running_slices()))
        .unwrap_or_default();
    let live = host.running_ids();
    if let Some(orphan) = running.iter().find(|s| !live.contains(&s.id.0)) {
        return halt(
            host,
            "no_orphan_after_recovery",
            format!(
                "after recovery slice {} of {} is still recorded as running, and no live worker runs it",
                orphan.id, orphan.agent
            ),
        );
    }
    Ok(())
}

/// At the end of the run.
pub(crate) fn at_end(host: &SimHost, expect_done: bool) -> Result<(), Halt> {
    let store = Store::open_read(&host.project).map_err(|e| {
        Halt::new(
            &host.books,
            host.clock.true_now(),
            "kernel_consistent",
            e.to_string(),
        )
    })?;
    consistent(host, &store)?;
    replanned_by_the_replanner(host, &store)?;
    for &(kind, id) in &host.books.acks {
        let found = store
            .read(|s| {
                Ok(match kind {
                    "evidence" => s.evidence(loopx_kernel::EvidenceId(id))?.is_some(),
                    "handoff" => s.handoff(loopx_kernel::HandoffId(id))?.is_some(),
                    "gate" => s.gate(loopx_kernel::GateId(id))?.is_some(),
                    _ => s
                        .todo(loopx_kernel::TodoId(id))?
                        .is_some_and(|t| t.state == loopx_kernel::model::TodoState::Done),
                })
            })
            .unwrap_or(false);
        if !found {
            return halt(
                host,
                "acknowledged_kept",
                format!("the kernel acknowledged {kind} {id}, and the store no longer has it"),
            );
        }
    }
    let running = store.read(|s| s.running_slices()).unwrap_or_default();
    if let Some(slice) = running.first() {
        return halt(
            host,
            "no_orphan_after_recovery",
            format!(
                "slice {} is still recorded as running after the run ended",
                slice.id
            ),
        );
    }
    if expect_done {
        goal_completes(host, &store)?;
    }
    Ok(())
}

/// Every goal is done, or all its todos are finished and a person is asked whether it is met:
/// only a person ends a goal, and the simulated people answer minutes to hours later.
fn goal_completes(host: &SimHost, store: &Store) -> Result<(), Halt> {
    use loopx_kernel::model::{GateKind, GateState, GoalStatus};
    let goals = store.read(|s| s.goals()).unwrap_or_default();
    let todos = store.read(|s| s.todos()).unwrap_or_default();
    let gates = store.read(|s| s.gates()).unwrap_or_default();
    for goal in &goals {
        let open = todos
            .iter()
            .filter(|t| t.goal == goal.id && !t.state.is_final())
            .count();
        let asked = gates.iter().any(|g| {
            g.state == GateState::Open
                && matches!(g.kind, GateKind::GoalMet { goal: id } if id == goal.id)
        });
        let done = (goal.status != GoalStatus::Active || asked) && open == 0;
        if !done {
            let mine = todos.iter().filter(|t| t.goal == goal.id).count();
            return halt(
                host,
                "goal_completes",
                format!(
                    "after {:.1} simulated hours goal {} is not done: {open} of its {mine} todos are not finished",
                    host.clock.monotonic().as_secs_f64() / 3600.0,
                    goal.id,
                ),
            );
        }
    }
    Ok(())
}

/// At the end: every `todo_replanned` event names a slice the simulation launched as the one
/// that re-plans (while loopx's store said re-planning was due, a planning slice) and a todo
/// an agent made; a stray slice's `drop_todos` and `rewrite_todos` left nothing, nor did the
/// re-planner's of a person's todo.
fn replanned_by_the_replanner(host: &SimHost, store: &Store) -> Result<(), Halt> {
    for (slice, todo) in replanned(store) {
        if !host.books.replanners.contains(&slice) {
            return halt(
                host,
                "replanned_by_the_replanner",
                format!(
                    "slice {slice} re-planned t{todo}, and it was not the planning slice after an amendment"
                ),
            );
        }
        let made_by = store
            .read(|s| s.todo(loopx_kernel::TodoId(todo)))
            .ok()
            .flatten()
            .map(|t| t.created_by);
        if let Some(person) = made_by.filter(|by| loopx_vocab::Actor::of(by).is_person()) {
            return halt(
                host,
                "replanned_by_the_replanner",
                format!("slice {slice} re-planned t{todo}, which {person} made"),
            );
        }
    }
    Ok(())
}

/// Every todo re-planning dropped or rewrote: (slice, todo).
pub(crate) fn replanned(store: &Store) -> Vec<(u64, u64)> {
    let events = store
        .read(|s| s.events_from(0, usize::MAX))
        .unwrap_or_default();
    events
        .iter()
        .filter_map(|e| match &e.kind {
            loopx_kernel::model::EventKind::TodoReplanned { slice, todo, .. } => {
                Some((slice.0, todo.0))
            }
            _ => None,
        })
        .collect()
}
