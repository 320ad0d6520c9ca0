//! Shared helpers for the kernel's integration tests.

#![expect(dead_code, reason = "each test binary uses a different part")]

use std::time::Duration;

use loopx_kernel::model::Todo;
use loopx_kernel::store::{Applied, ClaimTodo};
use loopx_kernel::{AgentName, Op, Project, Store, Timestamp, TodoId};
use loopx_testkit::{agent, goal, todo};

pub const T0: Timestamp = Timestamp(1_790_000_000_000);
pub const HUMAN: &str = "human:tester";

#[derive(Debug)]
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub project: Project,
    pub store: Store,
}

pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = Project::create(dir.path()).expect("project");
    use_test_database(&project);
    let store = Store::create(&project, T0, HUMAN).expect("store");
    Fixture {
        dir,
        project,
        store,
    }
}

impl Fixture {
    pub fn goal(&self) {
        self.store
            .apply(Op::GoalStart(goal("Ship it")), HUMAN, T0)
            .expect("goal");
    }

    pub fn agent(&self, name: &str) -> AgentName {
        let new = agent(name, "executor");
        let name = new.name.clone();
        self.store
            .apply(Op::AgentAdd(new), HUMAN, T0)
            .expect("agent");
        name
    }

    pub fn todo(&self, title: &str) -> TodoId {
        self.todo_by(title, HUMAN)
    }

    /// A todo `actor` made (`agent:a` for one an agent proposed).
    pub fn todo_by(&self, title: &str, actor: &str) -> TodoId {
        let new = todo(title);
        match self.store.apply(Op::TodoAdd(new), actor, T0).expect("todo") {
            Applied::Todo(todo) => todo.id,
            other => panic!("expected a todo, got {other:?}"),
        }
    }

    pub fn claim(
        &self,
        todo: TodoId,
        agent: &AgentName,
        at: Timestamp,
    ) -> Result<Todo, loopx_kernel::KernelError> {
        let applied = self.store.apply(
            Op::TodoClaim(ClaimTodo {
                todo,
                agent: agent.clone(),
                ttl: Duration::from_secs(60),
            }),
            HUMAN,
            at,
        )?;
        match applied {
            Applied::Todo(todo) => Ok(todo),
            other => panic!("expected a todo, got {other:?}"),
        }
    }
}

/// With `LOOPX_TEST_POSTGRES` set (a PostgreSQL URL; `.ci/run` starts a server), puts the
/// project's store in a fresh schema of that database through `[store] url`, as a user would:
/// the same tests then run against the PostgreSQL backend.
pub fn use_test_database(project: &Project) {
    let Ok(base) = std::env::var("LOOPX_TEST_POSTGRES") else {
        return;
    };
    let schema = format!("t{:016x}", fastrand_u64());
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("test database");
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("create schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-csearch_path%3D{schema}");
    std::fs::write(
        project.state_dir().join("loopx.toml"),
        format!("[store]\nurl = \"{url}\"\n"),
    )
    .expect("write loopx.toml");
}

fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// Every byte the store holds: the redb file, or every row of the project's schema on
/// PostgreSQL (keys and values).
pub fn stored_bytes(f: Fixture) -> Vec<u8> {
    let Some(url) = loopx_kernel::store::store_url(&f.project).expect("store url") else {
        let path = f.project.store_path();
        drop(f.store);
        return std::fs::read(&path).expect("read the store file");
    };
    drop(f.store);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let mut out = Vec::new();
    for row in client
        .query("SELECT key, value FROM loopx_rows", &[])
        .expect("rows")
    {
        out.extend_from_slice(&row.get::<_, Vec<u8>>(0));
        out.extend_from_slice(&row.get::<_, Vec<u8>>(1));
    }
    assert!(!out.is_empty(), "the project's rows are in {url}");
    out
}
