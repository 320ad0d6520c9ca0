//! Shared helpers for the kernel's integration tests.

#![expect(dead_code, reason = "each test binary uses a different part")]

use std::time::Duration;

use loopx_kernel::model::{PermissionLevel, Todo};
use loopx_kernel::store::{Applied, NewTodo};
use loopx_kernel::{AgentName, Op, Project, Store, Timestamp, TodoId};

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
            .apply(
                Op::GoalStart {
                    objective: "Ship it".into(),
                    scope: vec![],
                    permission: PermissionLevel::WorkspaceWrite,
                    share: 1.0,
                    isolation: loopx_kernel::model::Isolation::Shared,
                },
                HUMAN,
                T0,
            )
            .expect("goal");
    }

    pub fn agent(&self, name: &str) -> AgentName {
        let name: AgentName = name.parse().expect("name");
        self.store
            .apply(
                Op::AgentAdd {
                    name: name.clone(),
                    profile: "executor".into(),
                    capabilities: vec![],
                    role: None,
                },
                HUMAN,
                T0,
            )
            .expect("agent");
        name
    }

    pub fn todo(&self, title: &str) -> TodoId {
        let new = NewTodo {
            goal: None,
            title: title.into(),
            detail: String::new(),
            priority: 0,
            needs: vec![],
            after: vec![],
            role: None,
        };
        match self.store.apply(Op::TodoAdd(new), HUMAN, T0).expect("todo") {
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
            Op::TodoClaim {
                todo,
                agent: agent.clone(),
                ttl: Duration::from_secs(60),
            },
            HUMAN,
            at,
        )?;
        match applied {
            Applied::Todo(todo) => Ok(todo),
            other => panic!("expected a todo, got {other:?}"),
        }
    }
}
