//! The simulation's [`Host`]: the run loop's coordinator runs on it exactly as on threads,
//! but every worker runs on this one thread, in virtual time.
//!
//! A worker's decision and begin run at once, inside [`Host::start`] (they are the real
//! `begin_once`). The agent then "runs" as a schedule of events — its `loopx report` calls,
//! the claim's renewals, its end — in a queue ordered by virtual time. [`Host::next`] takes
//! the next event that is due before the coordinator's timeout, moves the clock to it and
//! plays it: the agent's end is the real writeback (`SimulatedSlice::finish`), a renewal the
//! real renewal, a person's answer a real kernel operation. When nothing is due before the
//! timeout the clock jumps to it: a sleep costs nothing. After every step the invariants are
//! checked (`invariants.rs`); a broken one halts the run where it broke.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use loopx_kernel::model::{EvidenceKind, GateKind, TodoState};
use loopx_kernel::store::{Applied, NewEvidence, NewGate, NewHandoff};
use loopx_kernel::{
    AgentName, Clock, GateId, Op, Project, SharedClock, SliceId, Store, Timestamp, TodoId,
};
use loopx_pty::SliceExit;
use loopx_supervisor::{
    Begin, Host, Msg, Once, Recovered, Renewed, RunOnce, SimulatedSlice, Step, SupervisorError,
    World, begin_once, recover_in,
};

use crate::agent::{Act, Forgery, Report, Script, Setting};
use crate::books::Books;
use crate::clock::VirtualClock;
use crate::faults::{SharedFaults, Writer, faults_of};
use crate::invariants::Halt;
use crate::scenario::Checked;

mod people;
mod vendor;
use loopx_kernel::fault::Faults;

/// A coordinator that asks for the next message this many times in a row without time passing
/// or anything happening is spinning: a bug a real run would show as a busy CPU.
const SPIN_LIMIT: u32 = 10_000;

/// Something that happens at a moment of virtual time.
#[derive(Debug, Clone)]
enum Event {
    /// The agent of a running slice ends (or loopx's limit stops it).
    End { slice: u64 },
    /// The renewal of a running slice's claim is due.
    Renew { slice: u64 },
    /// An agent runs `loopx report …`.
    Report { by: Reporter, report: Report },
    /// The people look at the open gates.
    PeopleLook,
    /// A person answers a gate.
    Answer { gate: GateId },
    /// A person takes a claimed todo back from its agent.
    TakeBack,
    /// A person amends the goal.
    Amend,
    /// A person commits a change to a file in the goal's scope.
    Edit,
    /// A person asks a question that holds back one goal (`[[goal]] hold_per_day`): the index
    /// of the goal in the scenario.
    Hold { goal: usize },
    /// The wall clock steps.
    ClockStep,
    /// The supervisor is killed.
    Kill,
}

/// Who a `loopx report` claims to be, as the slice's environment says.
#[derive(Debug, Clone)]
pub(crate) struct Reporter {
    pub slice: SliceId,
    pub agent: AgentName,
    pub claim: Option<(TodoId, u64)>,
}

/// A slice whose simulated agent is running.
#[derive(Debug)]
struct Running {
    worker: usize,
    once: RunOnce,
    slice: SimulatedSlice,
    script: Script,
    account: String,
    act: Act,
    /// What the slice does on an experiment's todo.
    step: Option<crate::experiments::Step>,
}

/// One simulated world: the virtual clock, the event queue, the vendors, the people.
pub(crate) struct SimHost {
    pub clock: Arc<VirtualClock>,
    pub plan: Rc<Checked>,
    pub project: Project,
    pub faults: SharedFaults,
    /// The faults of the supervisor running now: its writes may crash it, and a kill crashes
    /// it. Each supervisor the simulation starts gets its own ([`SimHost::next_supervisor`]).
    pub supervisor: Faults,
    /// The faults of everyone else's writes (agents' reports, people): busy or full only.
    others: Faults,
    pub books: Books,
    /// The goals, in the scenario's order (one without `[[goal]]`).
    pub goals: Vec<loopx_kernel::GoalId>,
    /// Goals held back by a person's question (`[[goal]] hold_per_day`) or over their share,
    /// and when each other goal began to stall ([`crate::stall`]).
    pub stalls: crate::stall::Stalls,
    /// The scenario's agents by name: (account, index in the scenario).
    agents: BTreeMap<String, (String, usize)>,
    inbox: VecDeque<Msg>,
    queue: BTreeMap<(u64, u64), Event>,
    seq: u64,
    running: BTreeMap<u64, Running>,
    /// Per account: the vendor's state.
    vendors: BTreeMap<String, Vendor>,
    /// Gates the people have seen, with when they answer.
    seen_gates: BTreeSet<GateId>,
    rng_agents: fastrand::Rng,
    rng_people: fastrand::Rng,
    rng_loop: fastrand::Rng,
    /// Calls to `next` in a row in which nothing happened.
    idle_calls: u32,
    /// Per running slice: the items its agent's reports wrote (the report channel's count).
    reported: BTreeMap<loopx_kernel::SliceId, u32>,
    /// Running slices whose agent said `loopx report done`.
    reported_done: BTreeSet<loopx_kernel::SliceId>,
    /// Long experiments: the jobs agents started, and what waiting for them cost.
    pub experiments: crate::experiments::ExperimentBooks,
    rng_jobs: fastrand::Rng,
    /// Whether a review hands a fix back (`[handbacks]`): drawn apart, so that the other
    /// scenarios' seeds replay as before.
    rng_handbacks: fastrand::Rng,
}

/// What a vendor knows of an account (on the true clock, which steps do not move).
#[derive(Debug, Default)]
pub(crate) struct Vendor {
    /// The usage limit lasts until then.
    pub limited_until: Option<Timestamp>,
    /// Credentials refused until a person logs in (answers the login gate).
    pub logged_out: bool,
    /// The vendor's own window: opened at, tokens used.
    pub window: Option<(Timestamp, u64)>,
}

impl SimHost {
    pub(crate) fn new(
        plan: Rc<Checked>,
        project: Project,
        clock: Arc<VirtualClock>,
        faults: SharedFaults,
        seed: u64,
        goals: Vec<loopx_kernel::GoalId>,
    ) -> SimHost {
        let scenario = &plan.scenario;
        let agents = scenario
            .agents
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name.clone(), (a.account.clone(), i)))
            .collect();
        let vendors = scenario
            .accounts
            .iter()
            .map(|a| (a.name.clone(), Vendor::default()))
            .collect();
        let mut host = SimHost {
            books: Books::new(&plan),
            goals,
            stalls: crate::stall::Stalls::default(),
            clock,
            project,
            supervisor: faults_of(&faults, Writer::Supervisor),
            others: faults_of(&faults, Writer::Other),
            faults,
            agents,
            inbox: VecDeque::new(),
            queue: BTreeMap::new(),
            seq: 0,
            running: BTreeMap::new(),
            vendors,
            seen_gates: BTreeSet::new(),
            rng_agents: fastrand::Rng::with_seed(seed ^ 0xA6E4_7000),
            rng_people: fastrand::Rng::with_seed(seed ^ 0x9E0F_1E00),
            rng_loop: fastrand::Rng::with_seed(seed ^ 0x100F_0000),
            idle_calls: 0,
            reported: BTreeMap::new(),
            reported_done: BTreeSet::new(),
            experiments: crate::experiments::ExperimentBooks::default(),
            rng_jobs: fastrand::Rng::with_seed(seed ^ 0x10B5_0000),
            rng_handbacks: fastrand::Rng::with_seed(seed ^ 0x8ACB_0000),
            plan,
        };
        host.schedule(Duration::ZERO, Event::PeopleLook);
        let f = &host.plan.scenario.faults;
        let (kills, steps) = (f.crashes_per_day, f.clock_steps_per_day);
        let take_backs = host.plan.scenario.people.take_back_per_day;
        host.schedule_rate(kills, Event::Kill);
        host.schedule_rate(steps, Event::ClockStep);
        host.schedule_rate(take_backs, Event::TakeBack);
        let amends = host.plan.scenario.people.amend_per_day;
        host.schedule_rate(amends, Event::Amend);
        let edits = host.plan.scenario.people.edit_per_day;
        host.schedule_rate(edits, Event::Edit);
        for goal in 0..host.plan.scenario.goals.len() {
            let rate = host.plan.scenario.goals[goal].hold_per_day;
            host.schedule_rate(rate, Event::Hold { goal });
        }
        host
    }

    /// When the simulation ends, on the monotonic clock (ms).
    pub(crate) fn horizon_ms(&self) -> u64 {
        (self.plan.hours * 3_600_000.0) as u64
    }

    fn now_ms(&self) -> u64 {
        self.clock.mono_ms()
    }

    fn schedule(&mut self, after: Duration, event: Event) {
        let at = self
            .now_ms()
            .saturating_add(u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
        self.seq += 1;
        self.queue.insert((at, self.seq), event);
    }

    /// Schedules the next `event` of a Poisson process with `per_day` events a day.
    fn schedule_rate(&mut self, per_day: f64, event: Event) {
        if per_day <= 0.0 {
            return;
        }
        let u = self.rng_people.f64().max(1e-12);
        // At most once in a thousand years: a tiny rate must not overflow a duration.
        let days = (-u.ln() / per_day).min(365_000.0);
        self.schedule(Duration::from_secs_f64(days * 86_400.0), event);
    }

    fn uniform(rng: &mut fastrand::Rng, [lo, hi]: [Duration; 2]) -> Duration {
        let (lo, hi) = (lo.as_millis() as u64, hi.as_millis() as u64);
        Duration::from_millis(rng.u64(lo..=hi))
    }

    /// A store handle for a write by someone other than the supervisor: an agent's `loopx
    /// report`, a person. Such a write may find the store busy or full, but cannot kill the
    /// supervisor.
    fn others_store(
        project: &Project,
        others: &Faults,
    ) -> Result<Store, loopx_kernel::KernelError> {
        Ok(Store::open(project)?.with_faults(others.clone()))
    }

    /// The faults of the next supervisor (the last one crashed, or this is the first).
    pub(crate) fn next_supervisor(&mut self) -> Faults {
        self.supervisor = faults_of(&self.faults, Writer::Supervisor);
        self.supervisor.clone()
    }

    /// The supervisor was killed: every running agent is orphaned. Its renewals and its end
    /// (which the dead supervisor would have written) are gone; its reports are not, since the
    /// agent's process outlives its supervisor until recovery stops it.
    pub(crate) fn crashed(&mut self) {
        let running = std::mem::take(&mut self.running);
        for r in running.into_values() {
            self.books.orphaned();
            r.slice.vanish();
        }
        self.queue
            .retain(|_, e| !matches!(e, Event::End { .. } | Event::Renew { .. }));
        self.inbox.clear();
    }

    /// Plays every event due until `until` (ms), with no supervisor running.
    pub(crate) fn idle_until(&mut self, until: u64) -> Result<(), Halt> {
        while let Some((&(at, seq), _)) = self.queue.first_key_value() {
            if at > until {
                break;
            }
            let event = self.queue.remove(&(at, seq)).expect("the first event");
            self.clock.advance_to(at);
            self.play(event, false)?;
        }
        self.clock.advance_to(until);
        Ok(())
    }

    /// Plays one event; `live`: a supervisor runs (a kill needs one).
    fn play(&mut self, event: Event, live: bool) -> Result<(), Halt> {
        self.books.step += 1;
        match event {
            Event::End { slice } => self.end(slice, None)?,
            Event::Renew { slice } => self.renew(slice)?,
            Event::Report { by, report } => self.report(&by, &report)?,
            Event::PeopleLook => self.people_look(),
            Event::Answer { gate } => self.answer(gate),
            Event::TakeBack => self.take_back(),
            Event::Amend => self.amend(),
            Event::Edit => self.edit()?,
            Event::Hold { goal } => self.hold(goal),
            Event::ClockStep => self.clock_step(),
            Event::Kill if live => {
                self.books.faults.kills += 1;
                let rate = self.plan.scenario.faults.crashes_per_day;
                self.schedule_rate(rate, Event::Kill);
                self.supervisor.crash();
            }
            // Already down: the next kill is drawn when it is up again.
            Event::Kill => {
                let rate = self.plan.scenario.faults.crashes_per_day;
                self.schedule_rate(rate, Event::Kill);
            }
        }
        self.check()
    }

    /// The invariants that hold after every step.
    fn check(&mut self) -> Result<(), Halt> {
        crate::invariants::after_step(self)?;
        crate::stall::after_step(self)
    }

    fn end(&mut self, slice: u64, lost: Option<String>) -> Result<(), Halt> {
        let Some(r) = self.running.remove(&slice) else {
            return Ok(());
        };
        self.queue.retain(
            |_, e| !matches!(e, Event::Renew { slice: s } | Event::End { slice: s } if *s == slice),
        );
        let Running {
            worker,
            once,
            slice: sim,
            script,
            account,
            act,
            step,
        } = r;
        // A run that completed started its job, whatever loopx records of it.
        if let (None, Act::Completes, Some(crate::experiments::Step::Run { n, .. })) =
            (&lost, act, step)
        {
            self.start_job(n);
        }
        let (output, exit) = match &lost {
            // loopx stopped the agent when the claim was lost: what it printed so far.
            Some(_) => (
                script.output[..first_line(&script.output)].to_vec(),
                SliceExit::Stopped(loopx_pty::StopReason::Requested),
            ),
            None => (script.output.clone(), script.exit.clone()),
        };
        let tokens = if lost.is_some() { 0 } else { script.tokens };
        let record = sim.record().clone();
        let before = read_todo(&self.project, record.todo);
        let now = self.clock.now();
        self.vendor_spend(&account, tokens);
        self.books.charge(&account, now, tokens, record.id.0);
        if let Some(reset) = script.reset
            && lost.is_none()
        {
            self.vendors
                .get_mut(&account)
                .expect("account")
                .limited_until = Some(reset);
        }
        let mut msgs = Vec::new();
        let reported = loopx_supervisor::ChannelReports {
            done: self.reported_done.remove(&record.id),
            items: self.reported.remove(&record.id).unwrap_or(0),
        };
        let result = sim.finish(&once, &output, exit, lost, reported, &mut |step| {
            if let Some(msg) = Msg::from_step(worker, &step) {
                msgs.push(msg);
            }
        });
        self.inbox.extend(msgs);
        if let Ok(Once::Ran { slice: summary, .. }) = &result {
            let true_now = self.clock.true_now();
            if summary.outcome == loopx_adapters::Outcome::AuthFailed {
                // The account is held until a person logs in: not the reset's hold.
                self.books.disturb_account(&account);
            }
            self.books.slice_ended(&record, summary, true_now);
            // A reset still ahead by loopx's clock must hold the account until then, and no
            // longer: judged. A reset already past gets a backoff instead (by design), which
            // replaces whatever hold was judged before.
            match (script.reset, summary.hold_until) {
                (Some(reset), Some(_)) if reset > now => {
                    self.books.limit_reported(&account, reset, now);
                }
                (_, Some(_)) => self.books.disturb_account(&account),
                _ => {}
            }
            crate::invariants::writeback_fenced(self, &record, before.as_ref(), summary)?;
            crate::invariants::done_on_fresh_evidence(self, &record, summary)?;
        }
        self.inbox.push_back(Msg::Done(worker, result));
        self.inbox.push_back(Msg::Wake);
        Ok(())
    }

    fn renew(&mut self, slice: u64) -> Result<(), Halt> {
        let Some(r) = self.running.get(&slice) else {
            return Ok(());
        };
        let record = r.slice.record().clone();
        let Some(renewed) = r.slice.renew(&r.once) else {
            return Ok(());
        };
        let every = r.slice.lease_ttl() / 3;
        match renewed {
            Renewed::Kept => {
                crate::invariants::renewal_fenced(self, &record)?;
                self.schedule(every, Event::Renew { slice });
            }
            Renewed::Failed(_) => self.schedule(every, Event::Renew { slice }),
            Renewed::Finished => {}
            Renewed::Lost(why) => self.end(slice, Some(why))?,
        }
        Ok(())
    }

    /// An agent's `loopx report`: the batch the CLI writes, behind the slice's guard.
    fn report(&mut self, by: &Reporter, report: &Report) -> Result<(), Halt> {
        let mut who = by.clone();
        let forged = match report {
            Report::Forged(lie) => {
                match lie {
                    Forgery::StaleEpoch => {
                        who.claim = who.claim.map(|(t, e)| (t, e.saturating_sub(1)));
                    }
                    Forgery::OtherAgent => {
                        let other = self
                            .agents
                            .keys()
                            .find(|a| a.as_str() != who.agent.as_str())
                            .cloned()
                            .unwrap_or_else(|| "intruder".to_owned());
                        who.agent = other.parse().expect("a scenario's agent name");
                    }
                    Forgery::OtherTodo => {
                        // Another todo that exists (the scenario's are t1 … tN).
                        let count = u64::from(self.plan.scenario.todo_count());
                        who.claim = who.claim.map(|(t, e)| (TodoId(t.0 % count + 1), e));
                    }
                    // Only a lie once the slice's end is recorded: a supervisor killed before it
                    // could record it leaves the slice running, its agent's words still its own
                    // until recovery closes it.
                    Forgery::AfterEnd if !self.slice_ended(who.slice) => {
                        return self.report(by, &Report::Evidence);
                    }
                    Forgery::AfterEnd => {}
                }
                Some(*lie)
            }
            _ => None,
        };
        let (todo, epoch) = (who.claim.map(|c| c.0), who.claim.map(|c| c.1));
        let evidence = |summary: &str| NewEvidence {
            kind: EvidenceKind::Note,
            summary: summary.to_owned(),
            detail: String::new(),
            files: vec![],
            todo,
            slice: Some(who.slice),
            epoch,
            work: None,
            metric: None,
        };
        let op = match report {
            Report::Evidence | Report::Forged(_) => Op::EvidenceAdd(evidence("simulated evidence")),
            Report::Handoff => Op::HandoffAdd(NewHandoff {
                todo,
                done: "simulated progress".to_owned(),
                next: "carry on".to_owned(),
                files: vec![],
                questions: vec![],
                slice: Some(who.slice),
                epoch,
            }),
            // What `loopx report done` writes (`loopx_kernel::report`): a note; the slice's end
            // finishes the todo, as for a real agent.
            Report::Done => {
                let reporter = loopx_kernel::report::Reporter {
                    slice: who.slice,
                    agent: who.agent.clone(),
                    claim: who.claim,
                };
                match reporter.batch(loopx_kernel::report::AgentReport::Done { summary: None }) {
                    Ok(mut batch) => batch.pop().expect("the note after the guard"),
                    Err(_) => return Ok(()),
                }
            }
            Report::Ask => Op::GateAsk(NewGate {
                question: "Should the simulated agent go on this way?".to_owned(),
                options: vec!["yes".to_owned(), "no".to_owned()],
                context: format!("asked by {} in slice {}", who.agent, who.slice),
                blocks: match todo {
                    Some(t) => loopx_kernel::model::Blocks::Todos(vec![t]),
                    None => loopx_kernel::model::Blocks::Agent(who.agent.clone()),
                },
                kind: GateKind::Question,
            }),
        };
        let guard = Op::InSlice {
            slice: who.slice,
            agent: who.agent.clone(),
            todo,
            epoch,
        };
        let before = read_todo(&self.project, todo);
        let now = self.clock.now();
        let actor = loopx_vocab::actor::agent(who.agent.as_str());
        let project = self.project.clone();
        let applied = Self::others_store(&project, &self.others)
            .and_then(|s| s.apply_all(vec![guard, op], &actor, now));
        match applied {
            Ok(mut applied) => {
                match report {
                    Report::Done => {
                        self.reported_done.insert(who.slice);
                    }
                    _ => *self.reported.entry(who.slice).or_default() += 1,
                }
                let record = applied.pop().expect("two operations");
                crate::invariants::report_accepted(self, &who, forged, before.as_ref(), &record)?;
            }
            Err(_) if forged.is_some() => self.books.forgeries_refused += 1,
            Err(_) => self.books.reports_refused += 1,
        }
        Ok(())
    }

    /// Starts the simulated agent of a begun slice.
    fn launch(&mut self, worker: usize, once: RunOnce, begun: loopx_supervisor::BegunSlice) {
        let record = begun.record().clone();
        let name = record.agent.to_string();
        let (account, index) = self.agents.get(&name).cloned().expect("a scenario agent");
        let limits = begun.plan().limits.clone();
        let sim = begun.simulate(&once);
        let forced = self.vendor_forces(&account);
        // A window opens with the first request of a slice, at its start, for the vendor as for
        // loopx's admission.
        self.vendor_spend(&account, 0);
        let wall = self.clock.now();
        // (An admission is never lost: it is recorded with the slice's begin.)
        self.books.charge(&account, wall, 0, 0);
        self.books.launched.insert(record.id.0);
        let mut act = match forced {
            Some((act, _)) => act,
            None => pick(&mut self.rng_agents, &self.plan.scenario.behaviour),
        };
        let step = self.experiment_step(record.todo);
        if let Some(step) = step {
            // Before its job ended an evaluation can only look.
            if matches!(step, crate::experiments::Step::Look { .. })
                && matches!(act, Act::Completes | Act::Progress)
            {
                act = Act::Progress;
            }
            self.experiments.started(step, self.clock.true_now());
        }
        let setting = Setting {
            kind: record.kind,
            has_todo: record.todo.is_some(),
            max_time: limits.max_time.min(self.plan.max_time[index]),
            idle: limits.idle_timeout,
            now: self.clock.true_now(),
            experiment: step,
            max_tokens: limits.max_tokens,
            edits: self.plan.scenario.people.edit_per_day > 0.0,
            replan: self.replan_for(&record),
            handback: self.handback_for(&record),
        };
        if setting.replan.as_ref().is_some_and(|r| r.replanning) {
            self.books.replanners.insert(record.id.0);
        }
        let reset = forced.and_then(|(_, until)| until);
        let script = crate::agent::script(
            act,
            &setting,
            &self.plan.scenario.behaviour,
            reset,
            &mut self.rng_agents,
        );
        if act == Act::NotLoggedIn {
            self.vendors.get_mut(&account).expect("account").logged_out = true;
        }
        // Stopped at its token ceiling, a slice finished nothing (nor started its job).
        if script.cut_at_ceiling && act == Act::Completes {
            act = Act::Progress;
        }
        // A limit is the account's, from the request the vendor refused: a slice starting on
        // the account meanwhile meets the same limit and is told the same reset. (Drawn at the
        // end, two slices begun together had each announced a reset of its own, and the vendor
        // kept the last one to end: loopx, holding until the later, was judged late.)
        if let Some(reset) = script.reset {
            self.vendors
                .get_mut(&account)
                .expect("account")
                .limited_until = Some(reset);
        }
        let id = record.id.0;
        let by = Reporter {
            slice: record.id,
            agent: record.agent.clone(),
            claim: record.todo.zip(record.epoch),
        };
        for (at, report) in &script.reports {
            self.schedule(
                *at,
                Event::Report {
                    by: by.clone(),
                    report: report.clone(),
                },
            );
        }
        if record.todo.is_some() {
            self.schedule(sim.lease_ttl() / 3, Event::Renew { slice: id });
        }
        self.schedule(script.duration, Event::End { slice: id });
        self.books.slice_started(act);
        self.running.insert(
            id,
            Running {
                worker,
                once,
                slice: sim,
                script,
                account,
                act,
                step,
            },
        );
    }

    /// Where people amend the goal: what `record`'s agent may name to drop or rewrite, and
    /// whether its slice is the planning one after an amendment, by the store as it began.
    fn replan_for(
        &self,
        record: &loopx_kernel::model::SliceRecord,
    ) -> Option<crate::agent::Replan> {
        if self.plan.scenario.people.amend_per_day <= 0.0 {
            return None;
        }
        let store = Store::open_read(&self.project).ok()?;
        let (goal, todos) = store
            .read(|s| Ok((crate::invariants::goal_of(s, record)?, s.todos()?)))
            .ok()?;
        let goal = goal?;
        let due = store
            .read(|s| s.goal_replan_after(goal.id))
            .ok()
            .flatten()
            .is_some_and(|after| record.id.0 > after);
        let open = todos
            .iter()
            .filter(|t| t.goal == goal.id && !t.state.is_final() && !t.is_monitor())
            .filter(|t| Some(t.id) != record.todo)
            .map(|t| t.id.0)
            .collect();
        Some(crate::agent::Replan {
            replanning: due && record.kind == loopx_kernel::model::SliceKind::Plan,
            open,
        })
    }

    /// With executor/reviewer pairs: the round `record`'s todo proposes once finished. A work
    /// slice on a round past `[limits] handbacks` with no person asked breaks `handbacks_asked`.
    fn handback_for(
        &mut self,
        record: &loopx_kernel::model::SliceRecord,
    ) -> Option<serde_json::Value> {
        let spec = self.plan.scenario.handbacks.as_ref()?;
        let (limit, back_percent) = (spec.limit, spec.back_percent);
        let todo = read_todo(&self.project, record.todo)?;
        if let Err(why) = self.books.handbacks.began(record, &todo, limit) {
            let now = self.clock.true_now();
            crate::handbacks::halt(&self.books, now, why).raise(&self.supervisor);
        }
        let hands_back = self.rng_handbacks.u32(0..100) < back_percent;
        crate::handbacks::successor(&todo, hands_back)
    }

    /// What a slice on `todo` does for an experiment, if it is an experiment's todo.
    fn experiment_step(&self, todo: Option<TodoId>) -> Option<crate::experiments::Step> {
        use crate::experiments::{Step, parse_title};
        self.plan.scenario.experiments.as_ref()?;
        let (n, run) = parse_title(&read_todo(&self.project, todo)?.title)?;
        if run {
            let every = self
                .plan
                .baseline
                .is_none()
                .then_some(self.plan.monitor_every);
            return Some(Step::Run { n, every });
        }
        let ended = self
            .experiments
            .jobs
            .get(&n)
            .is_some_and(|job| job.ends_at <= self.clock.true_now());
        Some(match ended {
            true => Step::Evaluate { n },
            false => Step::Look { n },
        })
    }

    /// Job `n` starts now (once: a run retried after its writeback was lost starts no other).
    fn start_job(&mut self, n: u32) {
        if self.experiments.jobs.contains_key(&n) {
            return;
        }
        let Some(spec) = &self.plan.scenario.experiments else {
            return;
        };
        let runs = Self::uniform(&mut self.rng_jobs, self.plan.job_hours);
        let ok = self.rng_jobs.u32(0..100) >= spec.fail_percent;
        let ends_at = self.clock.true_now().plus(runs);
        self.experiments
            .jobs
            .insert(n, crate::experiments::Job { ends_at, ok });
    }

    /// The slices whose agents run now.
    pub(crate) fn running_ids(&self) -> BTreeSet<u64> {
        self.running.keys().copied().collect()
    }

    /// The agents of `account`.
    pub(crate) fn agents_of(&self, account: &str) -> Vec<String> {
        self.agents
            .iter()
            .filter(|(_, (a, _))| a == account)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Whether the store records `slice` as ended.
    fn slice_ended(&self, slice: SliceId) -> bool {
        Store::open_read(&self.project)
            .and_then(|s| s.read(|s| s.slice(slice)))
            .ok()
            .flatten()
            .is_some_and(|r| r.ended_at.is_some())
    }

    /// The accounts of the slices running now.
    pub(crate) fn running_accounts(&self) -> Vec<&str> {
        self.running.values().map(|r| r.account.as_str()).collect()
    }

    pub(crate) fn account_of(&self, agent: &str) -> Option<&str> {
        self.agents.get(agent).map(|(a, _)| a.as_str())
    }
}

impl Host for SimHost {
    fn clock(&self) -> SharedClock {
        self.clock.clone()
    }

    fn start(&mut self, idx: usize, once: RunOnce) -> Result<(), String> {
        self.books.step += 1;
        let mut msgs = Vec::new();
        let mut decided = Vec::new();
        let begun = begin_once(&once, &mut |step| {
            if let Step::Decided {
                agent, decision, ..
            } = &step
            {
                decided.push((agent.to_string(), (*decision).clone()));
            }
            if let Some(msg) = Msg::from_step(idx, &step) {
                msgs.push(msg);
            }
        });
        let now = self.clock.true_now();
        let wall = self.clock.now();
        for (agent, decision) in decided {
            self.books.decided(&agent, &decision, now);
            if let Some(account) = self.account_of(&agent).map(str::to_owned)
                && crate::invariants::resumes(&decision)
            {
                crate::invariants::note_decision(&mut self.books, &account, wall);
            }
        }
        self.inbox.extend(msgs);
        match begun {
            Ok(Begin::Done(once)) => self.inbox.push_back(Msg::Done(idx, Ok(*once))),
            Ok(Begin::Running(begun)) => {
                let record = begun.record().clone();
                if let Err(halt) = crate::invariants::at_begin(self, &record) {
                    halt.raise(&self.supervisor);
                }
                self.stalls.began(record.goal);
                let prompt = match &begun.plan().prompt_delivery {
                    loopx_adapters::PromptDelivery::File { contents, .. }
                    | loopx_adapters::PromptDelivery::Stdin { contents }
                    | loopx_adapters::PromptDelivery::StreamJson { contents } => contents.clone(),
                    // The prompt is the last argument (`… -- PROMPT`).
                    loopx_adapters::PromptDelivery::Argument => {
                        begun.plan().args.last().cloned().unwrap_or_default()
                    }
                };
                if let Err(halt) = crate::invariants::amendment_heard(self, &record, &prompt) {
                    halt.raise(&self.supervisor);
                }
                self.launch(idx, once, *begun);
            }
            Err(e) => self.inbox.push_back(Msg::Done(idx, Err(e))),
        }
        if let Err(halt) = self.check() {
            halt.raise(&self.supervisor);
        }
        Ok(())
    }

    fn next(&mut self, timeout: Duration) -> Option<Msg> {
        if let Some(msg) = self.inbox.pop_front() {
            self.idle_calls = 0;
            return Some(msg);
        }
        let deadline = self
            .now_ms()
            .saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        while let Some((&(at, seq), _)) = self.queue.first_key_value() {
            if at > deadline {
                break;
            }
            let event = self.queue.remove(&(at, seq)).expect("the first event");
            self.clock.advance_to(at);
            if let Err(halt) = self.play(event, true) {
                halt.raise(&self.supervisor);
            }
            if let Some(msg) = self.inbox.pop_front() {
                self.idle_calls = 0;
                return Some(msg);
            }
        }
        if deadline > self.now_ms() {
            self.idle_calls = 0;
        } else {
            self.idle_calls += 1;
            if self.idle_calls > SPIN_LIMIT {
                Halt::new(
                    &self.books,
                    self.clock.true_now(),
                    "no_spin",
                    "the run loop asked for its next message 10,000 times without time passing or anything happening",
                )
                .raise(&self.supervisor);
            }
        }
        self.clock.advance_to(deadline);
        None
    }

    fn recover(
        &mut self,
        project: &Project,
        world: &World,
    ) -> Result<Vec<Recovered>, SupervisorError> {
        let recovered = recover_in(project, world)?;
        self.books.recovered += recovered.len() as u64;
        let launched = self.books.launched.clone();
        for r in &recovered {
            let Ok(id) = r.slice.parse::<SliceId>() else {
                continue;
            };
            self.books.usage_lost.insert(id.0);
            // A slice begun by a supervisor that died before it launched the agent: its
            // admission opened the account's window all the same.
            if !launched.contains(&id.0)
                && let Some(account) = self.account_of(&r.agent).map(str::to_owned)
                && let Ok(Some(record)) =
                    Store::open_read(project).and_then(|s| s.read(|s| s.slice(id)))
            {
                self.books.admitted_unseen(&account, record.started_at);
            }
        }
        if let Err(halt) = crate::invariants::after_recovery(self) {
            halt.raise(&self.supervisor);
        }
        Ok(recovered)
    }

    fn random(&mut self, range: Range<u64>) -> u64 {
        self.rng_loop.u64(range)
    }

    /// Polls run at once, on the coordinator's thread and the virtual clock; a check is the
    /// job's state, with no process. Only a scenario of experiments has monitors to poll.
    fn start_polls(&mut self, job: loopx_supervisor::poll::PollJob) -> bool {
        if self.plan.scenario.experiments.is_none() {
            return false;
        }
        self.books.step += 1;
        let jobs = self.experiments.jobs.clone();
        let now = self.clock.true_now();
        let result = loopx_supervisor::poll::poll_due_with(
            &job.project,
            &job.world,
            &|| job.stopped(),
            &mut |_todo, monitor, _limit| {
                let (exit, output) = crate::experiments::check(&jobs, now, &monitor.check);
                loopx_supervisor::poll::CheckRun {
                    exit: Some(exit),
                    failed: None,
                    output: output.into_bytes(),
                }
            },
        );
        if let Ok(polled) = &result {
            self.experiments.polls += polled.polls.len() as u64;
        }
        self.inbox.push_back(Msg::Polled(result));
        if let Err(halt) = self.check() {
            halt.raise(&self.supervisor);
        }
        true
    }
}

/// Draws an act by the scenario's weights.
fn pick(rng: &mut fastrand::Rng, behaviour: &crate::scenario::Behaviour) -> Act {
    let weights = behaviour.weights();
    let total: u64 = weights.iter().map(|(_, w)| u64::from(*w)).sum();
    let mut at = rng.u64(..total);
    for (act, w) in weights {
        if at < u64::from(w) {
            return act;
        }
        at -= u64::from(w);
    }
    unreachable!("a draw below the total falls on a weight")
}

/// The end of the first line (the `system/init` event).
fn first_line(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |i| i + 1)
}

/// A todo as the store has it now.
pub(crate) fn read_todo(
    project: &Project,
    todo: Option<TodoId>,
) -> Option<loopx_kernel::model::Todo> {
    let todo = todo?;
    Store::open_read(project)
        .and_then(|s| s.read(|s| s.todo(todo)))
        .ok()
        .flatten()
}

/// Whether `applied` is the record of an acknowledged report, and its id.
pub(crate) fn acknowledged(applied: &Applied) -> Option<(&'static str, u64)> {
    match applied {
        Applied::Evidence(e) => Some(("evidence", e.id.0)),
        Applied::Handoff(h) => Some(("handoff", h.id.0)),
        Applied::Gate(g) => Some(("gate", g.id.0)),
        Applied::Todo(t) if t.state == TodoState::Done => Some(("done", t.id.0)),
        _ => None,
    }
}
