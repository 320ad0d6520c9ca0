//! The todo indexes (ready by goal, role, priority and age; waiting; claimed; counts) stay in
//! step with the todos through any sequence of operations, and the decision made on the few
//! todos they yield is the decision made on every open todo.

#[path = "support/common.rs"]
mod common;

use std::time::Duration;

use common::{HUMAN, T0, fixture};
use loopx_domain::decision::DecisionState;
use loopx_domain::quota::{AgentView, DecideInput, Decision, TodoView};
use loopx_kernel::model::{Blocks, GateKind, TodoState};
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::{AnswerChoice, Applied, NewGate, NewTodo};
use loopx_kernel::store::{AnswerGate, ClaimTodo, NewAgent, ReleaseClaim};
use loopx_kernel::{AgentName, GateId, Op, Snapshot, Timestamp, TodoId, check_consistency};
use loopx_testkit::todo;
use proptest::prelude::*;

const TTL: Duration = Duration::from_secs(600);

#[derive(Debug, Clone)]
enum Step {
    /// A todo: its priority, role (0 none, 1 reviewer, 2 builder), whether it needs a GPU,
    /// and up to two dependencies (indexes into the todos so far).
    Add {
        priority: i32,
        role: u8,
        gpu: bool,
        after: Vec<u8>,
    },
    /// Many role-less todos at once, so that the ones an agent can take may lie past the
    /// first rows the decision reads.
    Batch {
        count: usize,
        priority: i32,
        gpu: bool,
    },
    Claim {
        todo: u8,
        agent: u8,
    },
    Release {
        todo: u8,
    },
    Finish {
        todo: u8,
        drop: bool,
    },
    /// A gate holding back one todo.
    Gate {
        todo: u8,
    },
    Answer {
        gate: u8,
    },
    /// Time passes (leases expire).
    Advance {
        minutes: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (-2i32..3, 0u8..3, any::<bool>(), proptest::collection::vec(any::<u8>(), 0..3))
            .prop_map(|(priority, role, gpu, after)| Step::Add { priority, role, gpu, after }),
        1 => (20usize..80, -2i32..3, any::<bool>())
            .prop_map(|(count, priority, gpu)| Step::Batch { count, priority, gpu }),
        3 => (any::<u8>(), 0u8..3).prop_map(|(todo, agent)| Step::Claim { todo, agent }),
        1 => any::<u8>().prop_map(|todo| Step::Release { todo }),
        3 => (any::<u8>(), any::<bool>()).prop_map(|(todo, drop)| Step::Finish { todo, drop }),
        1 => any::<u8>().prop_map(|todo| Step::Gate { todo }),
        1 => any::<u8>().prop_map(|gate| Step::Answer { gate }),
        1 => (1u64..20).prop_map(|minutes| Step::Advance { minutes }),
    ]
}

/// The agents: no role and no capabilities; a reviewer with a GPU; a builder.
fn agents() -> Vec<AgentView> {
    let view = |name: &str, role: Option<&str>, caps: &[&str]| AgentView {
        profile_file: None,
        writes: true,
        name: name.parse().expect("an agent name"),
        capabilities: caps.iter().map(|c| (*c).to_owned()).collect(),
        role: role.map(str::to_owned),
        account: "acct".into(),
        pacing: None,
        windows: vec![],
    };
    vec![
        view("plain", None, &[]),
        view("rev", Some("reviewer"), &["gpu"]),
        view("build", Some("builder"), &[]),
    ]
}

/// Every open and claimed todo of the goal as the decision sees it: the whole list, as the
/// decision read it before the indexes.
fn every_todo(s: &Snapshot<'_>) -> Vec<TodoView> {
    let active = s.active_todos().expect("active");
    let live = |id: &TodoId| active.iter().any(|t| t.id == *id);
    active
        .iter()
        .map(|t| TodoView {
            id: t.id,
            title: t.title.clone(),
            priority: t.priority,
            order: t.id.0,
            needs: t.needs.clone(),
            role: t.role.clone(),
            waits_on: t.after.iter().find(|d| live(d)).copied(),
            lease: t
                .lease
                .as_ref()
                .filter(|_| t.state == TodoState::Claimed)
                .map(|l| (l.agent.clone(), l.expires_at.0)),
            running: None,
            attempts_since: t.attempts_since.map(|s| s.0),
            monitor: t.monitor.as_ref().map(|m| m.next_at.0),
            rests_until: t.not_before.map(|at| at.0),
        })
        .collect()
}

/// The parts of a decision that say what happens (a `quiet` names one of several reasons,
/// which depends on the order todos were read in).
fn gist(d: &Decision) -> Decision {
    match d {
        Decision::Quiet { waiting_for, .. } => Decision::Quiet {
            reason: String::new(),
            waiting_for: waiting_for.clone(),
        },
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_indexes_follow_the_todos_and_decide_as_the_whole_list_would(
        steps in proptest::collection::vec(step(), 1..160)
    ) {
        let f = fixture();
        f.goal();
        for view in agents() {
            f.store.apply(Op::AgentAdd(NewAgent {
                name: view.name.clone(),
                profile: "executor".into(),
                capabilities: view.capabilities.clone(),
                role: view.role.clone(),
            }), HUMAN, T0).expect("agent");
        }
        let names: Vec<AgentName> = agents().iter().map(|a| a.name.clone()).collect();
        let mut todos: Vec<TodoId> = Vec::new();
        let mut gates: Vec<GateId> = Vec::new();
        let mut now = T0;
        for step in steps {
            let pick = |i: u8| (!todos.is_empty()).then(|| todos[usize::from(i) % todos.len()]);
            let op = match step {
                Step::Add { priority, role, gpu, after } => Some(Op::TodoAdd(NewTodo {
                    priority,
                    needs: if gpu { vec!["gpu".into()] } else { vec![] },
                    after: after.into_iter().filter_map(pick).collect(),
                    role: match role { 1 => Some("reviewer".into()), 2 => Some("builder".into()), _ => None },
                    ..todo(format!("todo {}", todos.len() + 1))
                })),
                Step::Batch { count, priority, gpu } => {
                    let ops = (0..count).map(|i| Op::TodoAdd(NewTodo {
                        priority,
                        needs: if gpu { vec!["gpu".into()] } else { vec![] },
                        ..todo(format!("batch todo {i}"))
                    })).collect();
                    for applied in f.store.apply_all(ops, HUMAN, now).expect("batch") {
                        if let Applied::Todo(t) = applied { todos.push(t.id) }
                    }
                    None
                }
                Step::Claim { todo, agent } => {
                    let Some(todo) = pick(todo) else { continue };
                    Some(Op::TodoClaim(ClaimTodo { todo, agent: names[usize::from(agent)].clone(), ttl: TTL }))
                }
                Step::Release { todo } => {
                    let Some(id) = pick(todo) else { continue };
                    let t = f.store.read(|s| s.todo(id)).expect("read").expect("todo");
                    let Some(lease) = t.lease else { continue };
                    Some(Op::TodoRelease(ReleaseClaim { todo: id, agent: lease.agent, epoch: lease.epoch }))
                }
                Step::Finish { todo, drop } => {
                    let Some(id) = pick(todo) else { continue };
                    let t = f.store.read(|s| s.todo(id)).expect("read").expect("todo");
                    let (agent, epoch) = t.lease.map(|l| (Some(l.agent), Some(l.epoch))).unwrap_or((None, None));
                    Some(Op::TodoFinish(FinishTodo { todo: id, to: if drop { TodoState::Dropped } else { TodoState::Done }, agent, epoch }))
                }
                Step::Gate { todo } => {
                    let Some(id) = pick(todo) else { continue };
                    Some(Op::GateAsk(NewGate {
                        question: format!("Should {id} keep the v1 wire format or move to v2?"),
                        options: vec![],
                        context: String::new(),
                        blocks: Blocks::Todos(vec![id]),
                        kind: GateKind::Question,
                    }))
                }
                Step::Answer { gate } => {
                    if gates.is_empty() { continue }
                    let gate = gates[usize::from(gate) % gates.len()];
                    Some(Op::GateAnswer(AnswerGate { gate, choice: AnswerChoice::Text("keep v1".into()), slice: None, note: None }))
                }
                Step::Advance { minutes } => {
                    now = Timestamp(now.0 + minutes * 60_000);
                    None
                }
            };
            // Refusals (a todo waiting, claimed, finished, a gate answered) are part of the game.
            match op.map(|op| f.store.apply(op, HUMAN, now)) {
                Some(Ok(Applied::Todo(t))) if !todos.contains(&t.id) => todos.push(t.id),
                Some(Ok(Applied::Gate(g))) => gates.push(g.id),
                _ => {}
            }
            f.store.read(|s| {
                let problems = check_consistency(s)?;
                assert!(problems.is_empty(), "{problems:?}");
                let full = every_todo(s);
                for agent in agents() {
                    let state = DecisionState::read(s, agent.clone(), now)?;
                    let shared = &state.shared;
                    let part = shared.goals.first();
                    let whole = loopx_domain::quota::decide(&DecideInput {
                        now: now.0,
                        agent: &agent,
                        goal: part.map(|p| &p.goal),
                        todos: &full,
                        gates: &shared.gates,
                        slices: &shared.slices,
                        holds: &state.holds,
                        pacing_tat: state.pacing_tat,
                        windows: &state.windows,
                        in_flight: &state.in_flight,
                        busy: part.map_or(&[][..], |p| &p.busy),
                        policy: &shared.policy,
                    });
                    assert_eq!(gist(&state.decide()), gist(&whole), "agent {} over {} todos", agent.name, full.len());
                }
                Ok(())
            }).expect("read");
        }
    }
}

/// A store written by a loopx without the indexes (the index tables and their marker absent)
/// gets them at its first open, read-only included, with every todo where it belongs.
#[test]
fn a_store_from_before_the_indexes_gets_them_at_its_first_open() {
    let f = fixture();
    f.goal();
    let name = f.agent("a");
    let first = f.todo("Write the parser");
    let second = f.todo("Test the parser");
    let waiting = match f
        .store
        .apply(
            Op::TodoAdd(NewTodo {
                after: vec![second],
                ..todo("Ship the parser")
            }),
            HUMAN,
            T0,
        )
        .expect("todo")
    {
        Applied::Todo(t) => t.id,
        other => panic!("expected a todo, got {other:?}"),
    };
    f.store
        .apply(
            Op::TodoClaim(ClaimTodo {
                todo: first,
                agent: name,
                ttl: TTL,
            }),
            HUMAN,
            T0,
        )
        .expect("claim");
    let path = f.project.store_path();
    drop(f.store);
    // What an older loopx left: no index tables, no marker, no counts.
    {
        let db = raw(&path);
        let txn = db.begin_write().expect("write");
        for table in [
            "ready_todos",
            "waiting_todos",
            "todo_dependents",
            "claimed_todos",
        ] {
            let deleted = txn
                .delete_table(redb::TableDefinition::<u64, ()>::new(table))
                .expect("delete");
            assert!(deleted, "{table} existed");
        }
        {
            let mut meta = txn
                .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
                .expect("meta");
            for key in ["todo_index", "todos_open", "todos_claimed"] {
                meta.remove(key).expect("remove");
            }
            meta.insert("schema_version", 1).expect("version 1");
        }
        txn.commit().expect("commit");
    }
    let store = loopx_kernel::Store::open_read(&f.project).expect("the first open builds them");
    store
        .read(|s| {
            assert_eq!(
                s.meta("schema_version")?,
                Some(loopx_kernel::store::SCHEMA_VERSION),
                "upgraded"
            );
            assert_eq!(check_consistency(s)?, Vec::<String>::new());
            let counts = s.todo_counts()?;
            assert_eq!((counts.open, counts.claimed), (2, 1));
            let goal = s.current_goal()?.expect("goal").id;
            let ready: Vec<TodoId> = s
                .ready_todos(goal, None, false, 10)?
                .iter()
                .map(|t| t.id)
                .collect();
            assert_eq!(ready, vec![second]);
            let waits: Vec<TodoId> = s.waiting_todos(goal, 10)?.iter().map(|t| t.id).collect();
            assert_eq!(waits, vec![waiting]);
            assert_eq!(s.waiting_count(goal)?, 1);
            let claimed: Vec<TodoId> = s.claimed_todos()?.iter().map(|t| t.id).collect();
            assert_eq!(claimed, vec![first]);
            Ok(())
        })
        .expect("read");
}

/// Indexes out of step with the todos (written by hand here) are found by the consistency
/// check and rebuilt from the todos (what `loopx doctor --repair` does).
#[test]
fn indexes_out_of_step_are_found_and_rebuilt() {
    let f = fixture();
    f.goal();
    let kept = f.todo("Write the parser");
    let done = f.todo("Test the parser");
    f.store
        .apply(
            Op::TodoFinish(FinishTodo {
                todo: done,
                to: TodoState::Done,
                agent: None,
                epoch: None,
            }),
            HUMAN,
            T0,
        )
        .expect("done");
    let path = f.project.store_path();
    drop(f.store);
    {
        let db = raw(&path);
        let txn = db.begin_write().expect("write");
        {
            // A finished todo listed as ready, and the open one missing.
            let mut ready = txn
                .open_table(redb::TableDefinition::<(u64, &str, u8, i64, u64), ()>::new(
                    "ready_todos",
                ))
                .expect("ready");
            ready.insert((1, "", 0, 0, done.0), ()).expect("insert");
            ready.remove((1, "", 0, 0, kept.0)).expect("remove");
        }
        txn.commit().expect("commit");
    }
    let store = loopx_kernel::Store::open(&f.project).expect("open");
    let problems = store.read(check_consistency).expect("check");
    assert!(
        problems.iter().any(|p| p.starts_with("the todo indexes")),
        "{problems:?}"
    );
    store.rebuild_todo_index().expect("rebuild");
    assert_eq!(
        store.read(check_consistency).expect("check"),
        Vec::<String>::new()
    );
    let goal = store
        .read(|s| s.current_goal())
        .expect("read")
        .expect("goal")
        .id;
    let ready: Vec<TodoId> = store
        .read(|s| s.ready_todos(goal, None, false, 10))
        .expect("read")
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ready, vec![kept]);
}

/// The store file opened with redb alone, as another program (or an older loopx) would.
fn raw(path: &std::path::Path) -> redb::Database {
    redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open(path)
        .expect("raw open")
}
