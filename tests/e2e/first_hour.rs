//! Issue 31, the first hour: what a new user hit, each through the real binary.

use serde_json::Value;

use crate::support::{Loopx, todo_state};

/// A profile `name` on the generic adapter whose program is the shell script `script`, at
/// `permission`, for role `role`, and an agent of the same name using it.
fn agent(loopx: &Loopx, name: &str, script: &str, permission: &str, role: &str) {
    let path = loopx.path().join(format!("{name}.sh"));
    std::fs::write(&path, format!("#!/bin/sh\ncat >/dev/null\n{script}\n")).expect("script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&path, mode).expect("chmod");
    std::fs::write(
        loopx.path().join(format!(".loopx/profiles/{name}.toml")),
        format!(
            "adapter = \"generic\"\nprogram = \"{}\"\npermission = \"{permission}\"\nrole = \"{role}\"\n\n[limits]\nmax_time = \"20s\"\n",
            path.display()
        ),
    )
    .expect("profile");
    loopx.ok(&["agent", "add", name, "--profile", name]);
}

const SAYS_DONE: &str =
    "printf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"reviewed it\"}' '```'";

fn once(loopx: &Loopx, agent: &str) -> Value {
    let run = loopx.run(&["run", "--once", "--json", "--agent", agent]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    run.json()
}

/// In the README's quick start a read-only reviewer took the work todo and "finished" it with
/// no change ("t1 had nothing new to land"). A read-only agent takes only todos for its role.
#[test]
fn a_read_only_agent_never_completes_a_work_todo_and_takes_its_review() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Add retries to the HTTP client"]);
    let script = format!("echo changed > wrote.txt 2>/dev/null\n{SAYS_DONE}");
    agent(&loopx, "rev", &script, "read-only", "reviewer");
    loopx.ok(&["todo", "add", "Retry idempotent requests with backoff"]);
    let out = once(&loopx, "rev");
    assert_eq!(out["decision"], "quiet", "{out:#}");
    assert_eq!(out["slice"], Value::Null, "{out:#}");
    let reason = out["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("t1 changes files, and rev is read-only")
            && reason.contains("--role reviewer"),
        "{reason}"
    );
    assert_eq!(todo_state(&loopx, "t1"), "open");
    // Its review work, it takes and finishes.
    loopx.ok(&[
        "todo",
        "add",
        "Review the retry change",
        "--role",
        "reviewer",
    ]);
    let out = once(&loopx, "rev");
    assert_eq!(out["slice"]["todo"], "t2", "{out:#}");
    assert_eq!(todo_state(&loopx, "t2"), "done");
    assert_eq!(
        todo_state(&loopx, "t1"),
        "open",
        "the work todo waits for a writer"
    );
    // loopx's sandbox kept its tree read-only, whatever the (generic) CLI's flags.
    assert!(
        !loopx.path().join("wrote.txt").exists(),
        "a read-only slice wrote its tree"
    );
    // In a read-only goal nobody writes, so nobody is set apart.
    loopx.ok(&["goal", "done", "g1"]);
    loopx.ok(&[
        "goal",
        "start",
        "Audit the HTTP client",
        "--permission",
        "read-only",
    ]);
    loopx.ok(&["todo", "add", "List every call without a timeout"]);
    let out = once(&loopx, "rev");
    assert_eq!(out["slice"]["todo"], "t3", "{out:#}");
}

/// `agent 'exec' is already registered`, with no way to change or remove it.
#[test]
fn an_agent_can_be_changed_and_removed_and_its_claims_go_back_to_open() {
    let loopx = Loopx::with_work();
    let again = loopx.run(&["agent", "add", "exec", "--profile", "demo"]);
    assert_ne!(again.code, 0);
    assert!(
        again
            .stderr
            .contains("loopx agent set exec --profile PROFILE"),
        "{}",
        again.stderr
    );
    let changed = loopx.ok(&[
        "agent",
        "set",
        "exec",
        "--profile",
        "demo",
        "--role",
        "lead",
        "--json",
    ]);
    let changed = changed.json();
    assert_eq!(changed["agent"]["profile"], "demo", "{changed:#}");
    assert_eq!(changed["agent"]["role"], "lead", "{changed:#}");
    let missing = loopx.run(&["agent", "set", "exec", "--profile", "no-such-profile"]);
    assert_ne!(missing.code, 0, "a profile that does not load is refused");

    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    assert_eq!(todo_state(&loopx, "t1"), "claimed");
    loopx.ok(&["agent", "remove", "exec"]);
    assert_eq!(todo_state(&loopx, "t1"), "open", "its claim went back");
    let agents = loopx.ok(&["agent", "list", "--json"]).json();
    assert!(
        agents["agents"]
            .as_array()
            .is_some_and(|a| a.iter().all(|a| a["name"] != "exec")),
        "{agents:#}"
    );
    let log = loopx.ok(&["log", "--json", "-n", "50"]).stdout;
    assert!(
        log.contains("\"agent_changed\"") && log.contains("\"agent_removed\""),
        "{log}"
    );
    let gone = loopx.run(&["agent", "remove", "exec"]);
    assert_eq!(gone.code, 2, "{}", gone.stderr);
}

/// A second `loopx run` on the same project ran silently beside the first, and the same agent
/// had two slices at once. It now says so, and an agent never runs two slices at once.
#[test]
fn a_second_run_says_so_and_an_agent_never_has_two_slices_at_once() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    let done = "sleep 2\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"tidied\"}' '```'";
    agent(&loopx, "a", done, "workspace-write", "executor");
    for title in ["Tidy the README", "Tidy the changelog", "Tidy the guide"] {
        loopx.ok(&["todo", "add", title]);
    }
    let mut first = crate::support::Background::start(&loopx, &["--for", "20s"]);
    first.wait_for("a slice", |e| e["event"] == "slice_started");
    let second = loopx.run(&["run", "--json", "--for", "6s"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second
            .stderr
            .contains("another `loopx run` works on this project (pid ")
            && second.stderr.contains("no agent runs two slices at once"),
        "{}",
        second.stderr
    );
    first.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = first.finish();
    let project = loopx_kernel::Project::at(loopx.path()).expect("the project");
    let store = loopx_kernel::Store::open_read(&project).expect("the store");
    let mut slices: Vec<(u64, u64)> = store
        .read(|s| s.slices_tail(100))
        .expect("reads")
        .iter()
        .map(|s| (s.started_at.0, s.ended_at.map_or(u64::MAX, |t| t.0)))
        .collect();
    slices.sort_unstable();
    assert!(slices.len() >= 2, "{slices:?}");
    for pair in slices.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "agent a ran two slices at once: {slices:?}"
        );
    }
}

/// `docs/agents.md` shows how to write an agent for the generic adapter; its example runs here
/// exactly as printed: prompt on stdin, scratch in `$TMPDIR`, evidence through `loopx report`,
/// the report block at the end.
#[test]
fn the_example_agent_in_docs_agents_md_runs_as_printed() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agents.md"))
            .expect("docs/agents.md");
    let start = docs.find("~~~sh\n").expect("the example") + "~~~sh\n".len();
    let script = &docs[start..start + docs[start..].find("~~~").expect("its end")];
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Keep release notes"]);
    let path = loopx.path().join("notes-agent");
    std::fs::write(&path, script).expect("script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&path, mode).expect("chmod");
    std::fs::write(
        loopx.path().join(".loopx/profiles/notes.toml"),
        format!(
            "adapter = \"generic\"\nprogram = \"{}\"\npermission = \"workspace-write\"\nrole = \"executor\"\n\n[limits]\nmax_time = \"1m\"\n",
            path.display()
        ),
    )
    .expect("profile");
    loopx.ok(&["agent", "add", "notes", "--profile", "notes"]);
    loopx.ok(&["todo", "add", "Note the new retry policy"]);
    // `loopx` on the slice's PATH, as an installed loopx is.
    let bin = std::path::Path::new(crate::support::LOOPX)
        .parent()
        .expect("the binary's directory");
    let path_var = format!("{}:/usr/bin:/bin", bin.display());
    let run = loopx.run_env(&["run", "--once", "--json"], &[("PATH", &path_var)]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let out = run.json();
    assert_eq!(out["slice"]["outcome"], "completed", "{out:#}");
    assert_eq!(out["slice"]["report"], "done", "{out:#}");
    assert_eq!(todo_state(&loopx, "t1"), "done");
    let notes = std::fs::read_to_string(loopx.path().join("NOTES.md")).expect("NOTES.md");
    assert_eq!(notes, "- t1: Note the new retry policy\n");
    let evidence = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert!(evidence.contains("NOTES.md has 1 line(s)"), "{evidence}");
    // The prompt it read on stdin is kept beside its log.
    let prompt = std::fs::read_to_string(loopx.path().join(".loopx/slices/s1.prompt"))
        .expect("the prompt is kept");
    assert!(
        prompt.contains("Your task:\nt1: Note the new retry policy"),
        "{prompt}"
    );
}

/// Ctrl-C on a run that was only waiting printed an error and exited 8 (`INTERRUPTED`).
#[test]
fn ctrl_c_on_a_waiting_run_just_stops_it() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    agent(&loopx, "a", SAYS_DONE, "workspace-write", "executor");
    loopx.ok(&["todo", "add", "Tidy the README", "--role", "nobody-here"]);
    let mut run = crate::support::Background::start(&loopx, &[]);
    run.wait_for("the agent going quiet", |e| e["event"] == "quiet");
    run.signal(nix::sys::signal::Signal::SIGINT);
    let (code, events) = run.finish();
    assert_eq!(code, 0, "{events:#?}");
}

/// After `kill -9` of `loopx run`, `status` listed the dead slice as running.
#[test]
fn after_a_kill_9_status_says_the_slice_s_run_is_gone() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    agent(&loopx, "a", "sleep 30", "workspace-write", "executor");
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let mut run = crate::support::Background::start(&loopx, &[]);
    run.wait_for("the slice", |e| e["event"] == "slice_started");
    run.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = run.finish();
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(status["running"][0]["orphaned"], true, "{status:#}");
    let human = loopx.ok(&["status"]).stdout;
    assert!(
        human.contains("its loopx run is gone: the next `loopx run` recovers it"),
        "{human}"
    );
}
