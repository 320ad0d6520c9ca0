//! What a finished slice writes to the kernel, as one batch of operations
//! (`docs/design/run-loop.md`, "A slice's life").
//!
//! Pure: the facts of the slice in, the [`Op`]s out. They are applied as one batch ([`apply`],
//! which also builds the slice's [`SliceSummary`]), so they all land or none does, and the
//! todo's release (or finish) carries the claim's epoch: a slice whose claim moved on writes
//! nothing under it.
//!
//! The agent's report is untrusted input, and one bad item in it must never cost the slice its
//! own record. Every item (a piece of evidence, a proposed todo, the question, a planning
//! slice's "goal met") is a [`Part`] marked as the agent's: texts are clipped to the kernel's
//! bounds ([`loopx_kernel::limits`]), the kernel's own checks (`NewTodo::check`, …) drop what
//! it would refuse, and each dropped item becomes a `note` evidence saying what and why. An
//! item the kernel still refuses when the batch is applied (the goal ended meanwhile, say) is
//! dropped the same way and the batch tried again. What loopx itself writes — the slice's end
//! and evidence, the handoff, the scope findings, the quota, the release or finish — is always
//! valid. Evidence kinds an agent may not claim (`slice`, `quota`, `violation`) are recorded
//! as notes.

use loopx_adapters::{Classification, Outcome, Report, ReportTodo};
use loopx_kernel::limits::{self, bounded, clip};
use loopx_kernel::model::SliceRecord;
use loopx_kernel::model::{
    Blocks, EvidenceKind, GateKind, GoalStatus, HoldSource, SliceKind, TodoState,
};
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::ReleaseClaim;
use loopx_kernel::store::{NewEvidence, NewGate, NewHandoff, NewTodo, Op, QuotaRequest, SliceEnd};
use loopx_kernel::store::{NewHold, SetGoalStatus};
use loopx_kernel::time::short_duration;
use loopx_kernel::{AgentName, Invalid, Timestamp};

mod apply;
pub mod findings;
mod landing;
pub mod questions;
mod summary;
use crate::judge::{AgentEnd, Judged};
pub use apply::apply;
use loopx_git::worktree::{Landing, Prepared};
pub use summary::{LOOK_BACK, SliceSummary, limits_in_a_row, reports_work_evidence};

/// How long an account is held after a usage limit that named no reset time; it doubles with
/// each such limit in a row, up to [`MAX_UNKNOWN_RESET_BACKOFF`].
const UNKNOWN_RESET_BACKOFF: std::time::Duration = std::time::Duration::from_secs(5 * 60);
/// The longest backoff for limits without a reset time: the vendors' shortest window.
const MAX_UNKNOWN_RESET_BACKOFF: std::time::Duration = std::time::Duration::from_secs(5 * 3600);
/// The longest a vendor's reset time can hold an account: the longest vendor window (seven
/// days), and a day's margin.
const MAX_VENDOR_HOLD: std::time::Duration = std::time::Duration::from_secs(8 * 86_400);
/// How much of the agent's final message the evidence and handoff carry when it gave no report.
const FINAL_WORDS: usize = 2_000;
/// How each of a slice's [`Writeback::dropped`] items begins (the `note` evidence says the
/// same): what follows is the item, and why the kernel refused it.
pub const DROPPED: &str = "dropped from the agent's report: ";
/// At most this many proposed todos and evidence items are taken from one report.
pub const REPORT_ITEMS: usize = 32;

/// The wall-clock interval a slice that ended at `ended_at` ran for, its length measured on
/// the monotonic clock (`elapsed`): a step of the wall clock during the slice is not counted.
pub fn ran_between(ended_at: Timestamp, elapsed: std::time::Duration) -> (Timestamp, Timestamp) {
    let millis = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    (Timestamp(ended_at.0.saturating_sub(millis)), ended_at)
}

/// The facts of a finished slice: what its writeback reads, borrowed from the slice as its
/// begin recorded it, how its agent ended, and its judgement.
#[derive(Debug, Clone)]
pub struct Finished<'a> {
    /// The slice as begun: its id, agent, todo and epoch, kind, start, wall-time limit and log.
    pub record: &'a SliceRecord,
    /// How its agent ended: its stream (final message, session), process, pid, containment,
    /// end, and the changes it left.
    pub end: &'a AgentEnd,
    /// The final outcome, its reason, the exit and the classification.
    pub judged: &'a Judged,
    /// What a person does about the agent's CLI, for the gates a failed login or spawn opens.
    pub cli: CliFixes<'a>,
    /// Usage limits without a reset time this agent hit in a row before this slice: each one
    /// doubles the backoff.
    pub limited_before: u32,
    /// SHA-256 of the slice's log once loopx finished writing (and redacting) it.
    pub log_sha256: String,
    /// What the writeback hides besides the store's own redaction (`None`: the store's).
    pub redactor: Option<&'a loopx_kernel::Redactor>,
    /// What the slice spent, as the agent's quota is charged: its tokens, cost and the time
    /// it ran.
    pub quota: QuotaRequest,
    /// The agent reported its todo done through the report channel, and the kernel left
    /// finishing it to the landing (a worktree goal).
    pub reported_done: bool,
    /// The project lets its agents end goals (`[goal] close = "agents"`); else an agent's
    /// "the goal is met" asks a person.
    pub agents_close_goals: bool,
    /// A worktree goal's todo slice: its worktree as the slice found it (the todo's branch
    /// at its checkpoint).
    pub tree: Option<&'a Prepared>,
    /// The todo's landing on the goal's branch. `None`: not tried (the agent did not report
    /// done, the slice's commit could not be made, the claim moved on); then a worktree
    /// goal's todo is not done.
    pub landing: Option<Landing>,
}

impl Finished<'_> {
    /// A worktree goal's todo slice: its todo's branch before the slice and after it (the
    /// checkpoint again when the slice's commit could not be made).
    pub fn branch(&self) -> Option<(&str, &str)> {
        let checkpoint = &self.tree?.checkpoint;
        let commit = self.end.commit.as_ref();
        Some((checkpoint, commit.map_or(checkpoint, |c| &c.head)))
    }

    /// ` on t2` for a todo's slice, else nothing.
    fn on_todo(&self) -> String {
        self.record
            .todo
            .map(|t| format!(" on {t}"))
            .unwrap_or_default()
    }

    /// The slice's log, relative to the project root.
    pub fn log(&self) -> &str {
        self.record.log.as_deref().unwrap_or_default()
    }
}

/// What the adapter tells a person to do about its CLI (`questions.rs` names it in a gate).
#[derive(Debug, Clone, Copy)]
pub struct CliFixes<'a> {
    /// The adapter's name.
    pub adapter: &'a str,
    /// How a person logs the CLI in (the adapter's `login`).
    pub login: Option<&'a str>,
    /// How a person installs it (the adapter's `install`).
    pub install: Option<&'a str>,
}

/// One operation of the batch.
#[derive(Debug, Clone)]
pub struct Part {
    pub op: Op,
    /// Set for what the agent reported: dropped (and noted) if the kernel refuses it.
    pub item: Option<Item>,
}

/// Something the agent reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Evidence,
    Todo,
    /// The agent's question, as a gate.
    Question,
    /// A planning slice declared the goal met.
    GoalDone,
    /// The re-planning slice dropped or rewrote an open todo.
    Replan,
}

/// The batch, and what it will do (for the caller's output).
#[derive(Debug, Clone)]
pub struct Writeback {
    pub parts: Vec<Part>,
    /// The todo is finished as done (else released).
    pub todo_done: bool,
    /// `done`, `progress`, `blocked`, `malformed` or `none`.
    pub report: &'static str,
    pub hold_until: Option<Timestamp>,
    /// Files the slice changed that the agent was not allowed to change.
    pub violations: Vec<String>,
    /// What of the report was dropped, and why.
    pub dropped: Vec<String>,
}

impl Writeback {
    pub fn ops(&self) -> Vec<Op> {
        self.parts.iter().map(|p| p.op.clone()).collect()
    }

    /// Drops the agent's item at `index`, which the kernel refused for `why`, and notes it.
    pub fn drop_item(&mut self, f: &Finished<'_>, index: usize, why: &str) {
        let part = self.parts.remove(index);
        let what = describe(&part.op);
        self.note_dropped(f, &what, why);
    }

    fn note_dropped(&mut self, f: &Finished<'_>, what: &str, why: &str) {
        let summary = format!("{DROPPED}{what}: {why}");
        self.dropped.push(clip(&summary, limits::SUMMARY));
        let note = Op::EvidenceAdd(evidence(f, EvidenceKind::Note, &summary, why));
        // Before the quota and the release, beside the slice's other evidence.
        let at = self
            .parts
            .iter()
            .position(|p| matches!(p.op, Op::QuotaCharge(_)))
            .unwrap_or(self.parts.len());
        self.parts.insert(
            at,
            Part {
                op: note,
                item: None,
            },
        );
    }
}

/// What an item is, for the note that says it was dropped.
fn describe(op: &Op) -> String {
    match op {
        Op::TodoAdd(t) => format!("the proposed todo `{}`", clip(&t.title, 80)),
        Op::EvidenceAdd(e) => format!("the evidence `{}`", clip(&e.summary, 80)),
        Op::GateAsk(g) => format!("the question `{}`", clip(&g.question, 80)),
        Op::GoalSetStatus(_) => "marking the goal done".to_owned(),
        Op::TodoReplan(r) => match r.change {
            loopx_kernel::store::Replanning::Drop => format!("dropping {}", r.todo),
            loopx_kernel::store::Replanning::Rewrite { .. } => format!("rewriting {}", r.todo),
        },
        other => format!("{other:?}"),
    }
}

/// The slice's end alone.
pub fn slice_end(f: &Finished<'_>) -> Op {
    Op::SliceEnd {
        slice: f.record.id,
        end: SliceEnd {
            outcome: f.judged.outcome,
            leftovers: f.judged.leftovers,
            exit: f.judged.exit.clone(),
            tokens: f.quota.tokens,
            cost_usd: f.quota.cost_usd,
            output_bytes: f.end.bytes,
            log_sha256: f.log_sha256.clone(),
        },
    }
}

/// What is written when the claim moved on: the slice's end and loopx's own evidence of it
/// (not under the claim), and the usage and any vendor hold, which were real whoever holds
/// the todo now. Nothing of the agent's report.
pub fn lost_claim(f: &Finished<'_>) -> Vec<Op> {
    let mut slice = slice_evidence(f, None);
    slice.epoch = None;
    let mut ops = vec![
        slice_end(f),
        Op::EvidenceAdd(slice),
        Op::QuotaCharge(f.quota.clone()),
    ];
    ops.extend(hold(f).map(|(op, _)| op));
    ops
}

/// Every operation of the writeback, in order.
///
/// `done_by_agent`: the agent already marked the slice's todo done under the slice's claim
/// (`loopx report done`), so the batch neither releases nor finishes it again.
pub fn writeback(f: &Finished<'_>, done_by_agent: bool) -> Writeback {
    let classification = f.judged.classification.as_ref();
    let report = classification.and_then(|c| c.report.as_ref());
    let mut wb = Writeback {
        parts: vec![
            core(slice_end(f)),
            core(Op::EvidenceAdd(slice_evidence(f, report))),
        ],
        todo_done: false,
        report: "none",
        hold_until: None,
        violations: Vec::new(),
        dropped: Vec::new(),
    };
    let question = asked(f, wb.take_report(f, report));
    wb.parts
        .push(core(Op::HandoffAdd(handoff(f, report, question.as_ref()))));
    wb.parts.extend(findings::ops(f).into_iter().map(core));
    if let Some(Ok(r)) = report {
        wb.take_proposals(f, r);
    }
    if let Some((text, options)) = question {
        wb.add_item(f, Op::GateAsk(gate(f, text, options)), Item::Question);
    }
    if let Some(proposal) = proposed_goal(f, report) {
        wb.add_item(f, Op::GateAsk(proposal), Item::Question);
    }
    wb.parts.push(core(Op::QuotaCharge(f.quota.clone())));
    if let Some((op, until)) = hold(f) {
        wb.parts.push(core(op));
        wb.hold_until = Some(until);
    }
    wb.parts.extend(outcome_gates(f).into_iter().map(core));
    let violations = f.end.changes.violations();
    wb.violations = violations.into_iter().map(str::to_owned).collect();
    // A todo whose changes a person may roll back is not done yet: the violation's gate holds
    // it until a person answers (`keep` finishes it as reported). Done as the report says
    // (also through `loopx report done`, which only notes it), or as `done_when` recognised it.
    let claimed_done = findings::claimed_done(f);
    let landed = wb.take_landing(f, claimed_done);
    let reported_done = claimed_done && wb.violations.is_empty() && landed;
    let todo_done = done_by_agent || reported_done;
    // A planning slice that reports `done` and proposes nothing says the goal is met: its
    // prompt asks for exactly that when it is.
    let proposed = wb.parts.iter().any(|p| p.item == Some(Item::Todo));
    if f.record.kind == SliceKind::Plan && reported_done && !proposed {
        wb.parts.push(goal_met(f));
    }
    if !done_by_agent {
        wb.parts.extend(todo_end(f, todo_done).map(core));
    }
    wb.todo_done = todo_done && f.record.todo.is_some();
    wb
}

/// The questions a failed start asks: log in again, or fix the agent's command.
fn outcome_gates(f: &Finished<'_>) -> Vec<Op> {
    match f.judged.outcome {
        Outcome::AuthFailed => questions::login_gate(f),
        Outcome::SpawnFailed => vec![questions::spawn_gate(f)],
        _ => Vec::new(),
    }
}

/// The goal is met: a planning slice reported `done` and proposed nothing.
fn goal_met(f: &Finished<'_>) -> Part {
    Part {
        op: Op::GoalSetStatus(SetGoalStatus {
            goal: None,
            to: GoalStatus::Done,
            agents_close: f.agents_close_goals,
        }),
        item: Some(Item::GoalDone),
    }
}

/// The question the slice asks: its report's, or else the one the agent asked (the outcome
/// `Asked`), cut to a question's bound.
fn asked(
    f: &Finished<'_>,
    reported: Option<(String, Vec<String>)>,
) -> Option<(String, Vec<String>)> {
    let question = reported.or_else(|| match f.judged.classification.as_ref() {
        Some(Classification {
            question: Some(q), ..
        }) if f.judged.outcome == Outcome::Asked => Some((q.text.clone(), q.options.clone())),
        _ => None,
    });
    question.map(|(text, options)| (bounded(text.trim(), limits::QUESTION), options))
}

/// The gate that asks a person about the goal the report proposes, if it proposes one.
fn proposed_goal(
    f: &Finished<'_>,
    report: Option<&Result<Report, loopx_adapters::MalformedReport>>,
) -> Option<NewGate> {
    let Some(Ok(Report {
        propose_goal: Some(p),
        ..
    })) = report
    else {
        return None;
    };
    let asked = format!("proposed by `{}` in slice {}", f.record.agent, f.record.id);
    Some(loopx_kernel::report::goal_proposal(
        p.objective.clone(),
        p.scope.clone(),
        p.why.clone(),
        &asked,
    ))
}

/// How the slice's claim on its todo ends: the todo finished, or released for the next slice.
fn todo_end(f: &Finished<'_>, todo_done: bool) -> Option<Op> {
    let (Some(todo), Some(epoch)) = (f.record.todo, f.record.epoch) else {
        return None;
    };
    Some(if todo_done {
        Op::TodoFinish(FinishTodo {
            todo,
            to: TodoState::Done,
            agent: Some(f.record.agent.clone()),
            epoch: Some(epoch),
        })
    } else {
        Op::TodoRelease(ReleaseClaim {
            todo,
            agent: f.record.agent.clone(),
            epoch,
        })
    })
}

impl Writeback {
    /// A worktree goal's todo is done only once its branch landed: the landing's operations,
    /// and whether it landed (a todo without a worktree has nothing to land).
    fn take_landing(&mut self, f: &Finished<'_>, claimed_done: bool) -> bool {
        let Some(tree) = f.tree else {
            return true;
        };
        let (ops, landed) =
            landing::landing_ops(f, tree, claimed_done && self.violations.is_empty());
        self.parts.extend(ops.into_iter().map(core));
        landed
    }

    /// The report's own evidence and its status, or a note that it was malformed; the question
    /// it asks, if any.
    fn take_report(
        &mut self,
        f: &Finished<'_>,
        report: Option<&Result<Report, loopx_adapters::MalformedReport>>,
    ) -> Option<(String, Vec<String>)> {
        let mut question = None;
        match report {
            Some(Ok(r)) => {
                for e in r.evidence.iter().take(REPORT_ITEMS) {
                    let kind = kind_of(e.kind.as_deref());
                    let mut new = evidence(f, kind, &e.summary, "");
                    if kind.speaks_about_work() {
                        new.work = f.end.changes.work.clone();
                    }
                    self.add_item(f, Op::EvidenceAdd(new), Item::Evidence);
                }
                // Each measurement on its own: one that does not read is noted and dropped.
                let (metrics, unread) = r.measurements();
                for (item, why) in unread {
                    self.note_dropped(f, &format!("the metric {item}"), &why);
                }
                if metrics.len() > REPORT_ITEMS {
                    let what = format!(
                        "{} metrics past the first {REPORT_ITEMS}",
                        metrics.len() - REPORT_ITEMS
                    );
                    self.note_dropped(f, &what, "a report records at most that many");
                }
                for metric in metrics.into_iter().take(REPORT_ITEMS) {
                    let mut new = evidence(f, EvidenceKind::Metric, &metric.to_string(), "");
                    new.metric = Some(metric);
                    self.add_item(f, Op::EvidenceAdd(new), Item::Evidence);
                }
                question = r
                    .question
                    .as_ref()
                    .map(|q| (q.text.clone(), q.options.clone()));
                self.report = match r.status {
                    loopx_adapters::ReportStatus::Done => "done",
                    loopx_adapters::ReportStatus::Progress => "progress",
                    loopx_adapters::ReportStatus::Blocked => "blocked",
                };
            }
            Some(Err(bad)) => {
                self.parts.push(core(Op::EvidenceAdd(evidence(
                    f,
                    EvidenceKind::Note,
                    &format!("the agent's loopx-report block is malformed: {}", bad.error),
                    &bad.raw,
                ))));
                self.report = "malformed";
            }
            None => {}
        }
        question
    }

    /// The todos the report proposes (one continuation held at most), and a re-planning
    /// slice's changes; what the kernel would refuse is noted as dropped.
    fn take_proposals(&mut self, f: &Finished<'_>, r: &Report) {
        // The todos in an item's `then` count against the report's items like any other.
        let mut left = REPORT_ITEMS;
        let mut held = false;
        for todo in &r.next_todos {
            let Some(rest) = left.checked_sub(1 + todo.then.len()) else {
                break;
            };
            left = rest;
            // A monitor or a dependency the kernel cannot take is dropped and noted, as any
            // item it refuses (with the todos after it).
            match proposed(todo, true, &f.record.agent) {
                // One continuation per slice: an agent cannot hold a stack of todos from
                // its peers; the rest are added open.
                Ok(mut new) => {
                    if held && new.held_for.take().is_some() {
                        self.note_dropped(
                            f,
                            &format!("holding `{}` for this agent", todo.title.trim()),
                            "a slice holds one continuation; this todo is open to any agent",
                        );
                    }
                    held |= new.held_for.is_some();
                    self.add_item(f, Op::TodoAdd(new), Item::Todo)
                }
                Err(why) => self.note_dropped(f, &format!("todo `{}`", todo.title.trim()), &why),
            }
        }
        // What the planning slice that re-plans an amended goal drops and rewrites; the kernel
        // refuses them from any other slice, and each refusal is noted like any dropped item.
        for (what, op) in crate::amendment::replan_ops(f.record.id, r)
            .into_iter()
            .take(REPORT_ITEMS)
        {
            match op {
                Ok(op) => self.add_item(f, op, Item::Replan),
                Err(why) => self.note_dropped(f, &what, &why),
            }
        }
    }

    /// Adds an item of the agent's, or notes why the kernel would refuse it.
    fn add_item(&mut self, f: &Finished<'_>, op: Op, item: Item) {
        let checked: Result<(), Invalid> = match &op {
            Op::TodoAdd(new) => new.check(),
            Op::EvidenceAdd(new) => new.check(),
            Op::GateAsk(new) => new.check(),
            _ => Ok(()),
        };
        match checked {
            Ok(()) => self.parts.push(Part {
                op,
                item: Some(item),
            }),
            Err(why) => {
                let what = describe(&op);
                self.note_dropped(f, &what, &why.to_string());
            }
        }
    }
}

/// A todo the agent proposes, as the kernel adds it: its monitor and dependencies read, and
/// (with `then_allowed`) the todos that follow it.
/// A continuation (`same_agent`) is held for `agent`, the one proposing it.
fn proposed(todo: &ReportTodo, then_allowed: bool, agent: &AgentName) -> Result<NewTodo, String> {
    let monitor = todo
        .monitor_words()
        .map(|words| loopx_kernel::model::MonitorSpec::from_words(&words, None))
        .transpose()
        .map_err(|e| e.to_string())?;
    let after = todo
        .after
        .iter()
        .map(|id| id.trim().parse::<loopx_kernel::TodoId>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    if !then_allowed && !todo.then.is_empty() {
        return Err("a todo in `then` cannot have a `then` of its own".to_owned());
    }
    let then = todo
        .then
        .iter()
        .map(|next| proposed(next, false, agent))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NewTodo {
        goal: None,
        title: bounded(todo.title.trim(), limits::TITLE),
        detail: bounded(todo.detail.as_deref().unwrap_or("").trim(), limits::DETAIL),
        priority: 0,
        needs: vec![],
        after,
        role: todo
            .role
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned),
        monitor,
        not_before: None,
        then,
        // A `then` todo waits on a monitor for longer than a hold lasts: it is not held.
        held_for: (then_allowed && todo.same_agent).then(|| agent.clone()),
    })
}

fn core(op: Op) -> Part {
    Part { op, item: None }
}

/// The hold a usage limit puts on the account, and until when.
fn hold(f: &Finished<'_>) -> Option<(Op, Timestamp)> {
    let reported = resets_at(f);
    let (agent, slice) = (&f.record.agent, f.record.id);
    // A reset already past by this machine's clock while the vendor still refuses: the clocks
    // disagree (this one runs ahead), or the vendor is late. A hold until then would hold
    // nothing, and every slice would meet the limit again at once (found by `loopx sim` after a
    // clock step: a slice every two minutes until the vendor's reset). Back off as for a limit
    // without a reset time, longer each time in a row.
    let reset = reported.filter(|at| *at > f.end.at);
    // A limit without a reset time (Claude under an API key reports none for a 429) still holds
    // the account, for a fixed backoff: retrying at once would only hit the limit again. The
    // first slice after the hold is a probe (the decision marks it), which re-holds if needed.
    let backoff = UNKNOWN_RESET_BACKOFF
        .saturating_mul(1 << f.limited_before.min(16))
        .min(MAX_UNKNOWN_RESET_BACKOFF);
    let until = reset
        .or_else(|| (f.judged.outcome == Outcome::UsageLimited).then(|| f.end.at.plus(backoff)))?;
    let reason = match (reset, reported) {
        (Some(_), _) => format!("usage limit reported by `{agent}` in slice {slice}"),
        (None, Some(passed)) => format!(
            "usage limit reported by `{}` in slice {} with a reset ({passed}) already past by this machine's clock ({} in a row): backing off {}",
            agent,
            slice,
            f.limited_before + 1,
            short_duration(backoff)
        ),
        (None, None) => format!(
            "usage limit reported by `{}` in slice {} with no reset time ({} in a row): backing off {}",
            agent,
            slice,
            f.limited_before + 1,
            short_duration(backoff)
        ),
    };
    let op = Op::QuotaHold(NewHold {
        key: f.quota.account.clone(),
        until: Some(until),
        reason,
        source: HoldSource::Vendor,
    });
    Some((op, until))
}

/// The slice's own evidence: outcome, reason, usage and duration.
fn slice_evidence(
    f: &Finished<'_>,
    report: Option<&Result<Report, loopx_adapters::MalformedReport>>,
) -> NewEvidence {
    let on = f.on_todo();
    let took = short_duration(f.end.elapsed);
    let summary = format!(
        "{} slice {}{on}: {} in {took} ({} tokens, ${:.4})",
        f.record.kind.as_str(),
        f.record.id,
        f.judged.outcome,
        f.quota.tokens,
        f.quota.cost_usd
    );
    let judged = f.judged;
    let mut detail = format!("outcome: {}\nreason: {}\n", judged.outcome, judged.reason);
    if let Some(exit) = &f.judged.exit {
        detail.push_str(&format!("exit: {exit}\n"));
    }
    if let Some(session) = f.end.summary.session_id.as_deref() {
        detail.push_str(&format!("session: {session}\n"));
    }
    detail.push_str(&format!(
        "duration_ms: {}\noutput_bytes: {}\nlog: {}\n",
        f.end.elapsed.as_millis(),
        f.end.bytes,
        f.log()
    ));
    detail.push_str(&format!("containment: {}\n", f.end.containment));
    detail.push_str(&findings::changes_line(&f.end.changes));
    if f.judged.leftovers > 0 {
        detail.push_str(&format!("leftovers: {}\n", f.judged.leftovers));
    }
    match report {
        Some(Ok(r)) => detail.push_str(&format!("report: {}\n", r.summary.trim())),
        _ => {
            if let Some(words) = final_words(f) {
                detail.push_str(&format!("final message:\n{words}\n"));
            }
        }
    }
    evidence(f, EvidenceKind::Slice, &summary, &detail)
}

pub fn evidence(f: &Finished<'_>, kind: EvidenceKind, summary: &str, detail: &str) -> NewEvidence {
    let summary = bounded(summary.trim(), limits::SUMMARY);
    NewEvidence {
        kind,
        // The kernel refuses a blank summary, which would refuse the whole batch.
        summary: if summary.is_empty() {
            "(no summary)".to_owned()
        } else {
            summary
        },
        detail: bounded(detail, limits::DETAIL),
        files: vec![],
        todo: f.record.todo,
        // The batch is checked against the claim's epoch as a whole (the release or done in it).
        epoch: f.record.epoch,
        slice: Some(f.record.id),
        work: None,
        metric: None,
    }
}

/// Kinds an agent may report; the others are loopx's own to record.
/// A kind the agent may not report (or no kind, or a word that names none) is a note: the
/// report block is the agent's text, read leniently.
pub fn kind_of(kind: Option<&str>) -> EvidenceKind {
    kind.and_then(|k| k.trim().parse::<EvidenceKind>().ok())
        .filter(|k| k.agent_may_report())
        .unwrap_or(EvidenceKind::Note)
}

/// The report's handoff, else one written from what was observed.
fn handoff(
    f: &Finished<'_>,
    report: Option<&Result<Report, loopx_adapters::MalformedReport>>,
    question: Option<&(String, Vec<String>)>,
) -> NewHandoff {
    let (done, next) = match report {
        Some(Ok(r)) => (
            r.summary.trim().to_owned(),
            r.handoff.as_deref().unwrap_or("").trim().to_owned(),
        ),
        _ => (
            format!(
                "Slice {} ended `{}`{}: {}{}",
                f.record.id,
                f.judged.outcome,
                // Done through `loopx report done` is a report, on the slice's channel.
                match f.reported_done {
                    true => "",
                    false => " without a readable report",
                },
                f.judged.reason,
                final_words(f)
                    .map(|words| format!("\nThe agent's final message:\n{words}"))
                    .unwrap_or_default()
            ),
            format!(
                "Check what the last slice left (its whole output is in `{}`) before going on.",
                f.log()
            ),
        ),
    };
    let done = if done.is_empty() && next.is_empty() {
        format!("Slice {} ended `{}`.", f.record.id, f.judged.outcome)
    } else {
        done
    };
    NewHandoff {
        todo: f.record.todo,
        // The batch is checked against the claim's epoch as a whole (the release or done in it).
        epoch: f.record.epoch,
        done: bounded(&done, limits::DETAIL),
        next: bounded(&next, limits::DETAIL),
        files: vec![],
        // A blank question would make the kernel refuse the handoff: it has nothing to say.
        questions: question
            .map(|(q, _)| q.trim())
            .filter(|q| !q.is_empty())
            .map(|q| vec![bounded(q, limits::QUESTION)])
            .unwrap_or_default(),
        slice: Some(f.record.id),
    }
}

/// A gate for the agent's question: it blocks the todo, or the agent when there is none.
fn gate(f: &Finished<'_>, question: String, options: Vec<String>) -> NewGate {
    let blocks = match f.record.todo {
        Some(todo) => Blocks::Todos(vec![todo]),
        None => Blocks::Agent(f.record.agent.clone()),
    };
    let on = f.on_todo();
    NewGate {
        question,
        options: options
            .iter()
            .map(|o| bounded(o.trim(), limits::OPTION))
            .filter(|o| !o.is_empty())
            .take(limits::LIST_ITEMS)
            .collect(),
        context: format!("asked by `{}` in slice {}{on}", f.record.agent, f.record.id),
        blocks,
        kind: GateKind::Question,
    }
}

/// When a vendor usage limit resets, if this slice hit one and the stream said when.
///
/// The time comes from the agent's output stream, which anything writing to its terminal can
/// forge: a reset past the vendors' longest window (a week) is taken as that window's end, so a
/// forged `resetsAt` in the year 3000 cannot hold the account forever.
fn resets_at(f: &Finished<'_>) -> Option<Timestamp> {
    let limit = f.judged.classification.as_ref()?.limit.as_ref()?;
    let at = limit
        .resets_at
        .filter(|_| f.judged.outcome == Outcome::UsageLimited)?;
    let at = u64::try_from(at.as_millisecond()).ok().map(Timestamp)?;
    Some(at.min(f.end.at.plus(MAX_VENDOR_HOLD)))
}

/// The agent's last words, when it gave no readable report: the end of its final message,
/// clipped to whole lines where it can be.
fn final_words(f: &Finished<'_>) -> Option<String> {
    let text = f.end.summary.final_message.as_deref()?.trim();
    if text.is_empty() {
        return None;
    }
    let tail = match text.len() > FINAL_WORDS {
        true => {
            let mut start = text.len() - FINAL_WORDS;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            let cut = &text[start..];
            cut.find('\n').map_or(cut, |nl| &cut[nl + 1..])
        }
        false => text,
    };
    // It is shown in terminals and read by the next agent: no escape sequences or other
    // control characters (a structured stream's result text can carry them).
    let clean: Vec<String> = tail.lines().map(loopx_vocab::strip_ansi).collect();
    Some(clean.join("\n"))
}

/// A quota request on the `demo` account with no pacing or windows, for tests.
#[cfg(any(test, feature = "fixtures"))]
pub fn unpaced_quota(agent: &AgentName) -> QuotaRequest {
    QuotaRequest {
        goal: None,
        agent: agent.clone(),
        account: "demo".into(),
        tokens: 0,
        cost_usd: 0.0,
        busy: None,
        rules: std::sync::Arc::new(crate::account::AccountLimits {
            pacing: None,
            windows: vec![],
        }),
    }
}

/// A completed work slice s4 of `agent` on t2 (epoch 3) that changed nothing, for tests: 10
/// tokens, $0.50, from 1 000 to 3 000 ms, session `c4a9eaf5`. Its parts are the test's to
/// change; [`TestSlice::finished`] is what its writeback reads.
#[cfg(any(test, feature = "fixtures"))]
#[derive(Debug)]
pub struct TestSlice {
    pub record: loopx_kernel::model::SliceRecord,
    pub end: AgentEnd,
    pub judged: Judged,
}

#[cfg(any(test, feature = "fixtures"))]
pub fn test_slice(agent: &AgentName) -> TestSlice {
    let mut summary =
        loopx_adapters::Parser::new(loopx_adapters::OutputFormat::Text).into_summary();
    summary.session_id = Some("c4a9eaf5".into());
    let mut end = AgentEnd::new(Err(String::new()), summary);
    end.exit = Ok(loopx_pty::SliceExit::Exited(0));
    (end.bytes, end.containment) = (100, "session");
    (end.at, end.elapsed) = (Timestamp(3_000), std::time::Duration::from_secs(2));
    let record = loopx_kernel::model::SliceRecord {
        goal: None,
        id: loopx_kernel::SliceId(4),
        agent: agent.clone(),
        todo: Some(loopx_kernel::TodoId(2)),
        epoch: Some(3),
        kind: SliceKind::Work,
        profile_hash: String::new(),
        argv: Vec::new(),
        process: None,
        started_at: Timestamp(1_000),
        limit_secs: 60,
        ended_at: None,
        outcome: None,
        exit: None,
        tokens: 0,
        cost_usd: 0.0,
        output_bytes: 0,
        log: Some(".loopx/slices/s4.log".into()),
        leftovers: 0,
        containment: String::new(),
        log_sha256: String::new(),
        seen: None,
    };
    let judged = Judged {
        outcome: Outcome::Completed,
        reason: "because".into(),
        leftovers: 0,
        exit: Some("exit 0".into()),
        classification: None,
        disk_full: None,
    };
    TestSlice {
        record,
        end,
        judged,
    }
}

#[cfg(any(test, feature = "fixtures"))]
impl TestSlice {
    /// The slice's writeback input.
    pub fn finished(&self) -> Finished<'_> {
        Finished {
            record: &self.record,
            end: &self.end,
            judged: &self.judged,
            cli: CliFixes {
                adapter: "demo",
                login: None,
                install: None,
            },
            limited_before: 0,
            log_sha256: String::new(),
            redactor: None,
            quota: QuotaRequest {
                tokens: 10,
                cost_usd: 0.5,
                busy: Some((Timestamp(1_000), Timestamp(3_000))),
                ..unpaced_quota(&self.record.agent)
            },
            reported_done: false,
            agents_close_goals: false,
            tree: None,
            landing: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use loopx_adapters::{MalformedReport, ReportQuestion, ReportStatus, ReportTodo};
    use loopx_git::scope::SliceChanges;
    use loopx_kernel::TodoId;

    use super::*;

    fn report(status: ReportStatus) -> Report {
        Report {
            status,
            summary: "Wrote the notes".into(),
            evidence: vec![],
            handoff: Some("Review them".into()),
            next_todos: vec![],
            question: None,
            propose_goal: None,
            drop_todos: vec![],
            rewrite_todos: vec![],
            metrics: None,
        }
    }

    fn classified(
        outcome: Outcome,
        report: Option<Result<Report, MalformedReport>>,
    ) -> Classification {
        // Done as the default `done_when` (the report) reads it.
        let done = outcome == Outcome::Completed
            && matches!(&report, Some(Ok(r)) if r.status == ReportStatus::Done);
        Classification {
            outcome,
            reason: "because".into(),
            report,
            question: None,
            limit: None,
            done,
        }
    }

    fn check(c: &Classification, outcome: &str, todo: bool) -> Writeback {
        check_with(c, outcome, todo, false, SliceKind::Work)
    }

    fn check_kind(c: &Classification, outcome: &str, todo: bool, kind: SliceKind) -> Writeback {
        check_with(c, outcome, todo, false, kind)
    }

    fn check_done(c: &Classification, outcome: &str, todo: bool, done: bool) -> Writeback {
        check_with(c, outcome, todo, done, SliceKind::Work)
    }

    fn check_with(
        c: &Classification,
        outcome: &str,
        todo: bool,
        done: bool,
        kind: SliceKind,
    ) -> Writeback {
        let agent: AgentName = "exec".parse().expect("a name");
        let mut t = finished(c, &agent, outcome, todo);
        t.record.kind = kind;
        writeback(&t.finished(), done)
    }

    fn finished(c: &Classification, agent: &AgentName, outcome: &str, todo: bool) -> TestSlice {
        let mut t = test_slice(agent);
        t.record.todo = todo.then_some(TodoId(2));
        t.record.epoch = todo.then_some(3);
        t.judged.outcome = Outcome::parse(outcome).expect("an outcome");
        t.judged.classification = Some(c.clone());
        t
    }

    fn notes(wb: &Writeback) -> Vec<String> {
        wb.ops()
            .into_iter()
            .filter_map(|op| match op {
                Op::EvidenceAdd(e) if e.kind == EvidenceKind::Note => Some(e.summary),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_done_report_finishes_the_todo_with_the_claims_epoch() {
        let c = classified(Outcome::Completed, Some(Ok(report(ReportStatus::Done))));
        let wb = check(&c, "completed", true);
        assert!(wb.todo_done);
        assert!(
            matches!(wb.ops()[0], Op::SliceEnd { .. }),
            "the end comes first"
        );
        assert!(matches!(
            wb.ops().last(),
            Some(Op::TodoFinish(FinishTodo {
                to: TodoState::Done,
                epoch: Some(3),
                ..
            }))
        ));
        let charge = wb.ops().into_iter().find_map(|op| match op {
            Op::QuotaCharge(req) => Some(req),
            _ => None,
        });
        let charge = charge.expect("usage is charged");
        assert_eq!(
            (charge.tokens, charge.busy),
            (10, Some((Timestamp(1_000), Timestamp(3_000))))
        );
    }

    #[test]
    fn a_plan_that_reports_done_and_proposes_nothing_marks_the_goal_done() {
        let done = |r: Report| classified(Outcome::Completed, Some(Ok(r)));
        let is_goal_done = |wb: &Writeback| {
            wb.ops().iter().any(|op| {
                matches!(
                    op,
                    Op::GoalSetStatus(SetGoalStatus {
                        to: GoalStatus::Done,
                        ..
                    })
                )
            })
        };
        let wb = check_kind(
            &done(report(ReportStatus::Done)),
            "completed",
            false,
            SliceKind::Plan,
        );
        assert!(is_goal_done(&wb));
        let mut more = report(ReportStatus::Done);
        more.next_todos = vec![ReportTodo {
            title: "Review".into(),
            detail: None,
            role: None,
            ..ReportTodo::default()
        }];
        let wb = check_kind(&done(more), "completed", false, SliceKind::Plan);
        assert!(!is_goal_done(&wb), "it proposed more work");
        let wb = check(&done(report(ReportStatus::Done)), "completed", true);
        assert!(!is_goal_done(&wb), "a work slice's done is its todo's");
    }

    #[test]
    fn a_scope_violation_releases_a_done_todo_and_asks() {
        let c = classified(Outcome::Completed, Some(Ok(report(ReportStatus::Done))));
        let agent: AgentName = "exec".parse().expect("a name");
        let changes = SliceChanges {
            files: vec!["secrets.txt".into()],
            outside: vec!["secrets.txt".into()],
            ..SliceChanges::default()
        };
        let mut t = finished(&c, &agent, "completed", true);
        t.end.changes = changes;
        let wb = writeback(&t.finished(), false);
        assert!(!wb.todo_done, "a person may roll it back");
        assert_eq!(wb.violations, ["secrets.txt"]);
        assert!(matches!(wb.ops().last(), Some(Op::TodoRelease(_))));
        assert!(wb.ops().iter().any(|op| matches!(
            op,
            Op::EvidenceAdd(e) if e.kind == EvidenceKind::Violation
        )));
        assert!(wb.ops().iter().any(|op| matches!(op, Op::GateAsk(_))));
        assert!(
            !wb.parts.iter().any(|p| p.item == Some(Item::Question)),
            "not the agent's question"
        );
    }

    #[test]
    fn done_without_a_completed_outcome_only_releases() {
        let c = classified(Outcome::Progress, Some(Ok(report(ReportStatus::Done))));
        let wb = check(&c, "timed_out", true);
        assert!(!wb.todo_done);
        assert!(matches!(
            wb.ops().last(),
            Some(Op::TodoRelease(ReleaseClaim { epoch: 3, .. }))
        ));
    }

    #[test]
    fn a_todo_the_agent_already_finished_is_neither_released_nor_finished_again() {
        let c = classified(Outcome::Progress, Some(Ok(report(ReportStatus::Progress))));
        let wb = check_done(&c, "progress", true, true);
        assert!(wb.todo_done, "the todo is done, by the agent");
        assert!(
            !wb.ops()
                .iter()
                .any(|op| matches!(op, Op::TodoRelease(_) | Op::TodoFinish(_))),
            "{:?}",
            wb.ops()
        );
        assert!(
            wb.ops().iter().any(|op| matches!(op, Op::HandoffAdd(_))),
            "the rest of the batch stays"
        );
        let not_done = check_done(&c, "progress", true, false);
        assert!(matches!(
            not_done.ops().last(),
            Some(Op::TodoRelease(ReleaseClaim { epoch: 3, .. }))
        ));
    }

    #[test]
    fn a_malformed_report_is_evidence_and_the_handoff_is_observed() {
        let bad = MalformedReport {
            error: "expected `,`".into(),
            raw: "{\"status\":".into(),
        };
        let c = classified(Outcome::Progress, Some(Err(bad)));
        let wb = check(&c, "progress", true);
        assert_eq!(wb.report, "malformed");
        assert!(notes(&wb)[0].contains("malformed"), "{:?}", notes(&wb));
        let handoff = wb.ops().into_iter().find_map(|op| match op {
            Op::HandoffAdd(h) => Some(h),
            _ => None,
        });
        let handoff = handoff.expect("a handoff");
        assert!(
            handoff.done.contains("without a readable report"),
            "{}",
            handoff.done
        );
        assert!(handoff.next.contains(".loopx/slices/s4.log"));
    }

    #[test]
    fn a_vague_question_is_evidence_not_a_gate() {
        let mut r = report(ReportStatus::Blocked);
        r.question = Some(ReportQuestion {
            text: "what should I do?".into(),
            options: vec![],
        });
        let c = classified(Outcome::Progress, Some(Ok(r)));
        let wb = check(&c, "asked", true);
        assert!(!wb.parts.iter().any(|p| p.item == Some(Item::Question)));
        assert!(!wb.ops().iter().any(|op| matches!(op, Op::GateAsk(_))));
        let notes = notes(&wb);
        assert!(
            notes[0]
                .starts_with("dropped from the agent's report: the question `what should I do?`"),
            "{notes:?}"
        );
        assert!(notes[0].contains("placeholder"), "{notes:?}");
    }

    #[test]
    fn a_concrete_question_gates_the_todo_and_proposed_todos_are_added() {
        let mut r = report(ReportStatus::Blocked);
        r.question = Some(ReportQuestion {
            text: "Should the notes be a Markdown list or a table?".into(),
            options: vec!["list".into(), " ".into()],
        });
        r.next_todos = vec![
            ReportTodo {
                title: "Review the notes".into(),
                detail: None,
                role: Some("reviewer".into()),
                ..ReportTodo::default()
            },
            ReportTodo {
                title: "   ".into(),
                detail: None,
                role: None,
                ..ReportTodo::default()
            },
            // An escape sequence alone is stored as nothing: blank too, not a refused batch.
            ReportTodo {
                title: "\u{1b}[31m\u{1b}[0m".into(),
                detail: None,
                role: None,
                ..ReportTodo::default()
            },
        ];
        let c = classified(Outcome::Progress, Some(Ok(r)));
        let wb = check(&c, "asked", false);
        let proposed = wb.parts.iter().filter(|p| p.item == Some(Item::Todo));
        assert_eq!(proposed.count(), 1, "a blank title is dropped");
        assert!(
            notes(&wb)[0].contains("title is empty") && notes(&wb)[1].contains("title is empty"),
            "and noted: {:?}",
            notes(&wb)
        );
        let gate = wb.ops().into_iter().find_map(|op| match op {
            Op::GateAsk(g) => Some(g),
            _ => None,
        });
        let gate = gate.expect("a gate");
        assert_eq!(gate.options, ["list"]);
        assert_eq!(gate.blocks, Blocks::Agent("exec".parse().expect("a name")));
    }

    #[test]
    fn a_reported_monitor_becomes_one_and_a_malformed_one_is_dropped_and_noted() {
        let mut r = report(ReportStatus::Progress);
        r.next_todos = vec![
            ReportTodo {
                title: "Wait for run 42".into(),
                check: Some("test -e out/run42.done".into()),
                every: Some("10m".into()),
                expires: Some("2d".into()),
                then: vec![ReportTodo {
                    title: "Evaluate run 42".into(),
                    ..ReportTodo::default()
                }],
                ..ReportTodo::default()
            },
            ReportTodo {
                title: "Evaluate run 7".into(),
                after: vec!["t7".into()],
                ..ReportTodo::default()
            },
            ReportTodo {
                title: "Wait for CI".into(),
                check: Some("gh run view 1".into()),
                every: Some("soon".into()),
                ..ReportTodo::default()
            },
        ];
        let c = classified(Outcome::Progress, Some(Ok(r)));
        let wb = check(&c, "progress", false);
        let added: Vec<NewTodo> = wb
            .ops()
            .into_iter()
            .filter_map(|op| match op {
                Op::TodoAdd(new) => Some(new),
                _ => None,
            })
            .collect();
        assert_eq!(added.len(), 2, "{added:?}");
        let monitor = added[0].monitor.as_ref().expect("a monitor");
        assert_eq!(monitor.every_ms, 600_000);
        assert_eq!(monitor.expires_after_ms, Some(2 * 86_400_000));
        assert_eq!(monitor.profile, None);
        assert_eq!(added[0].then.len(), 1, "the work after it, added with it");
        assert_eq!(added[0].then[0].title, "Evaluate run 42");
        assert_eq!(added[1].after, ["t7".parse().expect("an id")]);
        assert!(
            notes(&wb).iter().any(|n| n.contains("`soon`")),
            "{:?}",
            notes(&wb)
        );
    }

    #[test]
    fn a_usage_limit_holds_the_account_until_it_resets() {
        let at = jiff::Timestamp::from_second(86_400).expect("a time");
        let c = Classification {
            limit: Some(loopx_adapters::VendorLimit {
                resets_at: Some(at),
                window: None,
            }),
            ..classified(Outcome::UsageLimited, None)
        };
        let wb = check(&c, "usage_limited", true);
        assert_eq!(wb.hold_until, Some(Timestamp(86_400_000)));
        assert!(wb.ops().iter().any(|op| matches!(
            op,
            Op::QuotaHold(NewHold { key, source: HoldSource::Vendor, .. }) if key == "demo"
        )));
        assert!(matches!(wb.ops().last(), Some(Op::TodoRelease(_))));
    }

    #[test]
    fn a_usage_limit_without_a_reset_time_holds_the_account_for_a_backoff() {
        let c = classified(Outcome::UsageLimited, None);
        let wb = check(&c, "usage_limited", true);
        // The slice ended at 3 000 ms.
        let until = Timestamp(3_000).plus(UNKNOWN_RESET_BACKOFF);
        assert_eq!(wb.hold_until, Some(until));
        let reason = wb.ops().into_iter().find_map(|op| match op {
            Op::QuotaHold(NewHold {
                reason, until: u, ..
            }) if u == Some(until) => Some(reason),
            _ => None,
        });
        assert!(
            reason.as_ref().is_some_and(|r| r.contains("no reset time")),
            "{reason:?}"
        );
        let ok = classified(Outcome::Completed, None);
        assert_eq!(
            check(&ok, "completed", true).hold_until,
            None,
            "only a limit holds"
        );
    }

    #[test]
    fn an_auth_failure_holds_the_account_behind_a_gate_that_names_the_fix() {
        let c = classified(Outcome::AuthFailed, None);
        let agent: AgentName = "exec".parse().expect("a name");
        let t = finished(&c, &agent, "auth_failed", true);
        let f = Finished {
            cli: CliFixes {
                adapter: "codex",
                login: Some("run `codex login`"),
                install: None,
            },
            ..t.finished()
        };
        let wb = writeback(&f, false);
        let ops = wb.ops();
        assert!(ops.iter().any(|op| matches!(
            op,
            Op::QuotaHold(NewHold { key, until: None, .. }) if key == "demo"
        )));
        let gate = ops
            .iter()
            .find_map(|op| match op {
                Op::GateAsk(g) => Some(g),
                _ => None,
            })
            .expect("a login gate");
        assert_eq!(
            gate.question,
            "`exec` is not logged in (account `demo`): run `codex login`, then answer `retry`?"
        );
        assert_eq!(
            gate.kind,
            GateKind::Login {
                account: "demo".into()
            }
        );
        // The kernel takes it as it is: loopx's own part of the batch is always valid.
        gate.check().expect("a valid gate");
        assert!(matches!(ops.last(), Some(Op::TodoRelease(_))));
    }

    #[test]
    fn without_a_report_the_evidence_and_handoff_carry_the_agent_s_last_words() {
        let c = classified(Outcome::Completed, None);
        let agent: AgentName = "exec".parse().expect("a name");
        let long = format!("{}\nformatted 12 files\nall checks pass", "x".repeat(5_000));
        let mut t = finished(&c, &agent, "completed", true);
        t.end.summary.final_message = Some(long);
        let wb = writeback(&t.finished(), false);
        let ops = wb.ops();
        let Op::EvidenceAdd(slice) = &ops[1] else {
            panic!("{ops:?}")
        };
        assert!(
            slice
                .detail
                .ends_with("final message:\nformatted 12 files\nall checks pass\n"),
            "the end, cut at a line: {}",
            slice.detail
        );
        let handoff = ops
            .iter()
            .find_map(|op| match op {
                Op::HandoffAdd(h) => Some(h),
                _ => None,
            })
            .expect("a handoff");
        assert!(handoff.done.contains("all checks pass"), "{}", handoff.done);
        assert!(!handoff.done.contains("xxx"), "clipped: {}", handoff.done);
    }

    #[test]
    fn a_forged_far_reset_holds_the_account_a_week_at_most() {
        let year_3000 = jiff::Timestamp::from_second(32_503_680_000).expect("a time");
        let c = Classification {
            limit: Some(loopx_adapters::VendorLimit {
                resets_at: Some(year_3000),
                window: None,
            }),
            ..classified(Outcome::UsageLimited, None)
        };
        let wb = check(&c, "usage_limited", true);
        assert_eq!(wb.hold_until, Some(Timestamp(3_000).plus(MAX_VENDOR_HOLD)));
    }

    #[test]
    fn the_agent_s_last_words_carry_no_escape_sequences() {
        let c = classified(Outcome::Completed, None);
        let agent: AgentName = "exec".parse().expect("a name");
        let mut t = finished(&c, &agent, "completed", true);
        t.end.summary.final_message =
            Some("\u{1b}]0;pwned\u{7}done \u{1b}[31mred\u{1b}[0m\u{8}\nnext".into());
        let ops = writeback(&t.finished(), false).ops();
        let Op::EvidenceAdd(slice) = &ops[1] else {
            panic!("{ops:?}")
        };
        assert!(
            slice.detail.ends_with("final message:\ndone red\nnext\n"),
            "{:?}",
            slice.detail
        );
    }

    #[test]
    fn a_reset_already_past_by_this_clock_backs_off_instead_of_holding_nothing() {
        // The slice ended at 3 000 ms; the vendor's reset says 1 000 ms.
        let past = jiff::Timestamp::from_millisecond(1_000).expect("a time");
        let c = Classification {
            limit: Some(loopx_adapters::VendorLimit {
                resets_at: Some(past),
                window: None,
            }),
            ..classified(Outcome::UsageLimited, None)
        };
        let agent: AgentName = "exec".parse().expect("a name");
        let t = finished(&c, &agent, "usage_limited", true);
        let f = Finished {
            limited_before: 1,
            ..t.finished()
        };
        let wb = writeback(&f, false);
        let until = Timestamp(3_000).plus(UNKNOWN_RESET_BACKOFF * 2);
        assert_eq!(wb.hold_until, Some(until));
        let reason = wb.ops().into_iter().find_map(|op| match op {
            Op::QuotaHold(NewHold { reason, .. }) => Some(reason),
            _ => None,
        });
        assert!(
            reason
                .as_ref()
                .is_some_and(|r| r.contains("already past by this machine's clock")),
            "{reason:?}"
        );
    }

    #[test]
    fn a_usage_limit_without_a_reset_time_backs_off_longer_each_time_in_a_row() {
        let c = classified(Outcome::UsageLimited, None);
        let agent: AgentName = "exec".parse().expect("a name");
        let t = finished(&c, &agent, "usage_limited", true);
        let hold = |before| {
            let f = Finished {
                limited_before: before,
                ..t.finished()
            };
            writeback(&f, false).hold_until.expect("a hold")
        };
        assert_eq!(hold(0), Timestamp(3_000).plus(UNKNOWN_RESET_BACKOFF));
        assert_eq!(hold(2), Timestamp(3_000).plus(UNKNOWN_RESET_BACKOFF * 4));
        assert_eq!(hold(30), Timestamp(3_000).plus(MAX_UNKNOWN_RESET_BACKOFF));
    }

    #[test]
    fn the_slice_evidence_names_the_session() {
        let c = classified(Outcome::Completed, Some(Ok(report(ReportStatus::Done))));
        let wb = check(&c, "completed", true);
        let Op::EvidenceAdd(slice) = &wb.ops()[1] else {
            panic!("the slice's evidence follows its end: {:?}", wb.ops())
        };
        assert_eq!(slice.kind, EvidenceKind::Slice);
        let session = slice.detail.lines().find(|l| l.starts_with("session: "));
        assert_eq!(session, Some("session: c4a9eaf5"), "{}", slice.detail);
        let usage = slice.summary.rsplit(" (").next();
        assert_eq!(usage, Some("10 tokens, $0.5000)"), "{}", slice.summary);
    }

    #[test]
    fn a_clock_step_during_the_slice_does_not_make_it_look_a_day_long() {
        let c = classified(Outcome::Completed, None);
        let agent: AgentName = "exec".parse().expect("a name");
        let day = std::time::Duration::from_secs(86_400);
        // The wall clock jumped a day while the slice ran two seconds.
        let end = Timestamp(1_000).plus(day);
        let elapsed = std::time::Duration::from_secs(2);
        let busy = ran_between(end, elapsed);
        assert_eq!(
            busy,
            (Timestamp(end.0 - 2_000), end),
            "two seconds of the share"
        );
        let mut t = finished(&c, &agent, "completed", true);
        (t.end.at, t.end.elapsed) = (end, elapsed);
        let f = Finished {
            quota: QuotaRequest {
                busy: Some(busy),
                ..unpaced_quota(&agent)
            },
            ..t.finished()
        };
        let wb = writeback(&f, false);
        let ops = wb.ops();
        let Op::EvidenceAdd(slice) = &ops[1] else {
            panic!("the slice's evidence: {ops:?}")
        };
        assert!(slice.summary.contains(" in 2s "), "{}", slice.summary);
        assert!(
            slice.detail.contains("duration_ms: 2000"),
            "{}",
            slice.detail
        );
        let charged = ops.iter().find_map(|op| match op {
            Op::QuotaCharge(charge) => charge.busy,
            _ => None,
        });
        assert_eq!(charged, Some(busy));
    }
}
