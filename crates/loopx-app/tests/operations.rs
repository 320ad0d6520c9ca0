//! The application layer on a real project (a real redb file in a temporary directory): the
//! operations every surface calls, and the one policy for configuration that does not load.

use std::path::Path;

use loopx_app::goal::StartGoal;
use loopx_app::quota::{AgentSpec, HoldTarget};
use loopx_app::{App, AppError, Caller, ConfigError, ErrorClass};
use loopx_kernel::model::{Blocks, TodoState};
use loopx_kernel::store::{AnswerChoice, FinishTodo, NewTodo};
use loopx_kernel::{AgentName, Project, Store, Timestamp};
use loopx_vocab::{IsolationMode, PermissionLevel};

fn project(dir: &Path) -> App {
    let project = Project::create(dir).expect("project");
    drop(Store::create(&project, Timestamp::now(), "human:tester").expect("store"));
    std::fs::write(
        project.state_dir().join("profiles/a.toml"),
        "adapter = \"generic\"\nprogram = \"/bin/true\"\npermission = \"workspace-write\"\n\n[quota]\naccount = \"acme\"\n",
    )
    .expect("profile");
    App::new(project, Caller::person("tester"), None)
}

fn start(app: &App) {
    app.start_goal(StartGoal {
        priority: 0,
        objective: "Tidy the docs".into(),
        scope: vec![],
        permission: PermissionLevel::WorkspaceWrite,
        share: 1.0,
        isolation: None,
        from_head: false,
        from: None,
    })
    .expect("goal");
}

fn todo(title: &str) -> NewTodo {
    NewTodo {
        title: title.into(),
        ..NewTodo::default()
    }
}

fn agent(name: &str) -> AgentSpec {
    AgentSpec {
        name: name.parse().expect("name"),
        profile: "a".into(),
        capabilities: vec![],
        role: None,
    }
}

#[test]
fn a_goal_outside_git_is_shared_and_its_todos_are_finished_by_a_person() {
    let dir = tempfile::tempdir().expect("dir");
    let app = project(dir.path());
    start(&app);
    let goal = app.goal(None).expect("current goal");
    assert_eq!(goal.isolation, loopx_kernel::model::Isolation::Shared);
    let added = app.add_todo(todo("Fix the typo")).expect("todo");
    let finished = app
        .finish_todo(FinishTodo {
            todo: added.id,
            to: TodoState::Done,
            agent: None,
            epoch: None,
        })
        .expect("done");
    assert_eq!(finished.todo.state, TodoState::Done);
    assert_eq!(finished.landed, None, "a shared goal has no branch to land");
    let status = app.status().expect("status");
    assert_eq!(status.counts.done, 1);
    assert!(status.problems.is_empty());
}

#[test]
fn asking_for_worktrees_outside_git_is_refused_as_usage() {
    let dir = tempfile::tempdir().expect("dir");
    let app = project(dir.path());
    let refused = app
        .start_goal(StartGoal {
            priority: 0,
            objective: "Tidy the docs".into(),
            scope: vec![],
            permission: PermissionLevel::WorkspaceWrite,
            share: 1.0,
            isolation: Some(IsolationMode::Worktree),
            from_head: false,
            from: None,
        })
        .expect_err("no git repository");
    assert_eq!(refused.class(), ErrorClass::Usage);
    assert!(
        refused.to_string().contains("needs a git repository"),
        "{refused}"
    );
    assert!(
        app.goals().expect("goals").is_empty(),
        "nothing was started"
    );
}

#[test]
fn a_question_a_person_answers_and_one_asked_from_a_slice_cannot_be_answered_from_it() {
    let dir = tempfile::tempdir().expect("dir");
    let app = project(dir.path());
    start(&app);
    let added = app.add_todo(todo("Pick a licence")).expect("todo");
    let from_slice = App::new(
        app.project().clone(),
        Caller {
            actor: "agent:a".into(),
            slice: Some("s1".into()),
            slice_todo: Some(added.id),
        },
        None,
    );
    let gate = from_slice
        .ask_gate(loopx_app::gate::Ask {
            question: "MIT or Apache-2.0?".into(),
            options: vec!["MIT".into(), "Apache-2.0".into()],
            context: String::new(),
            blocks: None,
        })
        .expect("asked");
    assert_eq!(
        gate.blocks,
        Blocks::Todos(vec![added.id]),
        "it holds back the slice's todo"
    );
    let refused = from_slice
        .answer_gate(gate.id, AnswerChoice::Option(1), None)
        .expect_err("an answer from a slice");
    assert_eq!(refused.class(), ErrorClass::Refused);
    let answered = app
        .answer_gate(gate.id, AnswerChoice::Option(2), None)
        .expect("a person answers");
    assert_eq!(answered.gate.answer.expect("answer").text, "Apache-2.0");
}

#[test]
fn a_broken_loopx_toml_is_named_by_the_overviews_and_refuses_the_decision() {
    let dir = tempfile::tempdir().expect("dir");
    let app = project(dir.path());
    start(&app);
    app.add_agent(agent("a"), None).expect("agent");
    std::fs::write(
        app.project().state_dir().join("loopx.toml"),
        "[budget]\nmax_cost = \"lots\"\n",
    )
    .expect("loopx.toml");
    let status = app.status().expect("status still shows what it can");
    assert_eq!(status.problems.len(), 1, "{:?}", status.problems);
    assert!(
        status.problems[0].contains("loopx.toml"),
        "{:?}",
        status.problems
    );
    let quota = app.quota_status().expect("quota status");
    assert_eq!(
        quota.problems, status.problems,
        "one diagnostic, one wording"
    );
    let a: AgentName = "a".parse().expect("name");
    let refused = app
        .decision_for(&a)
        .expect_err("a decision acted on needs the budget");
    assert_eq!(refused.class(), ErrorClass::Config);
}

#[test]
fn an_agent_needs_a_profile_that_loads_and_holds_name_it_or_its_account() {
    let dir = tempfile::tempdir().expect("dir");
    let app = project(dir.path());
    let mut missing = agent("b");
    missing.profile = "nope".into();
    let refused = app.add_agent(missing, None).expect_err("no such profile");
    assert!(
        matches!(refused, AppError::Config(ConfigError::Profile { .. })),
        "{refused:?}"
    );
    let added = app.add_agent(agent("a"), None).expect("agent");
    assert_eq!(added.agent.name.as_str(), "a");
    let a = HoldTarget::Agent(added.agent.name.clone());
    assert_eq!(app.pause(&a).expect("pause").key, "agent:a");
    let held = app
        .hold(
            &HoldTarget::Account("acme".into()),
            None,
            "maintenance".into(),
        )
        .expect("hold");
    assert_eq!(held.key, "acme");
    assert_eq!(
        app.resume(Some(&a)).expect("resume"),
        vec!["agent:a".to_owned()]
    );
    assert_eq!(
        app.resume(None).expect("resume all"),
        vec!["acme".to_owned()]
    );
}
