//! What only the PostgreSQL backend does: copying a redb project into it, the database's clock,
//! the layout version. These need a server: `LOOPX_TEST_POSTGRES` names one (`.ci/run` starts
//! one and runs them with `--run-ignored all`); without it they are reported as ignored.

#[path = "support/common.rs"]
mod common;

use common::{HUMAN, T0};

use loopx_kernel::Op;
use loopx_kernel::store::NewAgent;
use loopx_kernel::{Project, Store};

fn test_database() -> String {
    std::env::var("LOOPX_TEST_POSTGRES").expect("LOOPX_TEST_POSTGRES names a PostgreSQL server")
}

/// A fresh schema of the test database, as a store URL.
fn fresh_url() -> String {
    let dir = tempfile::tempdir().expect("dir");
    let project = Project::create(dir.path()).expect("project");
    common::use_test_database(&project);
    loopx_kernel::store::store_url(&project)
        .expect("url")
        .expect("a database url")
}

#[test]
#[ignore = "needs a PostgreSQL server in LOOPX_TEST_POSTGRES (.ci/run starts one)"]
fn a_redb_project_copies_row_for_row_and_opens_on_postgres() {
    test_database();
    let dir = tempfile::tempdir().expect("dir");
    let project = Project::create(dir.path()).expect("project");
    let store = Store::create(&project, T0, HUMAN).expect("redb store");
    assert!(!store.is_postgres());
    let f = common::Fixture {
        dir,
        project,
        store,
    };
    f.goal();
    for i in 0..25 {
        f.todo(&format!("todo {i}"));
    }
    let before = f
        .store
        .read(|s| Ok((s.todos()?, s.events_tail(1000)?, s.todo_counts()?)))
        .expect("read");

    let url = fresh_url();
    let report = f.store.copy_to(&url).expect("copy");
    assert_eq!(report.events, before.1.len() as u64);
    assert!(
        report
            .tables
            .iter()
            .any(|(t, rows)| *t == "todos" && *rows == 25)
    );

    // The project now reads from the database, and writes there.
    std::fs::write(
        f.project.state_dir().join("loopx.toml"),
        format!("[store]\nurl = \"{url}\"\n"),
    )
    .expect("config");
    let moved = Store::open(&f.project).expect("open on postgres");
    assert!(moved.is_postgres());
    let after = moved
        .read(|s| Ok((s.todos()?, s.events_tail(1000)?, s.todo_counts()?)))
        .expect("read");
    assert_eq!(before, after);
    // A second copy into the same database is refused, and changes nothing there.
    let err = f.store.copy_to(&url).expect_err("not into a project");
    assert!(
        err.to_string().contains("already holds a loopx project"),
        "{err}"
    );
    let moved = common::Fixture {
        dir: f.dir,
        project: f.project,
        store: moved,
    };
    moved.todo("after the move");
    let todos = moved.store.read(|s| s.todos()).expect("read");
    assert_eq!(todos.len(), 26);
    let problems = moved
        .store
        .read(loopx_kernel::check_consistency)
        .expect("check");
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
#[ignore = "needs a PostgreSQL server in LOOPX_TEST_POSTGRES (.ci/run starts one)"]
fn a_host_with_a_wrong_clock_writes_the_database_s_time() {
    test_database();
    let f = common::fixture();
    assert!(f.store.is_postgres());
    let db_now = f
        .store
        .database_now()
        .expect("now")
        .expect("a database clock");
    // A host whose clock is an hour fast: a process of its own, whose wall clock is off.
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "skewed_host_probe", "--ignored", "--nocapture"])
        .env("LOOPX_PROBE_PROJECT", f.project.root())
        .env("LOOPX_CLOCK_SKEW_MS", "3600000")
        .output()
        .expect("probe");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let event = f.store.read(|s| s.events_tail(1)).expect("read").remove(0);
    assert_eq!(event.actor, "host:skewed");
    let off = event.at.0.abs_diff(db_now.0);
    assert!(
        off < 60_000,
        "recorded {} for database time {}",
        event.at.0,
        db_now.0
    );
    // One within a second of the database keeps its own time (exact times on one host).
    // (Read after the probe's write: a time before it would be moved up to it.)
    let db_after = f.store.database_now().expect("now").expect("db");
    let close = loopx_kernel::Timestamp(db_after.0 + 400);
    f.store
        .apply(add_agent("close"), HUMAN, close)
        .expect("register");
    let event = f.store.read(|s| s.events_tail(1)).expect("read").remove(0);
    assert_eq!(event.at, close);
}

#[test]
#[ignore = "run by a_host_with_a_wrong_clock_writes_the_database_s_time"]
fn skewed_host_probe() {
    let Ok(root) = std::env::var("LOOPX_PROBE_PROJECT") else {
        return;
    };
    // The skew a surface reads from `LOOPX_CLOCK_SKEW_MS` at its edge.
    let skew = std::env::var("LOOPX_CLOCK_SKEW_MS").expect("skew");
    let settings = loopx_kernel::StoreSettings {
        clock: loopx_kernel::WallClock::skewed(skew.parse().expect("ms")),
        ..Default::default()
    };
    let clock = settings.clock.clone();
    let project = Project::at(std::path::Path::new(&root))
        .expect("project")
        .with_store(settings);
    // Read before the store is opened: the clock as the host has it, an hour fast.
    let host_now = clock.now();
    let store = Store::open(&project).expect("open");
    store
        .apply(add_agent("skewed"), "host:skewed", host_now)
        .expect("write");
    // Once the store is open, the project's clock is the database's.
    let db = store.database_now().expect("now").expect("db");
    assert!(clock.now().0.abs_diff(db.0) < 60_000);
}

#[test]
#[ignore = "needs a PostgreSQL server in LOOPX_TEST_POSTGRES (.ci/run starts one)"]
fn the_layout_is_versioned_and_a_newer_one_is_refused() {
    test_database();
    let f = common::fixture();
    let (found, known) = f.store.database_layout().expect("layout").expect("pg");
    assert_eq!(found, known);
    let url = loopx_kernel::store::store_url(&f.project)
        .expect("url")
        .expect("pg");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .execute(
            "INSERT INTO loopx_migrations (version) VALUES ($1)",
            &[&((known + 1) as i32)],
        )
        .expect("a newer layout");
    drop(f.store);
    // A new process (a fresh pool) meets the newer layout.
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "newer_layout_probe", "--ignored", "--nocapture"])
        .env("LOOPX_PROBE_PROJECT", f.project.root())
        .output()
        .expect("probe");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("newer than this loopx supports"), "{text}");
}

#[test]
#[ignore = "run by the_layout_is_versioned_and_a_newer_one_is_refused"]
fn newer_layout_probe() {
    let Ok(root) = std::env::var("LOOPX_PROBE_PROJECT") else {
        return;
    };
    let project = Project::at(std::path::Path::new(&root)).expect("project");
    let err = Store::open(&project).expect_err("a newer layout is refused");
    println!("{err}");
}

fn add_agent(name: &str) -> Op {
    Op::AgentAdd(NewAgent {
        name: name.parse().expect("name"),
        profile: "executor".into(),
        capabilities: vec![],
        role: None,
    })
}

#[test]
#[ignore = "needs a PostgreSQL server in LOOPX_TEST_POSTGRES (.ci/run starts one)"]
fn a_commit_on_one_host_rings_a_sleeper_on_another() {
    test_database();
    let host_a = common::fixture();
    // Host B: a checkout of its own (no shared directory, so no shared Unix sockets), the
    // same database.
    let dir_b = tempfile::tempdir().expect("dir");
    let project_b = Project::create(dir_b.path()).expect("project");
    std::fs::copy(
        host_a.project.state_dir().join("loopx.toml"),
        project_b.state_dir().join("loopx.toml"),
    )
    .expect("config");
    let store_b = Store::open(&project_b).expect("join");
    assert!(store_b.is_postgres());
    let sleeper = loopx_kernel::doorbell::Listener::bind(&project_b);
    // The listener's connection is up once a ring gets through; until then sleeping times out.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut woke = false;
    let mut n = 0;
    while !woke && std::time::Instant::now() < deadline {
        n += 1;
        host_a
            .store
            .apply(add_agent(&format!("peer{n}")), HUMAN, T0)
            .expect("write");
        woke = sleeper.wait(std::time::Duration::from_millis(500));
    }
    assert!(woke, "a commit on host A woke the sleeper on host B");
    // Silence stays silent.
    while sleeper.wait(std::time::Duration::from_millis(50)) {}
    assert!(
        !sleeper.wait(std::time::Duration::from_millis(300)),
        "no commit, no ring"
    );
    let started = std::time::Instant::now();
    host_a
        .store
        .apply(add_agent("last"), HUMAN, T0)
        .expect("write");
    assert!(sleeper.wait(std::time::Duration::from_secs(5)));
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}
