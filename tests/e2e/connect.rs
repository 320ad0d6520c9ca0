//! `loopx connect` in an existing repository: `.loopx/`, a profile for each agent CLI on PATH
//! and whether it shows a login, the project in `loopx projects`, and `loopx doctor`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{Loopx, Terminal};

/// A `PATH` of `dir` and git alone: whatever agent CLIs this machine has stay out of sight.
fn path_with(dir: &Path) -> String {
    std::os::unix::fs::symlink(crate::support::real_git(), dir.join("git")).expect("link git");
    dir.display().to_string()
}

/// Stand-ins for two installed agent CLIs (`claude`, `codex`), each answering `--version`.
fn stand_ins(dir: &Path) {
    for (program, version) in [("claude", "2.1.0"), ("codex", "codex-cli 0.171.0")] {
        let path = dir.join(program);
        std::fs::write(&path, format!("#!/bin/sh\necho '{version}'\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

#[test]
fn connect_writes_a_profile_per_cli_registers_and_runs_doctor() {
    let loopx = Loopx::empty();
    loopx_testkit::committed_repo(loopx.path(), &[("README.md", "# app\n")]);
    let bin = tempfile::tempdir().expect("temp dir");
    stand_ins(bin.path());
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join(".codex")).expect("dir");
    std::fs::write(home.path().join(".codex/auth.json"), "{}").expect("write");
    let path = path_with(bin.path());
    let env = [
        ("PATH", path.as_str()),
        ("HOME", home.path().to_str().expect("utf-8")),
        ("ANTHROPIC_API_KEY", ""),
        ("CLAUDE_CODE_OAUTH_TOKEN", ""),
        ("OPENAI_API_KEY", ""),
        ("CODEX_API_KEY", ""),
    ];
    let connected = loopx.run_env(&["connect", "--json"], &env);
    let doctor = loopx.run_env(&["doctor"], &env);
    assert_eq!(connected.code, doctor.code, "{connected:?}\n{doctor:?}");
    let json = connected.json();
    let c = &json["connect"];
    assert_eq!(c["created"], true, "{json}");
    assert_eq!(c["registered"], true, "{json}");
    assert_eq!(
        c["profiles_written"],
        serde_json::json!(["claude-code", "codex"])
    );
    assert_eq!(c["clis"][0]["login"]["seen"], "none", "{json}");
    assert!(
        c["clis"][0]["login"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("/login"))
    );
    assert_eq!(
        c["clis"][1]["login"],
        serde_json::json!({"seen": "file", "path": "~/.codex/auth.json"})
    );
    assert_eq!(c["doctor"]["ok"], doctor.code == 0, "{json}");
    for name in ["claude-code", "codex"] {
        let profile = loopx.path().join(format!(".loopx/profiles/{name}.toml"));
        let checked = loopx.run_env(&["profile", "check", name], &env);
        assert!(
            profile.is_file() && checked.code == 0,
            "{name}: {checked:?}"
        );
    }
    let listed = loopx.run(&["projects", "--json"]).json();
    let root = loopx.path().canonicalize().expect("root");
    assert_eq!(
        listed["projects"][0]["root"],
        root.to_str().expect("utf-8"),
        "{listed}"
    );

    // Again, with a key set and a profile a person changed: the profile is kept, the key seen.
    let mine = loopx.path().join(".loopx/profiles/codex.toml");
    let changed = std::fs::read_to_string(&mine)
        .expect("read")
        .replace("30m", "45m");
    std::fs::write(&mine, &changed).expect("write");
    let mut keyed = env.to_vec();
    keyed[2] = ("ANTHROPIC_API_KEY", "sk-test");
    let again = loopx.run_env(&["connect", "--json"], &keyed).json();
    assert_eq!(again["connect"]["created"], false, "{again}");
    assert_eq!(again["connect"]["profiles_written"], serde_json::json!([]));
    assert_eq!(
        again["connect"]["clis"][0]["login"],
        serde_json::json!({"seen": "key", "variable": "ANTHROPIC_API_KEY"})
    );
    assert_eq!(std::fs::read_to_string(&mine).expect("read"), changed);
    assert!(
        !again.to_string().contains("sk-test"),
        "the key's value is never shown"
    );
}

#[test]
fn connect_says_what_to_do_when_no_agent_cli_is_installed() {
    let loopx = Loopx::empty();
    let empty = tempfile::tempdir().expect("temp dir");
    let path = path_with(empty.path());
    let run = loopx.run_env(&["connect"], &[("PATH", path.as_str())]);
    assert!(run.stdout.contains("No agent CLI found on PATH"), "{run:?}");
    assert!(run.stdout.contains("Next:"), "{run:?}");
    assert!(loopx.path().join(".loopx").is_dir());
}

#[test]
fn a_guided_start_in_a_terminal_starts_the_goal_it_was_told() {
    let loopx = Loopx::empty();
    loopx_testkit::committed_repo(
        loopx.path(),
        &[
            ("src/lib.rs", "\n"),
            ("tests/it.rs", "\n"),
            ("README.md", "# app\n"),
        ],
    );
    let bin = tempfile::tempdir().expect("temp dir");
    stand_ins(bin.path());
    let path = path_with(bin.path());
    let home = tempfile::tempdir().expect("temp dir");
    let env = [
        ("PATH", path.as_str()),
        ("HOME", home.path().to_str().expect("utf-8")),
    ];
    assert_eq!(
        loopx.run_env(&["connect"], &env).code,
        loopx.run_env(&["doctor"], &env).code
    );
    let command = format!(
        "cd '{}' && env PATH='{path}' HOME='{}' XDG_STATE_HOME='{}' '{}' goal start --guided; echo \"exit=$?\"; sleep 60",
        loopx.path().display(),
        home.path().display(),
        loopx.state.path().display(),
        crate::support::LOOPX,
    );
    let terminal = Terminal::start(&command, 120, 40);
    terminal.answer(
        "What should the agents achieve?",
        &["Add retries to the client", "Enter"],
    );
    // src is the first folder: picked, then accepted.
    terminal.answer("Which folders may the agents change?", &["Space", "Enter"]);
    terminal.answer("How much may an agent do?", &["Down", "Enter"]);
    terminal.answer("Add an agent `claude-code`", &["y"]);
    terminal.answer("Add an agent `codex`", &["n"]);
    terminal.answer("How should the work begin?", &["Enter"]);
    terminal.answer("A todo (empty: done)", &["Retry idempotent GETs", "Enter"]);
    loopx_testkit::wait_for(
        "the second todo's question",
        std::time::Duration::from_secs(20),
        || terminal.screen().matches("A todo (empty: done)").count() >= 2,
    );
    terminal.tmux(&["send-keys", "Enter"]).expect("send-keys");
    terminal.answer("exit=0", &[]);
    let screen = terminal.screen();
    assert!(
        screen.contains("Added agent claude-code (profile claude-code)"),
        "{screen}"
    );
    assert!(
        screen.contains("Added t1: Retry idempotent GETs"),
        "{screen}"
    );

    let goal = loopx.ok(&["goal", "show", "--json"]).json();
    assert_eq!(
        goal["goal"]["objective"], "Add retries to the client",
        "{goal}"
    );
    assert_eq!(
        goal["goal"]["scope"],
        serde_json::json!(["src/**"]),
        "{goal}"
    );
    assert_eq!(goal["goal"]["permission"], "read-only", "{goal}");
    let agents = loopx.ok(&["agent", "list", "--json"]).json();
    let names: Vec<&str> = agents["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["claude-code"], "{agents}");
    let todos = loopx.ok(&["todo", "list", "--json"]).json();
    assert_eq!(
        todos["todos"][0]["title"], "Retry idempotent GETs",
        "{todos}"
    );
}

#[test]
fn a_guided_start_without_a_terminal_takes_its_answers_from_flags() {
    let loopx = Loopx::empty();
    loopx_testkit::committed_repo(loopx.path(), &[("src/lib.rs", "\n")]);
    loopx.ok(&["init"]);
    let asked = loopx.run(&["goal", "start", "--guided"]);
    assert_eq!(asked.code, 2, "{asked:?}");
    assert!(asked.stderr.contains("--goal-text"), "{}", asked.stderr);
    let json = loopx
        .ok(&[
            "goal",
            "start",
            "--guided",
            "--goal-text",
            "Add retries",
            "--add-agent",
            "exec=demo",
            "--todo",
            "Retry GETs",
            "--todo",
            "Test it",
            "--json",
        ])
        .json();
    let guided = &json["guided"];
    assert_eq!(guided["goal"]["objective"], "Add retries", "{json}");
    assert_eq!(guided["goal"]["permission"], "workspace-write", "{json}");
    assert_eq!(guided["agents_added"], serde_json::json!(["exec"]));
    assert_eq!(guided["todos_added"][1]["title"], "Test it", "{json}");
    loopx.ok(&["goal", "done"]);
    let wrong = loopx.run(&[
        "goal",
        "start",
        "--guided",
        "--goal-text",
        "x y z",
        "--add-agent",
        "exec",
    ]);
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.stderr.contains("NAME=PROFILE"), "{}", wrong.stderr);
    // An agent that cannot be added stops the start before the goal exists: a name taken,
    // a profile that does not load.
    for (spec, words) in [("exec=demo", "exists already"), ("other=nosuch", "nosuch")] {
        let args = [
            "goal",
            "start",
            "--guided",
            "--goal-text",
            "Another goal",
            "--add-agent",
            spec,
        ];
        let refused = loopx.run(&args);
        assert_ne!(refused.code, 0, "{refused:?}");
        assert!(refused.stderr.contains(words), "{spec}: {}", refused.stderr);
        let goals = loopx.ok(&["goal", "list", "--json"]).json();
        let active = goals["goals"].as_array().expect("goals").iter();
        assert_eq!(
            active.filter(|g| g["status"] == "active").count(),
            0,
            "{goals}"
        );
    }
}
