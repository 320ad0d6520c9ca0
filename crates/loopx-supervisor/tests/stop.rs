//! A stop requested at each moment of a slice's life, through `run_once` on a real project:
//! before the decision nothing is claimed; between the begin and the spawn the slice is recorded
//! interrupted and never spawned.

use std::path::Path;
use std::sync::Arc;

use loopx_kernel::model::TodoState;
use loopx_kernel::{Op, Project, Store, Timestamp};
use loopx_supervisor::{Once, RunOnce, Shutdown, Step, run_once};
use loopx_testkit::{goal, todo};

const HUMAN: &str = "human:tester";

/// A project with a goal, one todo, and an agent `a` whose script would sleep.
fn project(dir: &Path) -> Project {
    let project = Project::create(dir).expect("project");
    let store = Store::create(&project, Timestamp::now(), HUMAN).expect("store");
    let agent = dir.join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ncat >/dev/null\ntouch spawned.flag\nsleep 30\n",
    )
    .expect("agent");
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(
        project.state_dir().join("profiles/a.toml"),
        format!(
            "adapter = \"generic\"\nprogram = \"{}\"\npermission = \"workspace-write\"\n",
            agent.display()
        ),
    )
    .expect("profile");
    for op in [
        Op::GoalStart(goal("Tidy the docs")),
        Op::AgentAdd(loopx_testkit::agent("a", "a")),
        Op::TodoAdd(todo("Tidy the README")),
    ] {
        store.apply(op, HUMAN, Timestamp::now()).expect("set up");
    }
    project
}

fn request(project: &Project, shutdown: &Arc<Shutdown>) -> RunOnce {
    RunOnce {
        project: project.clone(),
        agent: Some("a".into()),
        loopx_exe: "/nonexistent/loopx".into(),
        shutdown: Arc::clone(shutdown),
        world: loopx_supervisor::World::real(Default::default(), Default::default()),
    }
}

#[test]
fn a_stop_before_the_decision_claims_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let project = project(dir.path());
    let shutdown = Arc::new(Shutdown::new());
    shutdown.request("SIGTERM");
    let once = run_once(&request(&project, &shutdown), &mut |_| {}).expect("runs");
    assert!(matches!(once, Once::Stopped { .. }), "{once:?}");
    let (todo, slices) = Store::open_read(&project)
        .expect("store")
        .read(|s| Ok((s.todos()?, s.slices()?)))
        .expect("read");
    assert_eq!(todo[0].state, TodoState::Open, "not claimed");
    assert!(slices.is_empty(), "no slice begun");
}

#[test]
fn a_stop_between_the_begin_and_the_spawn_ends_the_slice_unspawned() {
    let dir = tempfile::tempdir().expect("dir");
    let project = project(dir.path());
    let shutdown = Arc::new(Shutdown::new());
    let stopper = Arc::clone(&shutdown);
    let once = run_once(&request(&project, &shutdown), &mut |step| {
        if let Step::Started { .. } = step {
            stopper.request("SIGTERM");
        }
    })
    .expect("runs");
    assert!(matches!(once, Once::Stopped { .. }), "{once:?}");
    assert!(
        !dir.path().join("spawned.flag").exists(),
        "the agent never ran"
    );
    let (todo, slice, evidence) = Store::open_read(&project)
        .expect("store")
        .read(|s| Ok((s.todos()?, s.slices()?, s.evidence_newest(1, |_| true)?)))
        .expect("read");
    assert_eq!(slice.len(), 1);
    assert_eq!(
        slice[0].outcome,
        Some(loopx_kernel::model::Outcome::Interrupted)
    );
    assert_eq!(slice[0].process, None, "never spawned");
    assert!(
        evidence[0].summary.contains("before the agent was spawned"),
        "{}",
        evidence[0].summary
    );
    assert_eq!(todo[0].state, TodoState::Open, "its claim given back");
}
