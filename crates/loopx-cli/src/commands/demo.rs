//! `loopx demo`: the whole loop in under a minute, without an API key or a network.
//!
//! It creates a project (a fresh temporary directory, or `--dir DIR`), registers two peers on
//! the built-in simulated agent (`loopx __demo-agent`, docs/design/demo-agent.md) — an
//! executor and a reviewer — and runs the real loop (`loopx_supervisor::run_loop`, exactly what
//! `loopx run` runs) on the goal "Write the demo notes". What the user sees: a planning slice
//! proposes three todos; work and review slices write evidence and handoffs; the first write
//! hits a simulated usage limit, so both peers pause until it resets and then resume; one todo
//! needs a person's decision, asked at the terminal (without a terminal, the first option is
//! taken on the user's behalf and labelled so); the goal ends done. Then the status screen and
//! the paths to look at. Nothing is deleted: the project stays for `loopx status`, `loopx log`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use loopx_kernel::model::Isolation;
use loopx_kernel::store::AnswerChoice;
use loopx_kernel::store::NewAgent;
use loopx_kernel::store::NewGoal;
use loopx_kernel::{AgentName, GateId, Op, Project, Store};
use loopx_supervisor::{EndReason, OnGate, RunEvent, RunLoop, Shutdown};

use super::init::DEMO_PROFILE;
use crate::args::DemoArgs;
use crate::context::Ctx;
use crate::errors::ExpectedError;
use crate::exit_code;

/// The goal the demo works on.
const GOAL: &str = "Write the demo notes";
/// A demo that runs longer than this is stuck, not slow.
const DEMO_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

pub fn run(ctx: &mut Ctx, args: DemoArgs) -> Result<(), ExpectedError> {
    let dir = demo_dir(args.dir)?;
    say("loopx demo: the whole loop on the built-in simulated agent (no API key, no network).");
    say(&format!("Project: {}", dir.display()));
    ctx.set_project_dir(dir.clone());
    let project = super::init::create(ctx, &dir)?;
    setup(ctx, &project)?;
    say(&format!(
        "Goal: \"{GOAL}\". Peers: `executor` and `reviewer`, both the simulated agent on one account.\n"
    ));

    let shutdown = Arc::new(Shutdown::new());
    loopx_supervisor::handle_signals(Arc::clone(&shutdown))
        .map_err(|e| ExpectedError::Usage(format!("cannot handle signals: {e}")))?;
    let loopx_exe = std::env::current_exe()
        .map_err(|e| ExpectedError::Usage(format!("cannot find the loopx executable: {e}")))?;
    let req = RunLoop {
        project: project.clone(),
        agents: Vec::new(),
        loopx_exe,
        max_slices: None,
        run_for: Some(DEMO_LIMIT),
        on_gate: OnGate::Wait,
        shutdown,
        world: ctx.world(),
    };
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let app = ctx.app()?;
    let end = loopx_supervisor::run_loop(&req, &mut |event| {
        say(&super::run::event_line(event, req.world.clock.now()));
        if let RunEvent::Question { gate, options, .. } = event {
            // Asked on a thread of its own: the loop (and Ctrl-C) must not wait for the person.
            let (app, gate, options) = (app.clone(), *gate, options.clone());
            std::thread::spawn(move || answer(&app, gate, &options, interactive));
        }
    })?;

    say("");
    super::status::run(ctx, None)?;
    ctx.flush()?;
    // As the person can type them: `loopx` when that is this binary, else its path (a demo run
    // with `cargo run` from the clone has no `loopx` on PATH).
    let loopx = invoked_as();
    let mut commands = vec![
        (
            format!("{loopx} status"),
            "what needs you, what runs, what is next",
        ),
        (format!("{loopx} log"), "every event, in order"),
        (
            format!("{loopx} log --slice s1"),
            "one slice and its output",
        ),
        (format!("{loopx} evidence list"), "what each slice showed"),
        (format!("{loopx} handoff"), "the newest handoff"),
        (format!("{loopx} board"), "the same in a browser"),
    ];
    if dir.join(".git").exists() {
        commands.push((
            "git log --graph --oneline loopx/g1".to_owned(),
            "each todo landed on the goal's branch",
        ));
        commands.push((
            "git show loopx/g1:demo/NOTES.md".to_owned(),
            "what the agents wrote",
        ));
    } else {
        commands.push(("cat demo/NOTES.md".to_owned(), "what the agents wrote"));
    }
    commands.push(("ls .loopx/slices/".to_owned(), "each slice's raw output"));
    let width = commands.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    say(&format!("\nLook around: cd {}", dir.display()));
    for (command, what) in commands {
        say(&format!("  {command:<width$}   {what}"));
    }
    match end.reason {
        EndReason::Goal => Ok(()),
        EndReason::Shutdown => Err(ExpectedError::Reported {
            summary: "the demo was interrupted".to_owned(),
            code: exit_code::INTERRUPTED,
        }),
        other => Err(ExpectedError::Reported {
            summary: format!("the demo did not finish its goal ({other:?})"),
            code: exit_code::INTERNAL,
        }),
    }
}

/// `--dir DIR` (created if missing, refused if it holds a project), else a new temporary
/// directory that stays after the demo.
fn demo_dir(dir: Option<PathBuf>) -> Result<PathBuf, ExpectedError> {
    let Some(dir) = dir else {
        let dir = tempfile::Builder::new()
            .prefix("loopx-demo-")
            .tempdir()
            .map_err(|e| {
                ExpectedError::Usage(format!("cannot create a temporary directory: {e}"))
            })?;
        return Ok(dir.keep());
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| ExpectedError::Usage(format!("cannot create `{}`: {e}", dir.display())))?;
    // An absolute path: the demo prints it for the user to `cd` into.
    dir.canonicalize()
        .map_err(|e| ExpectedError::Usage(format!("cannot use `{}`: {e}", dir.display())))
}

/// The reviewer peer's profile: the demo profile, taking todos for reviewers.
fn reviewer_profile() -> String {
    DEMO_PROFILE.replace("role = \"executor\"", "role = \"reviewer\"")
}

/// The goal and the two peers.
fn setup(ctx: &Ctx, project: &Project) -> Result<(), ExpectedError> {
    super::init::write_private(
        &project.state_dir().join("profiles/demo-reviewer.toml"),
        &reviewer_profile(),
    )?;
    let store = Store::open(project)?;
    let actor = ctx.actor();
    let agent = |name: &str, profile: &str, role: &str| -> Result<Op, ExpectedError> {
        Ok(Op::AgentAdd(NewAgent {
            name: name.parse::<AgentName>()?,
            profile: profile.to_owned(),
            capabilities: vec!["demo".to_owned()],
            role: Some(role.to_owned()),
        }))
    };
    store.apply_all(
        vec![
            Op::GoalStart(NewGoal {
                id: None,
                objective: GOAL.to_owned(),
                scope: vec![],
                permission: loopx_kernel::model::PermissionLevel::WorkspaceWrite,
                share: 1.0,
                isolation: isolation(project),
                priority: 0,
            }),
            agent("executor", "demo", "executor")?,
            agent("reviewer", "demo-reviewer", "reviewer")?,
        ],
        &actor,
        ctx.now(),
    )?;
    Ok(())
}

/// The demo project is a git repository with one commit, so that each todo is worked in its
/// own worktree, as in any git project; without git, the agents share the project's tree.
fn isolation(project: &Project) -> Isolation {
    let dir = project.root();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=loopx demo",
                "-c",
                "user.email=demo@loopx.invalid",
            ])
            .args([
                "-c",
                "commit.gpgSign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let readme = "# Demo project\n\nA project for `loopx demo`.\n";
    let made = std::fs::write(dir.join("README.md"), readme).is_ok()
        && git(&["init", "-q"])
        && git(&["add", "README.md"])
        && git(&[
            "commit",
            "-q",
            "--no-verify",
            "-m",
            "Start the demo project",
        ]);
    let repo = loopx_git::worktree::Repo::of(project);
    match repo {
        Ok(repo) if made && repo.check_git_version().is_ok() => match repo.commit("HEAD") {
            Some(base) => {
                loopx_git::worktree::ignore_worktrees(dir);
                Isolation::Worktree { base }
            }
            None => Isolation::Shared,
        },
        _ => Isolation::Shared,
    }
}

/// Answers a question: at the terminal, or with its first option on the user's behalf.
fn answer(app: &loopx_app::App, gate: GateId, options: &[String], interactive: bool) {
    let choice = if interactive {
        ask_at_terminal(gate, options)
    } else {
        let first = options.first().map_or("yes", String::as_str);
        say(&format!(
            "{gate}: no terminal to ask you, so the demo answers with its first option, `{first}`, on your behalf"
        ));
        AnswerChoice::Option(1)
    };
    match app.answer_gate(gate, choice, None) {
        Ok(answered) => {
            let text = answered.gate.answer.map(|a| a.text).unwrap_or_default();
            say(&format!("{gate} answered: {text}"));
        }
        Err(e) => say(&format!("{gate}: the answer was not recorded: {e}")),
    }
}

/// Reads an answer: a number picks an option, other text is the answer, Enter takes the first.
fn ask_at_terminal(gate: GateId, options: &[String]) -> AnswerChoice {
    for (n, option) in options.iter().enumerate() {
        say(&format!("  {}. {option}", n + 1));
    }
    let _ = write!(
        std::io::stderr(),
        "Your answer to {gate} (a number, or your own words; Enter = 1): "
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return AnswerChoice::Option(1);
    }
    let line = line.trim();
    match line.parse::<u32>() {
        _ if line.is_empty() => AnswerChoice::Option(1),
        Ok(n) if n >= 1 && (n as usize) <= options.len() => AnswerChoice::Option(n),
        _ => AnswerChoice::Text(line.to_owned()),
    }
}

fn say(line: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        crate::output::safe_line(line, false)
    );
}

/// `loopx` when the `loopx` on PATH is this very binary, else this binary's absolute path.
fn invoked_as() -> String {
    let Ok(me) = std::env::current_exe().and_then(std::fs::canonicalize) else {
        return "loopx".to_owned();
    };
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("loopx"))
            .find(|candidate| candidate.is_file())
    });
    match on_path.and_then(|p| std::fs::canonicalize(p).ok()) {
        Some(found) if found == me => "loopx".to_owned(),
        _ => me.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reviewer_is_the_demo_profile_with_the_reviewer_role() {
        let reviewer = reviewer_profile();
        assert!(reviewer.contains("role = \"reviewer\""), "{reviewer}");
        assert_eq!(reviewer.replace("reviewer", "executor"), DEMO_PROFILE);
    }
}
