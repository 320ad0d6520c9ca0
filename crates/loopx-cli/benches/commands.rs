//! Whole-process latency of `loopx` commands on a fresh project and at scale (1,000 and
//! 100,000 open todos, each with 1,000,000 events), measured by running the release binary as
//! a user would.
//!
//! `cargo bench -p loopx-cli --bench commands [-- --runs N] [-- --events N]`. Prints a Markdown
//! table for `docs/benchmarks.md`. The scale fill goes through the kernel's public API in
//! batches, so the store has the shape real use gives it (one event per transition).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loopx_kernel::model::{EvidenceKind, PermissionLevel, TodoState};
use loopx_kernel::store::FinishTodo;
use loopx_kernel::store::NewGoal;
use loopx_kernel::store::{ClaimTodo, NewAgent};
use loopx_kernel::store::{NewEvidence, NewTodo};
use loopx_kernel::{AgentName, Op, Project, Store, Timestamp, TodoId};

const LOOPX: &str = env!("CARGO_BIN_EXE_loopx");
const ACTOR: &str = "human:bench";

fn main() {
    let arg = |name: &str| -> Option<u64> {
        std::env::args()
            .skip_while(|a| a != name)
            .nth(1)
            .and_then(|n| n.parse().ok())
    };
    let runs = arg("--runs").unwrap_or(50) as usize;
    let events = arg("--events").unwrap_or(1_000_000);
    let text = |name: &str| -> Option<String> { std::env::args().skip_while(|a| a != name).nth(1) };
    let scales: Vec<u64> = text("--scales").map_or(vec![1_000, 100_000], |list| {
        list.split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect()
    });
    // `--store-url postgres://…`: every project in a fresh schema of that database instead of
    // a redb file (each scale filled afresh: a schema cannot be copied like a directory).
    let store_url = text("--store-url");
    println!("| scale | command | median | p90 | runs |");
    println!("|---|---|---|---|---|");
    if let Some(base) = &store_url {
        let fresh = tempfile::tempdir().expect("temp dir");
        use_database(fresh.path(), base);
        setup(fresh.path());
        add_todos(fresh.path(), runs as u64, 0);
        measure_all("fresh (a few dozen todos), PostgreSQL", fresh.path(), runs);
        for todos in scales {
            let dir = tempfile::tempdir().expect("temp dir");
            use_database(dir.path(), base);
            setup(dir.path());
            let started = Instant::now();
            pad_events(dir.path(), events);
            add_todos(dir.path(), todos, 0);
            eprintln!(
                "filled {events} events and {todos} todos in {:.1?}",
                started.elapsed()
            );
            measure_all(
                &format!("{todos} todos (all open), {events} events, PostgreSQL"),
                dir.path(),
                runs,
            );
        }
        return;
    }
    let fresh = tempfile::tempdir().expect("temp dir");
    setup(fresh.path());
    add_todos(fresh.path(), runs as u64, 0);
    measure_all("fresh (a few dozen todos)", fresh.path(), runs);

    // One store with the events, copied for each scale: filling a million events takes a
    // while, and the todos go in after them.
    let base = tempfile::tempdir().expect("temp dir");
    setup(base.path());
    let started = Instant::now();
    pad_events(base.path(), events);
    eprintln!("filled {events} events in {:.1?}", started.elapsed());
    for todos in scales {
        let dir = tempfile::tempdir().expect("temp dir");
        copy_dir(base.path(), dir.path());
        let started = Instant::now();
        add_todos(dir.path(), todos, 0);
        eprintln!("added {todos} todos in {:.1?}", started.elapsed());
        measure_all(
            &format!("{todos} todos (all open), {events} events"),
            dir.path(),
            runs,
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Makes `dir` a project whose store is a fresh schema of the database at `base`.
fn use_database(dir: &Path, base: &str) {
    let schema = format!("bench{:016x}", fastrand::u64(..));
    let mut client = postgres::Client::connect(base, postgres::NoTls).expect("database");
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
    std::fs::write(
        dir.join(".loopx.url"),
        format!("[store]\nurl = \"{url}\"\n"),
    )
    .expect("url");
}

/// A project with a goal and two agents.
fn setup(dir: &Path) {
    let project = Project::create(dir).expect("project");
    // A database project: `[store] url`, before the store is created.
    if let Ok(config) = std::fs::read_to_string(dir.join(".loopx.url")) {
        std::fs::write(project.state_dir().join("loopx.toml"), config).expect("config");
    }
    let profile = include_str!("../../../profiles/executor.toml");
    std::fs::write(project.state_dir().join("profiles/executor.toml"), profile).expect("profile");
    let store = Store::create(&project, Timestamp::now(), ACTOR).expect("store");
    let mut setup = vec![Op::GoalStart(NewGoal {
        priority: 0,
        id: None,
        objective: "Benchmark".into(),
        scope: vec!["src/**".into()],
        permission: PermissionLevel::WorkspaceWrite,
        share: 1.0,
        isolation: loopx_kernel::model::Isolation::Shared,
    })];
    for name in ["worker", "bench"] {
        setup.push(Op::AgentAdd(NewAgent {
            name: name.parse().expect("name"),
            profile: "executor".into(),
            capabilities: vec![],
            role: None,
        }));
    }
    store
        .apply_all(setup, ACTOR, Timestamp::now())
        .expect("setup");
}

/// `todos` more todos, the first `finished` of them done.
fn add_todos(dir: &Path, todos: u64, finished: u64) {
    let project = Project::at(dir).expect("project");
    let store = Store::open(&project).expect("store");
    let now = Timestamp::now();
    let worker: AgentName = "worker".parse().expect("name");
    let first = store
        .read(|s| s.meta("next_todo"))
        .expect("counter")
        .unwrap_or(1);
    let ids: Vec<u64> = (first..first + todos).collect();
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
                    monitor: None,
                    not_before: None,
                    then: vec![],
                    held_for: None,
                })
            })
            .collect();
        store.apply_all(ops, ACTOR, now).expect("add");
    }
    for chunk in ids[..finished as usize].chunks(500) {
        let mut ops = Vec::new();
        for i in chunk {
            ops.push(Op::TodoClaim(ClaimTodo {
                todo: TodoId(*i),
                agent: worker.clone(),
                ttl: Duration::from_secs(1800),
            }));
            ops.push(Op::TodoFinish(FinishTodo {
                todo: TodoId(*i),
                to: TodoState::Done,
                agent: Some(worker.clone()),
                epoch: Some(1),
            }));
        }
        store.apply_all(ops, ACTOR, now).expect("finish");
    }
}

/// Evidence until the log holds `events` events.
fn pad_events(dir: &Path, events: u64) {
    let project = Project::at(dir).expect("project");
    let store = Store::open(&project).expect("store");
    let now = Timestamp::now();
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
                    work: None,
                    metric: None,
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
        "loopx todo list --json --limit 50",
        measure(dir, runs, |_| {
            ["todo", "list", "--json", "--limit", "50"]
                .map(String::from)
                .to_vec()
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

/// `count` open todos spread over the whole list, so that claims are not all at one end.
fn open_todos(dir: &Path, count: usize) -> Vec<String> {
    let project = Project::at(dir).expect("project");
    let store = Store::open_read(&project).expect("store");
    let todos = store
        .read(|s| s.todos_where(|t| t.state == TodoState::Open))
        .expect("todos");
    let step = (todos.len() / count.max(1)).max(1);
    todos
        .iter()
        .step_by(step)
        .take(count)
        .map(|t| t.id.to_string())
        .collect()
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
