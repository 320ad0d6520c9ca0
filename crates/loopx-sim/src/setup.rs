//! The simulated project: a real loopx project in a temporary directory, with a profile per
//! agent (the shipped `claude-code` adapter, whose program is never run), the goal (or the
//! scenario's `[[goal]]`s) and its todos.

use std::path::Path;

use loopx_kernel::model::PermissionLevel;
use loopx_kernel::store::NewAgent;
use loopx_kernel::store::NewGoal;
use loopx_kernel::store::NewTodo;
use loopx_kernel::{GoalId, Op, Project, Store, Timestamp};

use crate::errors::SimError;
use crate::scenario::Checked;

/// Who set the project up.
const PERSON: &str = "human:sim";

/// Creates the project in `dir` at wall time `now`.
/// Returns the project and its goals' ids, in the scenario's order.
pub(crate) fn create(
    dir: &Path,
    plan: &Checked,
    now: Timestamp,
) -> Result<(Project, Vec<GoalId>), SimError> {
    let fail = |e: &dyn std::fmt::Display| SimError::Setup(e.to_string());
    let project = Project::create(dir).map_err(|e| fail(&e))?;
    let profiles = project.state_dir().join("profiles");
    std::fs::create_dir_all(&profiles).map_err(|e| fail(&e))?;
    let scenario = &plan.scenario;
    for (i, agent) in scenario.agents.iter().enumerate() {
        let acct = scenario
            .accounts
            .iter()
            .position(|a| a.name == agent.account)
            .expect("checked: the account exists");
        let account = &scenario.accounts[acct];
        // A timer baseline wakes each agent once a period: pacing of one slice a period, with
        // no burst.
        let pacing = match plan.baseline {
            Some(period) => format!(
                "slices_per_hour = {}\nburst = 1\n",
                (3600 / period.as_secs().max(1)).max(1)
            ),
            None => agent
                .slices_per_hour
                .map_or_else(String::new, |n| format!("slices_per_hour = {n}\n")),
        };
        let profile = format!(
            "description = \"simulated agent {name}\"\n\
             adapter = \"claude-code\"\n\
             permission = \"workspace-write\"\n\
             # Never run: the simulation plays the agent.\n\
             program = \"/nonexistent/loopx-sim-agent\"\n\n\
             [limits]\n\
             max_time = \"{max_time}s\"\n\
             idle_timeout = \"{idle}s\"\n\n\
             [quota]\n\
             account = \"{account}\"\n\
             {pacing}\n\
             [[quota.windows]]\n\
             window = \"{window}s\"\n\
             tokens = {tokens}\n",
            name = agent.name,
            max_time = plan.max_time[i].as_secs(),
            idle = plan.idle[i].as_secs(),
            account = account.name,
            window = plan.windows[acct].as_secs(),
            tokens = account.tokens,
        );
        std::fs::write(profiles.join(format!("{}.toml", agent.name)), profile)
            .map_err(|e| fail(&e))?;
    }
    let edits = scenario.people.edit_per_day > 0.0;
    if edits {
        under_git(dir, &project).map_err(|e| fail(&e))?;
    }
    if let Some(h) = &scenario.handbacks {
        let config = project.state_dir().join("loopx.toml");
        let mut text = std::fs::read_to_string(&config).unwrap_or_default();
        text.push_str(&format!("\n[limits]\nhandbacks = {}\n", h.limit));
        std::fs::write(&config, text).map_err(|e| fail(&e))?;
    }
    let store = Store::create(&project, now, PERSON).map_err(|e| fail(&e))?;
    let scope = match edits {
        true => vec!["src/**".to_owned()],
        false => vec![],
    };
    // Without `[[goal]]`: the one goal, every todo its.
    let goals = match scenario.goals.is_empty() {
        true => vec![(0, 1.0, scenario.todo_count())],
        false => scenario
            .goals
            .iter()
            .map(|g| (g.priority, g.share, g.todos))
            .collect(),
    };
    let mut ops: Vec<Op> = goals
        .iter()
        .enumerate()
        .map(|(i, &(priority, share, _))| {
            Op::GoalStart(NewGoal {
                id: None,
                objective: match scenario.goals.is_empty() {
                    true => "Finish every simulated todo".to_owned(),
                    false => format!("Finish the simulated todos of goal {}", i + 1),
                },
                scope: scope.clone(),
                permission: PermissionLevel::WorkspaceWrite,
                share,
                isolation: loopx_kernel::model::Isolation::Shared,
                priority,
            })
        })
        .collect();
    for agent in &scenario.agents {
        ops.push(Op::AgentAdd(NewAgent {
            name: agent.name.parse().map_err(|e| fail(&e))?,
            profile: agent.name.clone(),
            capabilities: vec![],
            role: agent.role.clone(),
        }));
    }
    let applied = store.apply_all(ops, PERSON, now).map_err(|e| fail(&e))?;
    let ids: Vec<GoalId> = applied
        .iter()
        .filter_map(|a| match a {
            loopx_kernel::store::Applied::Goal(g) => Some(g.id),
            _ => None,
        })
        .collect();
    // With several goals every todo names its goal; with one, none does (as `todo add`).
    let goal_of = |i: usize| (!scenario.goals.is_empty()).then(|| ids[i]);
    let experiments = scenario.experiments.as_ref().map_or(0, |e| e.count);
    let mut todos: Vec<Op> = (1..=experiments)
        .map(|n| {
            Op::TodoAdd(NewTodo {
                goal: goal_of(0),
                title: crate::experiments::run_title(n),
                ..NewTodo::default()
            })
        })
        .collect();
    // With executor/reviewer pairs the scenario's todos are the executors' (`handbacks.rs`).
    let role = scenario
        .handbacks
        .as_ref()
        .map(|_| crate::handbacks::EXECUTOR.to_owned());
    let mut n = 0;
    for (i, &(_, _, count)) in goals.iter().enumerate() {
        for _ in 0..count {
            n += 1;
            todos.push(Op::TodoAdd(NewTodo {
                goal: goal_of(i),
                title: format!("Simulated todo {n}"),
                detail: String::new(),
                priority: 0,
                needs: vec![],
                after: vec![],
                role: role.clone(),
                monitor: None,
                not_before: None,
                then: vec![],
                held_for: None,
            }));
        }
    }
    for chunk in todos.chunks(1000) {
        store
            .apply_all(chunk.to_vec(), PERSON, now)
            .map_err(|e| fail(&e))?;
    }
    Ok((project, ids))
}

/// The file a person changes (`[people] edit_per_day`).
pub(crate) const EDITED: &str = "src/lib.rs";

/// Makes the project a git repository with one file in the goal's scope, and asks for a fresh
/// test result before an agent's done is taken.
fn under_git(dir: &Path, project: &Project) -> Result<(), String> {
    std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(EDITED), "// edited 0 times\n").map_err(|e| e.to_string())?;
    std::fs::write(dir.join(".gitignore"), ".loopx/\n").map_err(|e| e.to_string())?;
    let config = project.state_dir().join("loopx.toml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    text.push_str("\n[evidence]\ndone_needs = [\"test\"]\n");
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    git(dir, &["init", "-q"])?;
    commit(dir, "start")
}

/// Commits everything in `dir` as the simulation's person.
pub(crate) fn commit(dir: &Path, message: &str) -> Result<(), String> {
    git(dir, &["add", "-A"])?;
    git(
        dir,
        &[
            "-c",
            "user.name=sim",
            "-c",
            "user.email=sim@loopx.invalid",
            "commit",
            "-q",
            "--no-verify",
            "-m",
            message,
        ],
    )
}

fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git {}: {e}", args.join(" ")))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}
