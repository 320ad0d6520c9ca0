//! The last stage: write back what the slice did, and the summary of the slice it yields.
//!
//! What the batch holds, how it is applied and the summary it yields are the domain's
//! (`loopx_domain::writeback`); here the slice's facts are gathered (its landing, its log's
//! digest, its usage), and the whole batch is tried again for a while when the store is busy
//! or full (the guard's patience). Only after the end is recorded is the slice's guard
//! disarmed.

use loopx_adapters::Outcome;
use loopx_kernel::model::ClaimStanding;
use loopx_kernel::{AgentName, Clock, KernelError, Project, SliceId, StoreError, TodoId};

use crate::errors::SupervisorError;
use crate::once::RunOnce;
use crate::slice::{Begun, actor, patience, retrying};
use loopx_domain::judge::{AgentEnd, Judged};
pub use loopx_domain::writeback::SliceSummary;
use loopx_domain::writeback::{self, Finished};
use loopx_git::Git;
use loopx_git::worktree::{Landing, SliceCommit};

impl Begun {
    /// Writes the slice back, its agent having ended as `end` says and the slice judged
    /// `judged`; the guard is disarmed once its end is recorded.
    pub(crate) fn write_back(
        mut self,
        req: &RunOnce,
        mut end: AgentEnd,
        mut judged: Judged,
    ) -> Result<SliceSummary, SupervisorError> {
        let reported = end.reported;
        let mut reported_done = reported.done;
        loopx_domain::judge::progress::check(&mut judged, &end.changes, reported);
        loopx_domain::judge::progress::name_channel(&mut judged, reported);
        loopx_domain::judge::verified::check(
            &req.project,
            &|read| {
                req.world
                    .stores
                    .with(&req.project, |store| store.read(read))
            },
            req.world.clock.now(),
            self.record.todo,
            &mut judged,
            &mut reported_done,
        );
        let tree = self.tree.as_ref().and_then(|t| t.as_ref().ok());
        if writeback::reports_work_evidence(judged.classification.as_ref()) {
            let dir = tree.map_or_else(|| req.project.root().to_path_buf(), |p| p.tree.workdir());
            end.changes.work = loopx_git::work::mark_or_unknown(Git::of(&req.project), &dir);
        }
        let setup = &self.setup;
        let landing = landing(
            req,
            &self,
            &judged,
            (reported_done, end.commit.as_ref()),
            self.renewal.as_ref(),
        );
        // The landing is over: the writeback finishes or releases the claim.
        if let Some(renewal) = self.renewal.take() {
            renewal.finish();
        }
        let limited_before = match judged.outcome {
            Outcome::UsageLimited => limits_in_a_row(req, &setup.agent.name, self.record.id),
            _ => 0,
        };
        let adapter = &setup.loaded.adapter;
        let log = self.record.log.as_deref().unwrap_or_default();
        let finished = Finished {
            record: &self.record,
            end: &end,
            judged: &judged,
            cli: loopx_domain::writeback::CliFixes {
                adapter: &adapter.name,
                login: adapter.login.as_deref(),
                install: adapter.install.as_deref(),
            },
            limited_before,
            log_sha256: file_sha256(&crate::slice::slice_log_path(req, log)),
            redactor: Some(&self.redactor),
            quota: self.spent(&end),
            reported_done,
            agents_close_goals: crate::notify::project_config(&req.project)
                .is_ok_and(|c| c.agents_close_goals),
            tree,
            landing,
        };
        match write_back(
            &req.world.stores,
            &req.project,
            &*req.world.clock,
            &actor(setup),
            &finished,
        ) {
            Ok(mut summary) => {
                self.guard.disarm();
                summary.disk_full = judged.disk_full.clone();
                // Done: its branch landed and stays; its worktree is no longer needed.
                if let (Some(_), Some(goal), Some(todo)) = (tree, &self.goal, self.record.todo)
                    && summary.todo_state == Some("done")
                    && let Err(e) = loopx_git::worktree::remove(&req.project, goal.id, todo)
                {
                    tracing::warn!(%todo, error = %e, "cannot remove a done todo's worktree");
                }
                Ok(summary)
            }
            Err(e) => {
                let reason = format!(
                    "its writeback could not be recorded: {}",
                    crate::errors::chain(&e)
                );
                let slice = self.record.id.to_string();
                // Busy, or its database away for longer than the patience: passing, like busy.
                let busy = matches!(
                    &e,
                    KernelError::Store(
                        StoreError::Busy { .. }
                            | StoreError::Unavailable { .. }
                            | StoreError::CommitUnknown { .. }
                    )
                );
                match (self.guard.interrupt(&reason), busy) {
                    // The store only stayed busy: the next slice repairs the todo.
                    (Ok(()), true) => Err(e.into()),
                    // A full disk (or worse) would lose the next slice's work the same way.
                    (Ok(()), false) => Err(SupervisorError::WritebackLost { slice, source: e }),
                    (Err(_), _) => Err(SupervisorError::Unrecorded { slice, source: e }),
                }
            }
        }
    }
}

/// A worktree goal's todo slice's landing on the goal's branch, when the agent reported the
/// todo done, changed nothing it may not, and still holds it.
fn landing(
    req: &RunOnce,
    begun: &Begun,
    judged: &Judged,
    (reported_done, commit): (bool, Option<&SliceCommit>),
    renewal: Option<&crate::renew::Renewal>,
) -> Option<Landing> {
    let goal = begun.goal.as_ref()?;
    let claimed_done = reported_done
        || (judged.outcome == Outcome::Completed
            && judged.classification.as_ref().is_some_and(|c| c.done));
    match (commit, begun.record.todo, begun.record.epoch) {
        (Some(c), Some(todo), Some(epoch)) if claimed_done && c.changes.violations().is_empty() => {
            held_todo(req, todo, &begun.setup.agent.name, epoch).map(|title| {
                let held = || renewal.is_none_or(|r| r.lost().is_none());
                loopx_domain::land::land_todo(
                    &req.project,
                    &req.loopx_exe,
                    goal,
                    todo,
                    &title,
                    &held,
                )
            })
        }
        _ => None,
    }
}

/// The title of `todo` while `agent` still holds it under `epoch`: a slice that lost its
/// claim lands nothing.
fn held_todo(req: &RunOnce, todo: TodoId, agent: &AgentName, epoch: u64) -> Option<String> {
    let found = retrying(&*req.world.clock, patience(&req.project), || {
        req.world
            .stores
            .with(&req.project, |store| store.read(|s| s.todo(todo)))
    });
    match found {
        Ok(Some(t)) if t.claim_of(agent, epoch) == ClaimStanding::Held => Some(t.title),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(%todo, error = %e, "cannot read the todo before landing it");
            None
        }
    }
}

/// How many of `agent`'s slices before `slice` ended `usage_limited` in a row
/// ([`writeback::limits_in_a_row`]); a store that cannot be read counts none (the shortest
/// backoff).
fn limits_in_a_row(req: &RunOnce, agent: &AgentName, slice: SliceId) -> u32 {
    let tail = req.world.stores.with(&req.project, |store| {
        store.read(|s| s.slices_tail(writeback::LOOK_BACK))
    });
    tail.map_or(0, |tail| writeback::limits_in_a_row(&tail, agent, slice))
}

/// Applies the writeback through the supervisor's handle, retrying while the store is busy or
/// full.
pub(crate) fn write_back(
    stores: &crate::store_cache::StoreCache,
    project: &Project,
    clock: &dyn Clock,
    actor: &str,
    f: &Finished<'_>,
) -> Result<SliceSummary, KernelError> {
    retrying(clock, patience(project), || {
        stores.with(project, |store| {
            writeback::apply(store, actor, f, clock.now())
        })
    })
}

/// SHA-256 of a file, hex; empty when it cannot be read (a slice whose log was never written).
fn file_sha256(path: &std::path::Path) -> String {
    use sha2::Digest;
    let Ok(mut file) = loopx_adapters::open_regular(path) else {
        return String::new();
    };
    let mut hasher = sha2::Sha256::new();
    if std::io::copy(&mut file, &mut hasher).is_err() {
        return String::new();
    }
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use loopx_kernel::store::{Applied, ClaimTodo, NewAgent, ReleaseClaim};
    use loopx_kernel::{Op, SliceId, Store, TodoId};
    use std::time::Duration;

    use loopx_kernel::model::SliceKind;
    use loopx_kernel::store::{Interrupt, NewGoal, NewSlice, QuotaRequest};

    use super::*;

    use loopx_domain::writeback::TestSlice;
    use loopx_kernel::model::PermissionLevel;
    use loopx_kernel::{AgentName, Project, Timestamp};
    use loopx_testkit::todo;

    const T0: Timestamp = Timestamp(1_790_000_000_000);

    fn apply(store: &Store, op: Op) -> Applied {
        store.apply(op, "human:tester", T0).expect("applies")
    }

    /// A project whose agent `exec` holds todo t1 (epoch 1) and runs slice s1 on it.
    fn running_slice() -> (
        tempfile::TempDir,
        Project,
        Store,
        AgentName,
        loopx_kernel::model::Todo,
        loopx_kernel::model::SliceRecord,
        Op,
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = Project::create(dir.path()).expect("project");
        let store = Store::create(&project, T0, "human:tester").expect("store");
        let agent: AgentName = "exec".parse().expect("a name");
        apply(
            &store,
            Op::GoalStart(NewGoal {
                priority: 0,
                id: None,
                objective: "Ship".into(),
                scope: vec![],
                permission: PermissionLevel::WorkspaceWrite,
                share: 1.0,
                isolation: loopx_kernel::model::Isolation::Shared,
            }),
        );
        apply(
            &store,
            Op::AgentAdd(NewAgent {
                name: agent.clone(),
                profile: "demo".into(),
                capabilities: vec![],
                role: None,
            }),
        );
        let new = todo("Write");
        let Applied::Todo(todo) = apply(&store, Op::TodoAdd(new)) else {
            panic!("a todo")
        };
        let claim = Op::TodoClaim(ClaimTodo {
            todo: todo.id,
            agent: agent.clone(),
            ttl: Duration::from_secs(600),
        });
        apply(&store, claim.clone());
        let new = NewSlice {
            goal: None,
            agent: agent.clone(),
            todo: Some(todo.id),
            epoch: Some(1),
            kind: SliceKind::Work,
            profile_hash: "h".into(),
            argv: vec![],
            limit_secs: 60,
            log: None,
            owner: None,
        };
        let Applied::Slice(slice) = apply(&store, Op::SliceStart(new)) else {
            panic!("a slice")
        };
        (dir, project, store, agent, todo, slice, claim)
    }

    /// What the supervisor observed of `slice`: over two seconds (42 tokens spent, as
    /// `write_back_as_exec` writes it back).
    fn finished_on(agent: &AgentName, slice: SliceId, todo: Option<TodoId>) -> TestSlice {
        let mut t = loopx_domain::writeback::test_slice(agent);
        (t.record.id, t.record.todo, t.record.epoch) = (slice, todo, todo.map(|_| 1));
        t.record.started_at = T0;
        t.end.at = T0.plus(Duration::from_secs(2));
        t
    }

    #[test]
    fn a_writeback_after_the_claim_moved_on_records_only_the_slice_and_its_usage() {
        let (_dir, project, store, agent, todo, slice, claim) = running_slice();
        // Someone takes the todo over while the slice runs: the epoch moves to 2.
        apply(
            &store,
            Op::TodoRelease(ReleaseClaim {
                todo: todo.id,
                agent: agent.clone(),
                epoch: 1,
            }),
        );
        apply(&store, claim);
        drop(store);
        let finished = finished_on(&agent, slice.id, Some(todo.id));
        let summary = write_back_as_exec(&project, &finished).expect("the end is written");
        assert_eq!(summary.writeback, "stale_epoch");
        assert_eq!(summary.todo_state, Some("unchanged"));
        let store = Store::open(&project).expect("store");
        let (slice, todo, evidence, spends) = store
            .read(|s| {
                Ok((
                    s.slice(slice.id)?,
                    s.todo(todo.id)?,
                    s.evidence_newest(10, |_| true)?,
                    s.spends_since(T0)?,
                ))
            })
            .expect("reads");
        assert_eq!(
            slice.and_then(|s| s.outcome),
            Some(loopx_kernel::model::Outcome::Completed)
        );
        let todo = todo.expect("the todo");
        assert_eq!(
            (todo.epoch, todo.state.as_str()),
            (3, "claimed"),
            "the new holder keeps it (released at 2, claimed at 3)"
        );
        let kinds: Vec<&str> = evidence.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["slice"],
            "loopx's own record of the slice, nothing of the agent's under the lost claim"
        );
        assert_eq!(
            todo.latest_handoff, None,
            "no handoff for the new holder to read"
        );
        assert_eq!(
            spends.iter().map(|s| s.tokens).sum::<u64>(),
            42,
            "the usage is charged"
        );
    }

    fn write_back_as_exec(project: &Project, t: &TestSlice) -> Result<SliceSummary, KernelError> {
        let finished = Finished {
            quota: QuotaRequest {
                tokens: 42,
                ..loopx_domain::writeback::unpaced_quota(&t.record.agent)
            },
            ..t.finished()
        };
        write_back(
            &crate::store_cache::StoreCache::default(),
            project,
            &*loopx_kernel::SystemClock::shared(Default::default()),
            "agent:exec",
            &finished,
        )
    }

    /// Recovery on a live host closes a slice whose writeback waits for a store that is away
    /// for longer than the claim's lease, as recovery does (`loopx:recovery`).
    fn recovered(store: &Store, slice: SliceId) {
        store
            .apply(
                Op::SliceInterrupt(Interrupt {
                    slice,
                    reason: "its claim lapsed: host h2 stopped renewing it".into(),
                    exit: Some("host gone".into()),
                    output_bytes: 0,
                    usage: None,
                }),
                "loopx:recovery",
                T0.plus(Duration::from_secs(700)),
            )
            .expect("recovery closes the slice");
    }

    /// The usage, evidence kinds and recorded outcome of `slice` after a writeback.
    fn afterwards(
        project: &Project,
        slice: SliceId,
    ) -> (Option<loopx_kernel::model::Outcome>, Vec<String>, u64) {
        let store = Store::open(project).expect("store");
        store
            .read(|s| {
                Ok((
                    s.slice(slice)?.and_then(|s| s.outcome),
                    s.evidence_newest(10, |_| true)?
                        .iter()
                        .map(|e| e.kind.as_str().to_owned())
                        .collect(),
                    s.spends_since(T0)?.iter().map(|s| s.tokens).sum(),
                ))
            })
            .expect("reads")
    }

    #[test]
    fn a_writeback_after_recovery_closed_the_slice_keeps_recoverys_record_and_goes_on() {
        let (_dir, project, store, agent, todo, slice, _) = running_slice();
        recovered(&store, slice.id);
        drop(store);
        let finished = finished_on(&agent, slice.id, Some(todo.id));
        let summary = write_back_as_exec(&project, &finished)
            .expect("a superseded writeback is not an error");
        assert_eq!(summary.writeback, "superseded");
        assert_eq!(summary.todo_state, Some("unchanged"));
        let (outcome, kinds, tokens) = afterwards(&project, slice.id);
        assert_eq!(
            outcome,
            Some(loopx_kernel::model::Outcome::Interrupted),
            "recovery's record stands"
        );
        assert_eq!(
            kinds,
            ["slice", "slice"],
            "the supervisor's record of what ran (exit, log digest) beside recovery's"
        );
        assert_eq!(tokens, 42, "the usage is charged");
    }

    #[test]
    fn a_planning_slice_closed_by_recovery_is_superseded_too() {
        let (_dir, project, store, agent, todo, slice, _) = running_slice();
        // The work slice ends; then a planning slice runs and is recovered.
        recovered(&store, slice.id);
        let new = NewSlice {
            goal: None,
            agent: agent.clone(),
            todo: None,
            epoch: None,
            kind: SliceKind::Plan,
            profile_hash: "h".into(),
            argv: vec![],
            limit_secs: 60,
            log: None,
            owner: None,
        };
        let Applied::Slice(plan) = apply(&store, Op::SliceStart(new)) else {
            panic!("a slice")
        };
        recovered(&store, plan.id);
        drop(store);
        let _ = todo;
        let finished = finished_on(&agent, plan.id, None);
        let summary = write_back_as_exec(&project, &finished)
            .expect("a superseded writeback is not an error");
        assert_eq!(summary.writeback, "superseded");
        assert_eq!(summary.todo_state, None);
        let (outcome, _, tokens) = afterwards(&project, plan.id);
        assert_eq!(outcome, Some(loopx_kernel::model::Outcome::Interrupted));
        assert_eq!(tokens, 42);
    }

    mod any_report {
        use loopx_adapters::{
            Classification, Outcome, Report, ReportEvidence, ReportQuestion, ReportStatus,
            ReportTodo,
        };
        use loopx_kernel::model::TodoState;
        use loopx_kernel::store::BeginSlice;
        use proptest::prelude::*;

        use super::*;

        /// Any text an agent might write: empty, blank, unicode, control characters, far past
        /// every limit of the kernel, and credentials whose redaction marker is longer than
        /// they are, at every length around the limits.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => "(?s).{0,120}",
                1 => Just(String::new()),
                1 => Just("   \n\t".to_owned()),
                1 => "[a-z]{1,8}( [A-Z][a-z]{1,8}){0,3}",
                1 => (1usize..3).prop_map(|n| "ü".repeat(n * 9_000)),
                2 => (0usize..1_100).prop_map(|n| format!("{} postgres://app:pw@db/app?", "q".repeat(n))),
            ]
        }

        fn report() -> impl Strategy<Value = Report> {
            (
                prop_oneof![
                    Just(ReportStatus::Done),
                    Just(ReportStatus::Progress),
                    Just(ReportStatus::Blocked)
                ],
                text(),
                proptest::collection::vec((proptest::option::of(text()), text()), 0..40),
                proptest::option::of(text()),
                proptest::collection::vec(
                    (
                        text(),
                        proptest::option::of(text()),
                        proptest::option::of(text()),
                    ),
                    0..40,
                ),
                proptest::option::of((text(), proptest::collection::vec(text(), 0..80))),
            )
                .prop_map(|(status, summary, evidence, handoff, todos, question)| {
                    Report {
                        status,
                        summary,
                        evidence: evidence
                            .into_iter()
                            .map(|(kind, summary)| ReportEvidence { kind, summary })
                            .collect(),
                        handoff,
                        next_todos: todos
                            .into_iter()
                            .map(|(title, detail, role)| ReportTodo {
                                title,
                                detail,
                                role,
                                ..ReportTodo::default()
                            })
                            .collect(),
                        question: question.map(|(text, options)| ReportQuestion { text, options }),
                        propose_goal: None,
                        drop_todos: vec![],
                        rewrite_todos: vec![],
                        metrics: None,
                    }
                })
        }

        /// A project with a goal, agent `exec` and a slice it began on t1.
        fn begun(
            dir: &std::path::Path,
        ) -> (Project, loopx_kernel::SliceId, loopx_kernel::TodoId, u64) {
            let project = Project::create(dir).expect("project");
            let store = Store::create(&project, T0, "human:tester").expect("store");
            let agent: AgentName = "exec".parse().expect("a name");
            apply(
                &store,
                Op::GoalStart(NewGoal {
                    priority: 0,
                    id: None,
                    objective: "Ship".into(),
                    scope: vec![],
                    permission: PermissionLevel::WorkspaceWrite,
                    share: 1.0,
                    isolation: loopx_kernel::model::Isolation::Shared,
                }),
            );
            apply(
                &store,
                Op::AgentAdd(NewAgent {
                    name: agent.clone(),
                    profile: "demo".into(),
                    capabilities: vec![],
                    role: Some("executor".into()),
                }),
            );
            let Applied::Todo(todo) = apply(&store, Op::TodoAdd(todo("Write"))) else {
                panic!("a todo")
            };
            let begin = BeginSlice {
                slice: NewSlice {
                    goal: None,
                    agent: agent.clone(),
                    todo: Some(todo.id),
                    epoch: None,
                    kind: SliceKind::Work,
                    profile_hash: "h".into(),
                    argv: vec![],
                    limit_secs: 60,
                    log: None,
                    owner: None,
                },
                claim_ttl: Duration::from_secs(600),
                admit: loopx_domain::writeback::unpaced_quota(&agent),
                messages: vec![],
            };
            let Applied::SliceBegun { slice, .. } = apply(&store, Op::SliceBegin(begin)) else {
                panic!("a slice")
            };
            (project, slice.id, todo.id, slice.epoch.expect("an epoch"))
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

            /// Whatever the agent reports, the writeback lands: the slice ends, its evidence
            /// and a handoff are written, its claim is released or the todo done, and the
            /// kernel stays consistent.
            #[test]
            fn any_report_is_written_back(report in report(), completed in any::<bool>()) {
                let dir = tempfile::tempdir().expect("temp dir");
                let (project, slice, todo, epoch) = begun(dir.path());
                let agent: AgentName = "exec".parse().expect("a name");
                let outcome = if completed { Outcome::Completed } else { Outcome::Progress };
                let done = completed && report.status == ReportStatus::Done;
                let classification = Classification {
                    outcome,
                    reason: "because".into(),
                    report: Some(Ok(report)),
                    question: None,
                    limit: None,
                    done,
                };
                let mut t = loopx_domain::writeback::test_slice(&agent);
                (t.record.id, t.record.todo, t.record.epoch) = (slice, Some(todo), Some(epoch));
                (t.judged.outcome, t.judged.classification) = (outcome, Some(classification));
                t.record.started_at = T0;
                t.end.at = T0.plus(Duration::from_secs(2));
                let summary = write_back(&crate::store_cache::StoreCache::default(), &project, &*loopx_kernel::SystemClock::shared(Default::default()), "agent:exec", &t.finished())
                    .expect("the writeback lands");
                prop_assert_eq!(summary.writeback, "applied", "{:?}", summary);
                let store = Store::open_read(&project).expect("store");
                let (record, todo, handoff, problems) = store
                    .read(|s| {
                        let todo = s.todo(todo)?.expect("the todo");
                        Ok((
                            s.slice(slice)?,
                            todo.clone(),
                            s.latest_handoff(Some(todo.id))?,
                            loopx_kernel::check_consistency(s)?,
                        ))
                    })
                    .expect("reads");
                prop_assert!(record.and_then(|r| r.outcome).is_some(), "the slice ended");
                prop_assert!(todo.state != TodoState::Claimed, "the claim is not left behind");
                prop_assert!(handoff.is_some(), "a handoff");
                prop_assert!(problems.is_empty(), "{:?}", problems);
            }
        }
    }
}
