//! Worktree goals with real git (`docs/design/worktrees.md`): each todo on its own branch in
//! its own worktree, exact attribution, real rollback, landing with conflicts and checks, and
//! a killed supervisor's leftovers found by the repair slice.

use std::path::PathBuf;

use serde_json::Value;

use crate::support::{Background, LOOPX, Loopx, Run, committed_repo, git, script_agent, wait_file};

/// A committed git project (`src/a.txt`, `src/b.txt`, `notes.txt`) with a goal scoped to
/// `src/`, worked in worktrees (the default in git).
fn git_project() -> Loopx {
    let loopx = Loopx::new();
    let root = loopx.path();
    committed_repo(
        root,
        &[
            ("src/a.txt", "a\n"),
            ("src/b.txt", "b\n"),
            ("notes.txt", "the person's notes\n"),
        ],
    );
    let started = loopx.ok(&["goal", "start", "Edit the files", "--scope", "src/"]);
    assert!(
        started.stdout.contains("lands on loopx/g1") || started.stdout.contains("land on loopx/g1"),
        "{}",
        started.stdout
    );
    loopx
}

/// An agent `name` running `body` (a `case "$LOOPX_TODO"` of shell commands); `done_` reports
/// the todo done through the slice's channel. It fails (exit 3) unless its prompt told it
/// where it works: its own worktree of its todo's branch.
fn agent(loopx: &Loopx, name: &str, body: &str) {
    let script = format!(
        "cat > \"$TMPDIR/prompt\"\n\
         grep -q \"in your own git worktree of the branch loopx/g1-$LOOPX_TODO\" \"$TMPDIR/prompt\" || exit 3\n\
         done_() {{ '{LOOPX}' report done \"$@\" > /dev/null; }}\n{body}"
    );
    script_agent(
        loopx,
        name,
        &script,
        "max_time = \"2m\"\nidle_timeout = \"1m\"",
    );
}

/// Agents `ann` and `bob` both running `body`, a todo for each of `titles` (t1, t2), and one
/// `loopx run` of two slices: the peers work at the same time.
fn two_peers(loopx: &Loopx, body: &str, titles: [&str; 2]) -> Run {
    agent(loopx, "ann", body);
    agent(loopx, "bob", body);
    for title in titles {
        loopx.ok(&["todo", "add", title]);
    }
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
}

fn worktree(loopx: &Loopx, todo: &str) -> PathBuf {
    loopx.path().join(".loopx/worktrees/g1").join(todo)
}

fn show(loopx: &Loopx, spec: &str) -> String {
    git(loopx.path(), &["show", spec])
}

fn evidence(loopx: &Loopx, kind: &str) -> Vec<Value> {
    let out = loopx
        .ok(&["evidence", "list", "--limit", "500", "--json"])
        .json();
    let all = out["evidence"].as_array().cloned().unwrap_or_default();
    all.into_iter().filter(|e| e["kind"] == kind).collect()
}

fn gates(loopx: &Loopx) -> Vec<Value> {
    let out = loopx.ok(&["gate", "list", "--json"]).json();
    out["gates"].as_array().cloned().unwrap_or_default()
}

fn state(loopx: &Loopx, todo: &str) -> String {
    crate::support::todo_state(loopx, todo)
}

/// The person's own checkout and branch are never touched.
fn untouched(loopx: &Loopx) {
    let root = loopx.path();
    assert_eq!(
        std::fs::read_to_string(root.join("src/a.txt")).expect("a"),
        "a\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("src/b.txt")).expect("b"),
        "b\n"
    );
    assert_eq!(
        git(root, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert_eq!(git(root, &["rev-list", "--count", "main"]).trim(), "1");
    let status = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(
        // loopx's own directory, and the test's agent scripts.
        status
            .lines()
            .all(|l| l.contains(".loopx/") || l.ends_with(".sh")),
        "the person's tree changed: {status}"
    );
}

#[test]
fn two_agents_editing_different_files_concurrently_both_land() {
    let loopx = git_project();
    let body = r#"case "$LOOPX_TODO" in
  t1) echo one >> src/a.txt ;;
  t2) echo two >> src/b.txt ;;
esac
sleep 1
done_ --summary edited"#;
    let run = two_peers(&loopx, body, ["Edit a", "Edit b"]);
    // Both ran at once: each started before the other ended.
    let started = run.stderr.matches("started: work on").count();
    assert_eq!(started, 2, "{}", run.stderr);
    assert_eq!(state(&loopx, "t1"), "done", "{}", run.stderr);
    assert_eq!(state(&loopx, "t2"), "done", "{}", run.stderr);
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "a\none\n");
    assert_eq!(show(&loopx, "loopx/g1:src/b.txt"), "b\ntwo\n");
    // Each slice is blamed for its own file only, and nothing is a violation.
    assert!(evidence(&loopx, "violation").is_empty());
    assert!(gates(&loopx).is_empty(), "{:?}", gates(&loopx));
    let diffs = evidence(&loopx, "diff");
    let of = |file: &str| {
        diffs
            .iter()
            .filter(|e| e["detail"].as_str().unwrap_or_default().contains(file))
            .count()
    };
    assert_eq!((of("src/a.txt"), of("src/b.txt")), (1, 1), "{diffs:?}");
    // Landed as one merge per todo, each slice one commit authored by its agent.
    let landings = git(
        loopx.path(),
        &["log", "--first-parent", "--format=%s", "main..loopx/g1"],
    );
    assert!(landings.contains("loopx: land t1 (Edit a)"), "{landings}");
    assert!(landings.contains("loopx: land t2 (Edit b)"), "{landings}");
    let authors = git(
        loopx.path(),
        &["log", "--no-merges", "--format=%an", "main..loopx/g1"],
    );
    assert!(
        authors.contains("ann (loopx agent)") && authors.contains("bob (loopx agent)"),
        "{authors}"
    );
    assert_eq!(evidence(&loopx, "land").len(), 2);
    // Done todos' worktrees are gone; their branches stay.
    assert!(!worktree(&loopx, "t1").exists() && !worktree(&loopx, "t2").exists());
    assert!(git(loopx.path(), &["branch", "--list", "loopx/g1-*"]).contains("loopx/g1-t2"));
    untouched(&loopx);
    let todo = loopx.ok(&["todo", "show", "t1"]).stdout;
    assert!(todo.contains("branch    loopx/g1-t1 (landed)"), "{todo}");
}

#[test]
fn two_agents_editing_the_same_line_open_a_conflict_gate() {
    let loopx = git_project();
    let body = r#"case "$LOOPX_TODO" in
  t1) echo one > src/a.txt ;;
  t2) sleep 2; echo two > src/a.txt ;;
esac
done_"#;
    let run = two_peers(&loopx, body, ["Say one", "Say two"]);
    assert_eq!(state(&loopx, "t1"), "done", "{}", run.stderr);
    assert_eq!(state(&loopx, "t2"), "open", "did not land, so not done");
    // Never a silent overwrite: the goal's branch has t1's line.
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "one\n");
    let gates = gates(&loopx);
    let [gate] = gates.as_slice() else {
        panic!("one gate: {gates:?}")
    };
    assert_eq!(
        gate["question"],
        "t2's branch conflicts with t1 in src/a.txt: rebase t2 on the goal branch, or drop t2?"
    );
    assert_eq!(gate["options"], serde_json::json!(["rebase", "drop"]));
    assert_eq!(gate["blocks"]["todos"], serde_json::json!(["t2"]));
    assert!(
        run.stderr.contains("does not land: gate q1"),
        "{}",
        run.stderr
    );
    // t2's work is kept on its branch for the rebase.
    assert_eq!(show(&loopx, "loopx/g1-t2:src/a.txt"), "two\n");
    let status = loopx.ok(&["status"]).stdout;
    assert!(
        status.contains("loopx/g1-t2  +1 commit, not landed"),
        "{status}"
    );
    let diff = loopx.ok(&["diff", "t2"]).stdout;
    assert!(
        diff.contains("-a\n+two") || (diff.contains("-a") && diff.contains("+two")),
        "{diff}"
    );
    // `drop` drops it; the branch stays.
    loopx.ok(&["gate", "answer", "q1", "drop"]);
    assert_eq!(state(&loopx, "t2"), "dropped");
    // Dropping removes the todo's worktree; its branch stays.
    assert!(!worktree(&loopx, "t2").exists());
    assert!(git(loopx.path(), &["branch", "--list", "loopx/g1-t2"]).contains("loopx/g1-t2"));
    untouched(&loopx);
}

#[test]
fn an_out_of_scope_write_blames_only_its_slice_and_rollback_restores_the_checkpoint() {
    let loopx = git_project();
    let body = r#"case "$LOOPX_TODO" in
  t1) sleep 1; echo mine >> src/a.txt ;;
  t2) echo changed >> src/b.txt; echo overwritten > notes.txt; echo new > stray.txt
      echo evil > "$LOOPX_PROJECT/src/a.txt" 2> /dev/null ;;
esac
done_"#;
    let run = two_peers(&loopx, body, ["Edit a", "Edit b"]);
    assert_eq!(
        state(&loopx, "t1"),
        "done",
        "the peer in scope lands: {}",
        run.stderr
    );
    assert_eq!(state(&loopx, "t2"), "open");
    let violations = evidence(&loopx, "violation");
    let [violation] = violations.as_slice() else {
        panic!("one violation: {violations:?}")
    };
    assert_eq!(violation["todo"], "t2");
    let detail = violation["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("notes.txt") && detail.contains("stray.txt"),
        "{detail}"
    );
    assert!(
        !detail.contains("src/a.txt"),
        "the peer's file is not blamed: {detail}"
    );
    let gates = gates(&loopx);
    let [gate] = gates.as_slice() else {
        panic!("one gate: {gates:?}")
    };
    assert_eq!(gate["options"], serde_json::json!(["keep", "rollback"]));
    assert_eq!(gate["blocks"]["todos"], serde_json::json!(["t2"]));
    // The agent could not write in the person's tree: its sandbox allows only its worktree.
    let slices = evidence(&loopx, "slice");
    assert!(
        slices.iter().all(|e| e["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("containment: namespaces+landlock")),
        "{slices:?}"
    );
    let wt = worktree(&loopx, "t2");
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).expect("notes"),
        "overwritten\n"
    );
    // Nobody lands it past the open question, a person's `todo done` included.
    let early = loopx.run(&["todo", "done", "t2"]);
    assert_eq!(early.code, 5, "{}", early.stderr);
    assert!(
        early
            .stderr
            .contains("a gate asks whether to roll its last slice back"),
        "{}",
        early.stderr
    );
    // Rollback really restores the checkpoint: files, and the branch. Answered by number, as
    // the printed command `loopx gate answer qN 1 (keep) | 2 (rollback)` and the board's second button do.
    let id = gate["id"].as_str().expect("an id");
    let answered = loopx.ok(&["gate", "answer", id, "2"]);
    assert!(
        answered.stdout.contains("Rolled back: loopx/g1-t2"),
        "{}",
        answered.stdout
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("notes.txt")).expect("notes"),
        "the person's notes\n"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("src/b.txt")).expect("b"),
        "b\n"
    );
    assert!(!wt.join("stray.txt").exists());
    assert_eq!(
        git(loopx.path(), &["rev-parse", "loopx/g1-t2"]),
        git(loopx.path(), &["rev-parse", "main"]),
        "t2's branch is back where its slice started"
    );
    untouched(&loopx);
}

#[test]
fn a_failing_land_check_keeps_the_todo_from_landing() {
    let loopx = git_project();
    // The check runs on each todo's branch merged with the goal's, contained like a slice.
    loopx.write_config("[land]\ncheck = \"! grep -r bad src/ && touch src/check-ran\"\n");
    let body = r#"case "$LOOPX_TODO" in
  t1) echo bad > src/a.txt ;;
  t2) sleep 1; echo fine >> src/b.txt ;;
esac
done_"#;
    let run = two_peers(&loopx, body, ["Break a", "Edit b"]);
    assert_eq!(state(&loopx, "t1"), "open", "{}", run.stderr);
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "a\n", "t1 did not land");
    assert_eq!(
        show(&loopx, "loopx/g1-t1:src/a.txt"),
        "bad\n",
        "its work is kept"
    );
    let lands = evidence(&loopx, "land");
    assert!(
        lands.iter().any(
            |e| e["summary"] == "t1 did not land: the land check exited 1" && e["todo"] == "t1"
        ),
        "{lands:?}"
    );
    // The peer that passes the check lands; the check's own files do not.
    assert_eq!(state(&loopx, "t2"), "done", "{}", run.stderr);
    assert_eq!(show(&loopx, "loopx/g1:src/b.txt"), "b\nfine\n");
    let files = git(loopx.path(), &["ls-tree", "-r", "--name-only", "loopx/g1"]);
    assert!(!files.contains("check-ran"), "{files}");
    // The run says why t1 did not land (it said "without progress" before).
    assert!(
        run.stderr
            .contains("t1 released; it did not land: the land check exited 1"),
        "{}",
        run.stderr
    );
    // t1 rests, then gets a slice that sees why.
    assert_eq!(crate::support::decision(&loopx, "ann"), "wait");
    untouched(&loopx);
}

/// The slice after a failed land check sees the check's output in its prompt (before, only
/// that the todo did not land). This host's clock is moved past the todo's rest, so the test
/// runs on a redb store only: a PostgreSQL store keeps time by the database's clock.
#[test]
fn the_slice_after_a_failed_land_check_sees_its_output() {
    let loopx = git_project();
    loopx.write_config("[land]\ncheck = \"! grep -r bad src/\"\n");
    agent(&loopx, "ann", "echo bad > src/a.txt\ndone_");
    loopx.ok(&["todo", "add", "Break a"]);
    let first = loopx.ok(&["run", "--once", "--json"]).json();
    assert_eq!(
        first["slice"]["land_failed"], "the land check exited 1",
        "{first:#}"
    );
    let later = [("LOOPX_CLOCK_SKEW_MS", "600000")];
    let next = loopx.run_env(&["run", "--once", "--json", "--agent", "ann"], &later);
    let next = next.json();
    assert_eq!(next["slice"]["todo"], "t1", "{next:#}");
    let id = next["slice"]["id"].as_str().expect("a slice id");
    let prompt = std::fs::read_to_string(loopx.path().join(format!(".loopx/slices/{id}.prompt")))
        .expect("the prompt is kept");
    assert!(
        prompt.contains("t1 did not land: the land check exited 1")
            && prompt.contains("src/a.txt:bad"),
        "{prompt}"
    );
    untouched(&loopx);
}

#[test]
fn after_a_kill_9_the_repair_slice_finds_the_worktree_as_the_agent_left_it() {
    let loopx = git_project();
    agent(
        &loopx,
        "ann",
        r#"if [ -f src/started ]; then
  cat src/a.txt > src/seen
  done_
else
  echo partial > src/a.txt
  touch src/started
  sleep 300
fi"#,
    );
    loopx.ok(&["todo", "add", "Edit a"]);
    let mut bg = Background::start(&loopx, &[]);
    bg.wait_for("the slice", |e| e["event"] == "slice_started");
    wait_file(&worktree(&loopx, "t1").join("src/started"));
    bg.signal(nix::sys::signal::Signal::SIGKILL);
    let (code, _) = bg.finish();
    assert_eq!(code, -1, "killed");

    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = run.json();
    assert_eq!(out["slice"]["kind"], "repair", "{out}");
    assert_eq!(out["slice"]["todo_state"], "done", "{out}");
    // The repair slice read what the killed one wrote.
    assert_eq!(show(&loopx, "loopx/g1:src/seen"), "partial\n");
    // What the killed slice left is in the repair slice's commit, and so in its scope check.
    let changed = &out["slice"]["changed_files"];
    assert_eq!(
        changed,
        &serde_json::json!(["src/a.txt", "src/seen", "src/started"]),
        "{out}"
    );
    untouched(&loopx);
}

#[test]
fn a_project_with_uncommitted_changes_is_asked_about_at_goal_start() {
    let loopx = Loopx::new();
    let root = loopx.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "a\n").expect("a");
    git(root, &["add", "a.txt"]);
    git(root, &["commit", "-q", "-m", "start"]);
    std::fs::write(root.join("a.txt"), "changed\n").expect("a");
    let run = loopx.run(&["goal", "start", "Edit"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("uncommitted changes (a.txt)")
            && run.stderr.contains("--from-head")
            && run.stderr.contains("--isolation shared"),
        "{}",
        run.stderr
    );
    // A todo branch an earlier project left would be taken for this goal's: refused.
    git(root, &["branch", "loopx/g1-t1"]);
    let stale = loopx.run(&["goal", "start", "Edit", "--from-head"]);
    assert_eq!(stale.code, 2, "{}", stale.stderr);
    assert!(
        stale.stderr.contains("branches loopx/g1-t1 exist already"),
        "{}",
        stale.stderr
    );
    git(root, &["branch", "-D", "loopx/g1-t1"]);
    let started = loopx
        .ok(&["goal", "start", "Edit", "--from-head", "--json"])
        .json();
    assert_eq!(
        started["goal"]["isolation"]["worktree"]["base"]
            .as_str()
            .map(str::len),
        Some(40)
    );
    // Outside git, agents share the tree, and status says so.
    let plain = Loopx::new();
    plain.ok(&["goal", "start", "Edit"]);
    let status = plain.ok(&["status"]).stdout;
    assert!(
        status.contains("Shared tree: agents work in this project's own files (the project is not a git repository)"),
        "{status}"
    );
}

/// A worktree loopx no longer needs (its todo unknown to the store, say after a restore from a
/// backup) is found by `doctor` and removed by `doctor --repair`; nothing else is touched.
#[test]
fn doctor_finds_a_stale_worktree_and_removes_it_on_request() {
    let loopx = git_project();
    let root = loopx.path();
    let stale = worktree(&loopx, "t9");
    git(root, &["branch", "loopx/g1-t9", "main"]);
    git(
        root,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            stale.to_str().expect("utf-8"),
            "loopx/g1-t9",
        ],
    );
    let gitdir = std::fs::read_to_string(stale.join(".git")).expect("a .git file");
    std::fs::write(
        root.join(".loopx/worktrees/g1/t9.gitdir"),
        gitdir.trim().trim_start_matches("gitdir:").trim(),
    )
    .expect("the record");
    let doctor = loopx.ok(&["doctor"]).stdout;
    assert!(
        doctor.contains("1 stale worktree(s) in .loopx/worktrees: g1/t9 (unknown)"),
        "{doctor}"
    );
    assert!(stale.exists(), "doctor alone changes nothing");
    let repaired = loopx.ok(&["doctor", "--repair"]).stdout;
    assert!(
        repaired.contains("removed 1 stale worktree(s)"),
        "{repaired}"
    );
    assert!(!stale.exists());
    assert!(git(root, &["branch", "--list", "loopx/g1-t9"]).contains("loopx/g1-t9"));
    assert!(!git(root, &["worktree", "list"]).contains("worktrees/g1/t9"));
    untouched(&loopx);
}

/// A person's `todo done` in a worktree goal lands the todo's work first; a conflict keeps
/// it open, saying why.
#[test]
fn a_person_marking_a_todo_done_lands_it_first() {
    let loopx = git_project();
    // t1 lands while t2 works: t1 waits a second before it ends, so that t2's worktree is
    // made from the goal's branch before t1 lands (under load a slower begin of t2's slice once
    // started from t1's work and had nothing to conflict with), and t2 works on past it.
    let body = r#"case "$LOOPX_TODO" in
  t1) echo one > src/a.txt; sleep 1; done_ ;;
  t2) sleep 3; echo two > src/a.txt ;;
  t3) echo three > src/b.txt ;;
esac"#;
    two_peers(&loopx, body, ["Say one", "Say two"]);
    assert_eq!(state(&loopx, "t1"), "done");
    assert_eq!(state(&loopx, "t2"), "open", "its agent did not say done");
    let refused = loopx.run(&["todo", "done", "t2"]);
    assert_eq!(refused.code, 5, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("t2 stays open: its branch loopx/g1-t2 conflicts with loopx/g1 in src/a.txt"),
        "{}",
        refused.stderr
    );
    assert_eq!(state(&loopx, "t2"), "open");
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "one\n");
    // Without a conflict it lands, and then it is done; its worktree goes.
    loopx.ok(&["todo", "add", "Say three", "--priority", "9"]);
    loopx.ok(&["run", "--max-slices", "1"]);
    let done = loopx.ok(&["todo", "done", "t3"]);
    assert!(
        done.stdout.contains("t3 landed on loopx/g1 as"),
        "{}",
        done.stdout
    );
    assert_eq!(state(&loopx, "t3"), "done");
    assert_eq!(show(&loopx, "loopx/g1:src/b.txt"), "three\n");
    assert!(!worktree(&loopx, "t3").exists());
    untouched(&loopx);
}

/// The agent may write git's files for its worktree (its own git needs them): it points
/// `HEAD` at the person's branch, the common directory at a repository of its own whose config
/// runs a program on `git add`, and the reflog at a file outside. loopx's own git reads none
/// of it: no branch but the todo's moves, nothing runs, nothing is written outside.
#[test]
fn an_agent_rewriting_git_s_files_for_its_worktree_moves_nothing_and_runs_nothing() {
    let loopx = git_project();
    let victim = loopx.path().join("victim");
    let ran = loopx.path().join("filter-ran");
    agent(
        &loopx,
        "ann",
        &format!(
            r#"g=$(git rev-parse --absolute-git-dir)
objects=$(git rev-parse --git-common-dir)/objects
echo "ref: refs/heads/main" > "$g/HEAD"
mkdir -p "$g/logs" && ln -sf '{victim}' "$g/logs/HEAD"
mkdir -p .fake/refs/heads .fake/objects/info
echo "$objects" > .fake/objects/info/alternates
cp "$g/HEAD" .fake/HEAD
printf '[filter "x"]\n\tclean = touch {ran}\n' > .fake/config
echo "$PWD/.fake" > "$g/commondir"
echo '* filter=x' > src/.gitattributes
echo hacked > src/a.txt
touch "$objects/planted" 2> /dev/null && echo yes > src/objects-writable
done_"#,
            victim = victim.display(),
            ran = ran.display()
        ),
    );
    loopx.ok(&["todo", "add", "Edit a"]);
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !ran.exists(),
        "a program of the agent's ran outside its sandbox"
    );
    assert!(!victim.exists(), "loopx wrote where the agent pointed");
    untouched(&loopx);
    // The repository's objects are only read in the sandbox.
    assert!(!loopx.path().join(".git/objects/planted").exists());
    // The slice is one commit on the checkpoint, and it is all the scope check saw.
    let parent = git(loopx.path(), &["rev-parse", "loopx/g1-t1^"]);
    assert_eq!(parent, git(loopx.path(), &["rev-parse", "main"]));
    let slice = &run.json()["slice"];
    assert!(
        slice["changed_files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|p| p == "src/a.txt")),
        "{slice}"
    );
    // The next slice's agent finds its own git sane again: detached at the todo's branch.
    let wt = worktree(&loopx, "t1");
    let head = std::fs::read_to_string(
        std::fs::read_to_string(wt.join(".git"))
            .expect("a .git file")
            .trim()
            .trim_start_matches("gitdir:")
            .trim()
            .to_owned()
            + "/HEAD",
    );
    if state(&loopx, "t1") != "done" {
        assert!(head.is_ok_and(|h| !h.starts_with("ref:")), "HEAD rebuilt");
    }
}

/// An agent's own commits work in its worktree (into a quarantine of its slice), and loopx's
/// slice commit takes the files, not the agent's history.
#[test]
fn an_agent_may_commit_in_its_worktree() {
    let loopx = git_project();
    agent(
        &loopx,
        "ann",
        r#"echo mine > src/a.txt
git -c user.name=a -c user.email=a@a commit -q -a -m "the agent's own commit" && echo ok > src/committed
done_"#,
    );
    loopx.ok(&["todo", "add", "Edit a"]);
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(state(&loopx, "t1"), "done", "{}", run.stdout);
    assert_eq!(show(&loopx, "loopx/g1:src/committed"), "ok\n");
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "mine\n");
    let log = git(loopx.path(), &["log", "--format=%s", "main..loopx/g1-t1"]);
    assert!(!log.contains("the agent's own commit"), "{log}");
    untouched(&loopx);
}

/// `rebase`: before the todo's next slice loopx merges the goal's branch into the todo's,
/// conflict markers and all; the agent resolves them, and then the todo lands.
#[test]
fn a_rebase_answer_gives_the_next_slice_the_conflict_to_resolve() {
    let loopx = git_project();
    let body = r#"case "$LOOPX_TODO" in
  t1) echo one > src/a.txt ;;
  t2) if grep -q '<<<<<<<' src/a.txt; then printf 'one\ntwo\n' > src/a.txt; else sleep 2; echo two > src/a.txt; fi ;;
esac
done_"#;
    two_peers(&loopx, body, ["Say one", "Say two"]);
    assert_eq!(state(&loopx, "t2"), "open");
    loopx.ok(&["gate", "answer", "q1", "rebase"]);
    let run = loopx.run(&["run", "--max-slices", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(state(&loopx, "t2"), "done", "{}", run.stderr);
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "one\ntwo\n");
    let merges = git(loopx.path(), &["log", "--format=%s", "main..loopx/g1-t2"]);
    assert!(
        merges.contains("loopx: merge loopx/g1 into t2 before slice s3"),
        "{merges}"
    );
    untouched(&loopx);
}

/// Without Landlock (`[sandbox] mode = "off"` here) nothing keeps the agent out of the
/// project's own tree: a worktree slice is then checked there too, and a write there is a
/// violation.
#[test]
fn an_unsandboxed_worktree_slice_writing_the_project_s_own_tree_is_a_violation() {
    let loopx = git_project();
    crate::support::cli_stand_in(
        &loopx,
        "ann",
        "generic",
        &format!(
            "cat > /dev/null\necho mine > src/b.txt\necho evil > \"$LOOPX_PROJECT/src/a.txt\"\n'{LOOPX}' report done > /dev/null"
        ),
        "\n[limits]\nmax_time = \"1m\"\n\n[sandbox]\nmode = \"off\"\n",
    );
    loopx.ok(&["todo", "add", "Edit b"]);
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(
        slice["violations"],
        serde_json::json!(["src/a.txt (in the project's own tree)"]),
        "{slice}"
    );
    assert_eq!(slice["todo_state"], "released", "{slice}");
    assert_eq!(show(&loopx, "loopx/g1:src/b.txt"), "b\n", "nothing landed");
}

/// A nested repository in the worktree is the agent's, config included: looking at the
/// worktree (`loopx diff`) never runs git inside it, where a clean filter is a program.
#[test]
fn a_nested_repository_s_filter_never_runs_outside_the_sandbox() {
    let loopx = git_project();
    let ran = loopx.path().join("filter-ran");
    agent(
        &loopx,
        "ann",
        &format!(
            r#"n() {{ env -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES git -C src/sub -c user.name=a -c user.email=a@a "$@"; }}
mkdir -p src/sub && n init -q && echo x > src/sub/x && n add x && n commit -q -m x
printf '[filter "evil"]\n\tclean = touch {ran}\n' >> src/sub/.git/config
echo '* filter=evil' > src/sub/.gitattributes
touch -d 2001-01-01 src/sub/x
echo more >> src/b.txt"#,
            ran = ran.display()
        ),
    );
    loopx.ok(&["todo", "add", "Edit b"]);
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!ran.exists(), "the filter ran as the slice ended");
    // The slice ended without a done: its worktree, nested repository and all, stays.
    touch_stale(&worktree(&loopx, "t1").join("src/sub/x"));
    echo_into(&worktree(&loopx, "t1").join("src/b.txt"), "uncommitted\n");
    let diff = loopx.ok(&["diff", "t1"]).stdout;
    assert!(diff.contains("uncommitted"), "{diff}");
    assert!(!ran.exists(), "the filter ran for `loopx diff`");
    // Staging the worktree onto the commit that holds the nested repository (as every
    // slice's start and end do; here a person's `todo done`, refused for the uncommitted work).
    touch_stale(&worktree(&loopx, "t1").join("src/sub/x"));
    let done = loopx.run(&["todo", "done", "t1"]);
    assert_eq!(done.code, 5, "{}", done.stderr);
    assert!(!ran.exists(), "the filter ran for `todo done`");
    untouched(&loopx);
}

fn touch_stale(path: &std::path::Path) {
    let status = std::process::Command::new("touch")
        .args(["-d", "2001-01-01"])
        .arg(path)
        .status()
        .expect("touch runs");
    assert!(status.success());
}

fn echo_into(path: &std::path::Path, text: &str) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("append");
}

/// Issue 31: a slice of a Python project committed and landed its `__pycache__/*.pyc` in a
/// repository without ignore rules, and the agent's own `git commit` seemed to fail. loopx's
/// default rules keep build outputs out; the agent's commit works and is folded into loopx's.
#[test]
fn build_outputs_stay_out_of_a_repository_without_ignores_and_the_agent_may_commit() {
    let loopx = git_project();
    agent(
        &loopx,
        "ann",
        "mkdir -p src/__pycache__ && echo x > src/__pycache__/a.cpython-311.pyc\n\
         echo 'print(1)' > src/c.py\n\
         git add -A && git -c user.name=ann -c user.email=ann@x commit -qm mine 2> src/commit.err; echo $? > src/commit.rc\n\
         done_",
    );
    loopx.ok(&["todo", "add", "Add c.py"]);
    let out = loopx.ok(&["run", "--once", "--json"]).json();
    assert_eq!(out["slice"]["todo_state"], "done", "{out:#}");
    let files = git(loopx.path(), &["ls-tree", "-r", "--name-only", "loopx/g1"]);
    assert!(files.contains("src/c.py"), "{files}");
    assert!(
        !files.contains("__pycache__"),
        "a build output landed: {files}"
    );
    assert_eq!(
        show(&loopx, "loopx/g1:src/commit.rc"),
        "0\n",
        "the agent's commit worked"
    );
}

/// Issue 31: `keep` on a scope question did not finish the todo its slice reported done (in
/// a worktree goal it only gave the todo a fresh budget). Kept, the todo's branch lands on the
/// goal's branch, out-of-scope file and all, and the todo is done.
#[test]
fn keep_on_a_rollback_gate_lands_a_todo_its_slice_reported_done() {
    let loopx = git_project();
    agent(
        &loopx,
        "ann",
        "echo more >> src/a.txt\necho stray > stray.txt\ndone_",
    );
    loopx.ok(&["todo", "add", "Edit a"]);
    let out = loopx.ok(&["run", "--once", "--json"]).json();
    assert_eq!(out["slice"]["todo_state"], "released", "{out:#}");
    let gates = gates(&loopx);
    let [gate] = gates.as_slice() else {
        panic!("one gate: {gates:?}")
    };
    assert_eq!(gate["kind"]["rollback"]["reported_done"], true, "{gate:#}");
    let id = gate["id"].as_str().expect("an id");
    let kept = loopx.ok(&["gate", "answer", id, "1"]);
    assert!(
        kept.stdout.contains("Kept: t1 landed on loopx/g1 as "),
        "{}",
        kept.stdout
    );
    assert_eq!(state(&loopx, "t1"), "done");
    assert_eq!(show(&loopx, "loopx/g1:stray.txt"), "stray\n");
    assert_eq!(show(&loopx, "loopx/g1:src/a.txt"), "a\nmore\n");
    untouched(&loopx);
}
