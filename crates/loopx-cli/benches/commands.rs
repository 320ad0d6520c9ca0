//! Whole-process latency of `loopx` commands on a fresh project and at scale (10,000 todos,
//! 100,000 events), measured by running the release binary as a user would.
//!
//! `cargo bench -p loopx-cli --bench commands [-- --runs N]`. Prints a Markdown table for
//! `docs/benchmarks.md`. The scale fill goes through the kernel's public API in batches, so
//! the store has the shape real use gives it (one event per transition).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loopx_kernel::model::{EvidenceKind, PermissionLevel, TodoState};
use loopx_kernel::store::{NewEvidence, NewTodo};
use loopx_kernel::{AgentName, Op, Project, Store, Timestamp, TodoId};

const LOOPX: &str = env!("CARGO_BIN_EXE_loopx");
const ACTOR: &str = "human:bench";

fn main() {
    let runs = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    println!("| scale | command | median | p90 | runs |");
    println!("|---|---|---|---|---|");
    let fresh = tempfile::tempdir().expect("temp dir");
    fill(fresh.path(), runs as u64, 0, 0);
    measure_all("fresh (a few dozen todos)", fresh.path(), runs);

    let mixed = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    fill(mixed.path(), 10_000, 9_000, 100_000);
    eprintln!(
        "filled 10,000 todos / 100,000 events in {:.1?}",
        started.elapsed()
    );
    measure_all("10k todos (1k open), 100k events", mixed.path(), runs);

    let open = tempfile::tempdir().expect("temp dir");
    fill(open.path(), 10_000, 0, 100_000);
    measure_all("10k todos (all open), 100k events", open.path(), runs);
}

/// A project with `todos` todos, the first `finished` of them done, and padding transitions
/// (renewals, evidence) until the log holds `events` events.
fn fill(dir: &Path, todos: u64, finished: u64, events: u64) {
    let project = Project::create(dir).expect("project");
    let profile = include_str!("../../../profiles/executor.toml");
    std::fs::write(project.state_dir().join("profiles/executor.toml"), profile).expect("profile");
    let store = Store::create(&project, Timestamp::now(), ACTOR).expect("store");
    let now = Timestamp::now();
    let worker: AgentName = "worker".parse().expect("name");
    let mut setup = vec![Op::GoalStart {
        objective: "Benchmark".into(),
        scope: vec!["src/**".into()],
        permission: PermissionLevel::WorkspaceWrite,
        share: 1.0,
        isolation: loopx_kernel::model::Isolation::Shared,
    }];
    for name in ["worker", "bench"] {
        setup.push(Op::AgentAdd {
            name: name.parse().expect("name"),
            profile: "executor".into(),
            capabilities: vec![],
            role: None,
        });
    }
    store.apply_all(setup, ACTOR, now).expect("setup");
    let ids: Vec<u64> = (1..=todos).collect();
    for chunk in ids.chunks(1_000) {
        let ops = chunk
            .iter()
            .map(|i| {
                Op::TodoAdd(NewTodo {
                    goal: None,
                    title: format!(
                        "Todo number {i}: make the thing in module {} better",
                        i % 97
                    ),
                    detail: "Some detail about what to do and why it matters.".into(),
                    priority: (*i % 7) as i32,
                    needs: vec![],
                    after: vec![],
                    role: None,
                })
            })
            .collect();
        store.apply_all(ops, ACTOR, now).expect("add");
    }
    for chunk in ids[..finished as usize].chunks(500) {
        let mut ops = Vec::new();
        for i in chunk {
            ops.push(Op::TodoClaim {
                todo: TodoId(*i),
                agent: worker.clone(),
                ttl: Duration::from_secs(1800),
            });
            ops.push(Op::TodoFinish {
                todo: TodoId(*i),
                to: TodoState::Done,
                agent: Some(worker.clone()),
                epoch: Some(1),
            });
        }
        store.apply_all(ops, ACTOR, now).expect("finish");
    }
    let mut count = store.read(|s| s.event_count()).expect("count");
    let mut n = 0u64;
    while count < events {
        let batch = (events - count).min(1_000);
        let ops = (0..batch)
            .map(|_| {
                n += 1;
                Op::EvidenceAdd(NewEvidence {
                    epoch: None,
                    kind: EvidenceKind::Test,
                    summary: format!("cargo test run {n}: 41 passed"),
                    detail: String::new(),
                    files: vec![],
                    todo: None,
                    slice: None,
                })
            })
            .collect();
        store.apply_all(ops, ACTOR, now).expect("pad");
        count = store.read(|s| s.event_count()).expect("count");
    }
}

fn measure_all(scale: &str, dir: &Path, runs: usize) {
    report(
        scale,
        "loopx quota should-run --agent bench --json",
        measure(dir, runs, |_| {
            ["quota", "should-run", "--agent", "bench", "--json"]
                .map(String::from)
                .to_vec()
        }),
    );
    report(
        scale,
        "loopx status --json",
        measure(dir, runs, |_| vec!["status".into(), "--json".into()]),
    );
    report(
        scale,
        "loopx todo list --json --state open",
        measure(dir, runs, |_| {
            vec![
                "todo".into(),
                "list".into(),
                "--json".into(),
                "--state".into(),
                "open".into(),
            ]
        }),
    );
    // Each run claims a different open todo, so every run is a real grant.
    let open: Vec<String> = open_todos(dir, runs);
    report(
        scale,
        "loopx todo claim",
        measure(dir, runs, |i| {
            vec![
                "todo".into(),
                "claim".into(),
                open[i].clone(),
                "--agent".into(),
                "bench".into(),
            ]
        }),
    );
    report(
        scale,
        "loopx todo add",
        measure(dir, runs, |i| {
            vec!["todo".into(), "add".into(), format!("Benchmark todo {i}")]
        }),
    );
}

fn open_todos(dir: &Path, count: usize) -> Vec<String> {
    let project = Project::at(dir).expect("project");
    let store = Store::open_read(&project).expect("store");
    let todos = store
        .read(|s| s.todos_where(|t| t.state == TodoState::Open))
        .expect("todos");
    todos.iter().take(count).map(|t| t.id.to_string()).collect()
}

fn measure(dir: &Path, runs: usize, args: impl Fn(usize) -> Vec<String>) -> Vec<Duration> {
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        let started = Instant::now();
        let status = Command::new(LOOPX)
            .args(args(i))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .expect("loopx runs");
        times.push(started.elapsed());
        assert!(status.success(), "loopx {:?} failed", args(i));
    }
    times
}

fn report(scale: &str, command: &str, mut times: Vec<Duration>) {
    times.sort();
    let median = times[times.len() / 2];
    let p90 = times[times.len() * 9 / 10];
    println!(
        "| {scale} | `{command}` | {:.2} ms | {:.2} ms | {} |",
        ms(median),
        ms(p90),
        times.len()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
