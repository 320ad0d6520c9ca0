//! `loopx projects`: every project a person ran `loopx init` in, at a glance, from a list kept
//! in their state directory (`docs/projects.md`).

use crate::support::Loopx;

/// A project whose commands share `state` (one person's state directory) with others.
fn project_of(state: &std::path::Path) -> Loopx {
    let loopx = Loopx::empty();
    let init = loopx.run_env(&["init"], &[("XDG_STATE_HOME", path(state))]);
    assert_eq!(init.code, 0, "{init:?}");
    loopx
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

fn projects(state: &std::path::Path, args: &[&str]) -> crate::support::Run {
    let anywhere = Loopx::empty();
    let args: Vec<&str> = ["projects"].iter().chain(args).copied().collect();
    anywhere.run_env(&args, &[("XDG_STATE_HOME", path(state))])
}

#[test]
fn init_registers_each_project_and_projects_shows_what_each_holds() {
    let state = tempfile::tempdir().expect("temp dir");
    let busy = project_of(state.path());
    let env = [("XDG_STATE_HOME", path(state.path()))];
    assert_eq!(
        busy.run_env(&["goal", "start", "Ship the \x1b[31mthing"], &env)
            .code,
        0
    );
    assert_eq!(
        busy.run_env(
            &[
                "gate",
                "ask",
                "Should the project be MIT (a) or Apache-2.0 (b)?",
                "--global"
            ],
            &env
        )
        .code,
        0
    );
    let quiet = project_of(state.path());
    // Again in the same project: listed once.
    assert_eq!(quiet.run_env(&["init"], &env).code, 0);

    let listed = projects(state.path(), &["--json"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let json = listed.json();
    let all = json["projects"].as_array().expect("a list");
    assert_eq!(all.len(), 2, "{json}");
    let root = |l: &Loopx| path(&l.path().canonicalize().expect("root")).to_owned();
    assert_eq!(all[0]["root"], root(&busy));
    assert_eq!(all[0]["state"], "read");
    assert_eq!(all[0]["goals"][0]["id"], "g1");
    assert_eq!(all[0]["questions"], 1);
    assert_eq!(all[0]["running"], 0);
    assert!(all[0]["last_activity"].is_string(), "{json}");
    assert_eq!(all[1]["root"], root(&quiet));
    assert_eq!(all[1]["goals"].as_array().map(Vec::len), Some(0));

    let text = projects(state.path(), &[]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout
            .contains("1 active goal, 1 question open, 0 running"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("g1  Ship the ^[[31mthing"),
        "{}",
        text.stdout
    );
    assert!(
        !text.stdout.contains('\x1b'),
        "no escape reaches the terminal"
    );

    // A project deleted since is shown as gone, and forgetting it removes it.
    let quiet_root = root(&quiet);
    drop(quiet);
    let gone = projects(state.path(), &[]);
    assert!(
        gone.stdout.contains(&format!(
            "{quiet_root}: gone (moved or deleted; `loopx projects forget {quiet_root}`"
        )),
        "{}",
        gone.stdout
    );
    assert_eq!(projects(state.path(), &["forget", &quiet_root]).code, 0);
    let after = projects(state.path(), &["--json"]).json();
    assert_eq!(
        after["projects"].as_array().map(Vec::len),
        Some(1),
        "{after}"
    );
    let again = projects(state.path(), &["forget", &quiet_root]);
    assert_eq!(again.code, 2, "{again:?}");
    assert!(
        again.stderr.contains("is not in the list of projects"),
        "{}",
        again.stderr
    );
}

#[test]
fn a_registry_that_does_not_parse_is_named_and_left_as_it_is() {
    let state = tempfile::tempdir().expect("temp dir");
    let file = state.path().join("loopx/projects.json");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    std::fs::write(&file, "{\"version\": 1,\n \"projects\": [oops]}").expect("write");
    let listed = projects(state.path(), &[]);
    assert_eq!(listed.code, 3, "{listed:?}");
    assert!(listed.stderr.contains(path(&file)), "{}", listed.stderr);
    assert!(listed.stderr.contains("line 2"), "{}", listed.stderr);
    // `loopx init` still makes the project, says why it is not listed, and keeps the file.
    let loopx = Loopx::empty();
    let init = loopx.run_env(&["init"], &[("XDG_STATE_HOME", path(state.path()))]);
    assert_eq!(init.code, 0, "{init:?}");
    assert!(
        init.stdout.contains("not in `loopx projects`"),
        "{}",
        init.stdout
    );
    assert!(loopx.path().join(".loopx").is_dir());
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "{\"version\": 1,\n \"projects\": [oops]}"
    );
}

#[test]
fn projects_registered_at_once_are_all_kept() {
    let state = tempfile::tempdir().expect("temp dir");
    let made: Vec<Loopx> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| project_of(state.path())))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("init"))
            .collect()
    });
    let json = projects(state.path(), &["--json"]).json();
    assert_eq!(
        json["projects"].as_array().map(Vec::len),
        Some(made.len()),
        "{json}"
    );
}

#[test]
fn an_agent_inside_a_slice_cannot_list_or_forget_projects() {
    let state = tempfile::tempdir().expect("temp dir");
    let loopx = project_of(state.path());
    for args in [vec!["projects"], vec!["projects", "forget", "/tmp"]] {
        let refused = loopx.run_env(
            &args,
            &[
                ("XDG_STATE_HOME", path(state.path())),
                ("LOOPX_SLICE", "s1"),
            ],
        );
        assert_eq!(refused.code, 6, "{refused:?}");
    }
    assert_eq!(
        projects(state.path(), &["--json"]).json()["projects"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[test]
fn status_all_shows_each_project_s_screen_and_says_which_cannot_be_shown() {
    let state = tempfile::tempdir().expect("temp dir");
    let env = [("XDG_STATE_HOME", path(state.path()))];
    let first = project_of(state.path());
    assert_eq!(
        first
            .run_env(&["goal", "start", "Ship the client"], &env)
            .code,
        0
    );
    assert_eq!(first.run_env(&["todo", "add", "Add retries"], &env).code, 0);
    let broken = project_of(state.path());
    std::fs::write(broken.path().join(".loopx/loopx.toml"), "garbage [\n").expect("write");
    let anywhere = Loopx::empty();
    let all = anywhere.run_env(&["status", "--all"], &env);
    assert_eq!(all.code, 0, "{all:?}");
    let root = |l: &Loopx| path(&l.path().canonicalize().expect("root")).to_owned();
    let at = |text: &str| {
        all.stdout
            .find(text)
            .unwrap_or_else(|| panic!("{text}: {}", all.stdout))
    };
    assert!(at(&format!("== {}", root(&first))) < at("Goal g1 (active): Ship the client"));
    assert!(at("Goal g1 (active)") < at("t1    [0] Add retries"));
    assert!(at("t1    [0] Add retries") < at(&format!("== {}", root(&broken))));
    assert!(all.stdout.contains("cannot be shown: "), "{}", all.stdout);
    assert!(all.stdout.contains("loopx.toml:1"), "{}", all.stdout);

    let json = anywhere
        .run_env(&["status", "--all", "--json"], &env)
        .json();
    let projects = json["projects"].as_array().expect("a list");
    assert_eq!(projects[0]["status"]["goal"]["id"], "g1", "{json}");
    assert!(projects[1]["error"].is_string(), "{json}");
}
