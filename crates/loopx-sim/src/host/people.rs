//! The simulated people: they look at the open gates now and then and answer them, amend the
//! goal, edit and take back todos, hold back one of several goals with a question, and step
//! the machine's clock — each through the real kernel operation a person's command makes.

use super::*;
use loopx_kernel::model::GateState;
use loopx_kernel::store::{AnswerChoice, AnswerGate, ReleaseClaim};

/// How often the simulated people look at the open gates.
const PEOPLE_LOOK_EVERY: Duration = Duration::from_secs(5 * 60);

impl SimHost {
    pub(super) fn people_look(&mut self) {
        self.schedule(PEOPLE_LOOK_EVERY, Event::PeopleLook);
        let gates = Store::open_read(&self.project)
            .and_then(|s| s.read(|s| s.gates()))
            .unwrap_or_default();
        for gate in gates {
            if gate.state == GateState::Open && self.seen_gates.insert(gate.id) {
                let after = Self::uniform(&mut self.rng_people, self.plan.answer_after);
                self.books.questions += 1;
                self.schedule(after, Event::Answer { gate: gate.id });
            }
        }
    }

    pub(super) fn answer(&mut self, id: GateId) {
        let gate = Store::open_read(&self.project).and_then(|s| s.read(|s| s.gate(id)));
        let Ok(Some(gate)) = gate else { return };
        if gate.state != GateState::Open {
            return;
        }
        if let GateKind::Login { account } = &gate.kind {
            // The person logs in before answering.
            if let Some(vendor) = self.vendors.get_mut(account) {
                vendor.logged_out = false;
            }
            // Their answer lifts the account's whole hold, a vendor reset merged into it too
            // (by design: a person's word; the next slice is a probe): not judged.
            self.books.disturb_account(account);
        }
        let choice = match gate.options.is_empty() {
            true => AnswerChoice::Text("go ahead".to_owned()),
            false => AnswerChoice::Option(1),
        };
        let op = Op::GateAnswer(AnswerGate {
            gate: id,
            choice,
            slice: None,
            note: None,
        });
        let (project, now) = (self.project.clone(), self.clock.now());
        let answered =
            Self::others_store(&project, &self.others).and_then(|s| s.apply(op, "human:sim", now));
        match answered {
            Ok(_) => {
                self.books.answered += 1;
                self.stall_answered(&gate.kind);
            }
            // A busy store: the person tries again in a minute.
            Err(_) => self.schedule(Duration::from_secs(60), Event::Answer { gate: id }),
        }
    }

    /// A person's answer (`retry`) to a stall question on a round of an executor/reviewer chain
    /// counts the chain's rounds afresh (`handbacks.rs`).
    fn stall_answered(&mut self, kind: &GateKind) {
        let (GateKind::Stall { todo }, Some(spec)) = (kind, &self.plan.scenario.handbacks) else {
            return;
        };
        if let Some(todo) = read_todo(&self.project, Some(*todo)) {
            self.books.handbacks.answered(&todo, spec.limit);
        }
    }

    /// A person rewrites the goal's objective (`loopx goal amend`), as `human:sim`.
    pub(super) fn amend(&mut self) {
        let rate = self.plan.scenario.people.amend_per_day;
        self.schedule_rate(rate, Event::Amend);
        let (project, now) = (self.project.clone(), self.clock.now());
        // The first active goal (with several, the one of the highest priority).
        let Some(goal) = Store::open_read(&project)
            .and_then(|s| s.read(|s| s.current_goal()))
            .ok()
            .flatten()
        else {
            return;
        };
        let objective = format!(
            "{} (revision {})",
            goal.objective
                .split(" (revision ")
                .next()
                .unwrap_or_default(),
            goal.revision + 1
        );
        let op = Op::GoalAmend(loopx_kernel::store::AmendGoal {
            objective: Some(objective),
            why: "the simulation's person changed their mind".to_owned(),
            goal: Some(goal.id),
            ..Default::default()
        });
        if let Ok(Applied::Amended { revision, .. }) =
            Self::others_store(&project, &self.others).and_then(|s| s.apply(op, "human:sim", now))
        {
            self.books.amendments += 1;
            self.books.replan_after = Some((goal.id, revision.after_slice));
        }
    }

    /// A person changes the file in the goal's scope and commits it: every test result
    /// recorded before is about other code from now on.
    pub(super) fn edit(&mut self) -> Result<(), Halt> {
        let rate = self.plan.scenario.people.edit_per_day;
        self.schedule_rate(rate, Event::Edit);
        let newest = Store::open_read(&self.project)
            .and_then(|s| s.read(|s| s.evidence_newest(1, |_| true)))
            .map(|e| e.first().map_or(0, |e| e.id.0));
        let Ok(newest) = newest else {
            return Ok(());
        };
        let root = self.project.root().to_path_buf();
        let n = self.books.edits + 1;
        let edited = std::fs::write(
            root.join(crate::setup::EDITED),
            format!("// edited {n} times\n"),
        )
        .map_err(|e| e.to_string())
        .and_then(|()| crate::setup::commit(&root, &format!("edit {n}")));
        if let Err(why) = edited {
            return crate::invariants::halt(
                self,
                "loop_ends_cleanly",
                format!("the simulation's person could not commit: {why}"),
            );
        }
        self.books.edits = n;
        self.books.evidence_before_edit = newest;
        Ok(())
    }

    /// A person asks a question about goal `index` of the scenario that holds back only that
    /// goal (`Blocks::Goal`) until someone answers it, like any gate (`[people] answer_after`).
    pub(super) fn hold(&mut self, index: usize) {
        let rate = self.plan.scenario.goals[index].hold_per_day;
        self.schedule_rate(rate, Event::Hold { goal: index });
        let goal = self.goals[index];
        let active = Store::open_read(&self.project)
            .and_then(|s| s.read(|s| s.goal(goal)))
            .ok()
            .flatten()
            .is_some_and(|g| g.status == loopx_kernel::model::GoalStatus::Active);
        if !active {
            return;
        }
        let op = Op::GateAsk(loopx_kernel::store::NewGate {
            question: format!("Should goal {goal} go on as it is?"),
            options: vec![],
            context: "the simulation's person holds this goal back until they answer".to_owned(),
            blocks: loopx_kernel::model::Blocks::Goal(goal),
            kind: GateKind::Question,
        });
        let (project, now) = (self.project.clone(), self.clock.now());
        if Self::others_store(&project, &self.others)
            .and_then(|s| s.apply(op, "human:sim", now))
            .is_ok()
        {
            self.books.holds_asked += 1;
        }
    }

    pub(super) fn take_back(&mut self) {
        let rate = self.plan.scenario.people.take_back_per_day;
        self.schedule_rate(rate, Event::TakeBack);
        let claimed: Vec<_> = self
            .running
            .values()
            .filter_map(|r| r.slice.record().todo.zip(r.slice.record().epoch))
            .collect();
        if claimed.is_empty() {
            return;
        }
        let (todo, epoch) = claimed[self.rng_people.usize(..claimed.len())];
        let Some(lease) = read_todo(&self.project, Some(todo)).and_then(|t| t.lease) else {
            return;
        };
        if lease.epoch != epoch {
            return;
        }
        let op = Op::TodoRelease(ReleaseClaim {
            todo,
            agent: lease.agent,
            epoch,
        });
        let (project, now) = (self.project.clone(), self.clock.now());
        if Self::others_store(&project, &self.others)
            .and_then(|s| s.apply(op, "human:sim", now))
            .is_ok()
        {
            self.books.taken_back += 1;
        }
    }

    pub(super) fn clock_step(&mut self) {
        let rate = self.plan.scenario.faults.clock_steps_per_day;
        self.schedule_rate(rate, Event::ClockStep);
        let most = self.plan.clock_step.as_millis().max(1000) as i64;
        let by = self.rng_people.i64(1000..=most) * if self.rng_people.bool() { 1 } else { -1 };
        self.clock.step(by);
        self.books.faults.clock_steps += 1;
        self.books.clock_stepped();
    }
}
