//! A second goal after a finished one (issue 47, item 3): `goal start` names the finished
//! goal's work its start lacks and the merge that brings it in, `--from g1` starts from it, and
//! `loopx clean` removes what finished goals left, keeping work found nowhere else.

use std::path::Path;

use crate::support::{Background, LOOPX, Loopx, committed_repo, git, script_agent};

/// A committed git project (`src/a.txt`, `src/b.txt`) with agent `exec`, whose script runs
/// the `case "$LOOPX_TODO"` arms of `arms` (`done_` reports the todo done). Its scripts are kept
/// out of `git status`: a goal starts from a clean checkout.
fn project(arms: &str) -> Loopx {
    let loopx = Loopx::new();
    let root = loopx.path();
    committed_repo(root, &[("src/a.txt", "a\n"), ("src/b.txt", "b\n")]);
    std::fs::write(root.join(".git/info/exclude"), "*.sh\n").expect("exclude");
    let script = format!(
        "done_() {{ '{LOOPX}' report done > /dev/null; }}\ncase \"$LOOPX_TODO\" in\n{arms}\n*) ;;\nesac"
    );
    script_agent(
        &loopx,
        "exec",
        &script,
        "max_time = \"2m\"\nidle_timeout = \"1m\"",
    );
    loopx
}

/// Goal g1, whose todo t1 (`Fix a`) its agent finished: landed on `loopx/g1`, then the goal
/// marked done by the person. The commit t1 landed as.
fn g1_done_with_t1_landed(loopx: &Loopx) -> String {
    loopx.ok(&["goal", "start", "Fix a"]);
    loopx.ok(&["todo", "add", "Fix a"]);
    loopx.ok(&["run", "--max-slices", "1"]);
    assert_eq!(crate::support::todo_state(loopx, "t1"), "done");
    loopx.ok(&["goal", "done", "g1"]);
    let landed = rev(loopx, "loopx/g1");
    assert_eq!(show(loopx, "loopx/g1:src/a.txt"), "fixed\n");
    landed
}

fn rev(loopx: &Loopx, name: &str) -> String {
    git(loopx.path(), &["rev-parse", name]).trim().to_owned()
}

fn show(loopx: &Loopx, spec: &str) -> String {
    git(loopx.path(), &["show", spec])
}

fn branches(loopx: &Loopx) -> Vec<String> {
    git(
        loopx.path(),
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/loopx/",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

fn has_branch(loopx: &Loopx, name: &str) -> bool {
    branches(loopx).iter().any(|b| b == name)
}

fn worktree(loopx: &Loopx, goal: &str, seat: &str) -> std::path::PathBuf {
    loopx.path().join(".loopx/worktrees").join(goal).join(seat)
}

/// Whether git still has a worktree registered at `dir`.
fn registered(root: &Path, dir: &Path) -> bool {
    git(root, &["worktree", "list", "--porcelain"])
        .lines()
        .any(|l| l.strip_prefix("worktree ").map(Path::new) == Some(dir))
}

/// `goal start "Add stdev()" FLAGS…` is refused (exit 2) with `says` on stderr.
fn refused(loopx: &Loopx, flags: &[&str], says: &str) {
    let run = loopx.run(&[&["goal", "start", "Add stdev()"], flags].concat());
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(says), "{says:?} in: {}", run.stderr);
}

const FIX_A: &str = "t1) echo fixed > src/a.txt; done_ ;;";

#[test]
fn a_goal_started_after_a_finished_one_names_its_unmerged_branch_and_the_merge() {
    let loopx = project(FIX_A);
    g1_done_with_t1_landed(&loopx);
    let main = rev(&loopx, "main");

    let started = loopx.ok(&["goal", "start", "Add stdev()"]);
    let out = &started.stdout;
    assert!(
        out.contains(&format!(
            "warning: g1 is done, and its branch loopx/g1 has 2 commits that g2 starts without (it starts at {}): g2's agents will not see g1's work.",
            &main[..12]
        )),
        "{out}"
    );
    assert!(out.contains("`git merge loopx/g1`"), "{out}");
    assert!(out.contains("`loopx goal start --from g1 "), "{out}");

    // With --json the document stays whole on stdout, and the warning goes to stderr.
    loopx.ok(&["goal", "done", "g2"]);
    let json = loopx.ok(&["goal", "start", "Add stdev()", "--json"]);
    assert_eq!(json.json()["goal"]["id"], "g3");
    assert!(
        json.stderr.contains("`git merge loopx/g1`"),
        "{}",
        json.stderr
    );
    assert!(
        !json.stderr.contains("loopx/g2"),
        "g2 landed nothing: {}",
        json.stderr
    );

    // Once the person merged it, a new goal starts with it, and nothing is said.
    loopx.ok(&["goal", "done", "g3"]);
    git(
        loopx.path(),
        &["merge", "-q", "--no-ff", "-m", "g1", "loopx/g1"],
    );
    let merged = loopx.ok(&["goal", "start", "Add mean()"]);
    assert!(!merged.stdout.contains("warning"), "{}", merged.stdout);
    loopx.ok(&["goal", "done", "g4"]);

    // Merged now, g1's branch goes with `clean`; so do the empty branches of g2 and g3.
    let cleaned = loopx.ok(&["clean"]);
    assert!(
        cleaned.stdout.contains("removed branch loopx/g1 (was "),
        "{}",
        cleaned.stdout
    );
    assert!(
        cleaned.stdout.contains("removed branch loopx/g1-t1 (was "),
        "{}",
        cleaned.stdout
    );
    assert_eq!(branches(&loopx), Vec::<String>::new());
}

#[test]
fn goal_start_from_a_finished_goal_starts_at_its_branch() {
    let loopx = project(FIX_A);
    let landed = g1_done_with_t1_landed(&loopx);

    // What `--from` takes, and what it refuses, saying why.
    refused(
        &loopx,
        &["--from", "g9"],
        "`--from g9`: there is no goal g9",
    );
    refused(&loopx, &["--from", "main"], "`--from main` names no goal");
    refused(
        &loopx,
        &["--from", "g1", "--isolation", "shared"],
        "`--isolation shared` gives the goal no branch",
    );
    loopx.ok(&["goal", "start", "Tidy", "--isolation", "shared"]);
    loopx.ok(&["goal", "done", "g2"]);
    refused(
        &loopx,
        &["--from", "g2"],
        "`--from g2`: goal g2's agents worked in the project's own tree",
    );

    let started = loopx.ok(&["goal", "start", "Add stdev()", "--from", "g1"]);
    assert!(
        started.stdout.contains(&format!(
            "It starts from g1's branch: {} is the tip of loopx/g1.",
            &landed[..12]
        )),
        "{}",
        started.stdout
    );
    assert!(!started.stdout.contains("warning"), "{}", started.stdout);
    let goal = loopx.ok(&["goal", "show", "g3", "--json"]).json();
    assert_eq!(
        goal["goal"]["isolation"]["worktree"]["base"],
        landed.as_str()
    );
    assert_eq!(rev(&loopx, "loopx/g3"), landed);
    assert_eq!(show(&loopx, "loopx/g3:src/a.txt"), "fixed\n");
    // The person's branch is as it was.
    assert_eq!(show(&loopx, "main:src/a.txt"), "a\n");
}

/// g1 done: t1 landed, t2 worked on but never landed, a planning slice's worktree left; g2
/// active, its t3 worked on. `clean` takes g1's leftovers step by step and never g2's.
#[test]
fn clean_removes_a_finished_goal_s_leftovers_and_keeps_unmerged_work_until_told() {
    let loopx = project(
        "t1) echo fixed > src/a.txt; done_ ;;\n\
         t2) echo tried > src/b.txt ;;\n\
         t3) echo g2 > src/b.txt ;;",
    );
    let root = loopx.path().to_path_buf();
    loopx.ok(&["goal", "start", "Fix a and b"]);
    // No todo yet: a planning slice, in the goal's planning worktree.
    loopx.ok(&["run", "--max-slices", "1"]);
    assert!(worktree(&loopx, "g1", "plan").is_dir());
    loopx.ok(&["todo", "add", "Fix a"]);
    loopx.ok(&["todo", "add", "Try b"]);
    loopx.ok(&["run", "--max-slices", "2"]);
    assert_eq!(crate::support::todo_state(&loopx, "t1"), "done");
    assert!(worktree(&loopx, "g1", "t2").is_dir());
    loopx.ok(&["goal", "done", "g1"]);
    loopx.ok(&["goal", "start", "Then c"]);
    loopx.ok(&["todo", "add", "Write c"]);
    loopx.ok(&["run", "--max-slices", "1"]);
    let g2 = ["loopx/g2", "loopx/g2-t3"].map(|b| (b, rev(&loopx, b)));
    let g2_tree = worktree(&loopx, "g2", "t3");
    assert!(g2_tree.is_dir());
    let g2_untouched = |loopx: &Loopx| {
        for (branch, head) in &g2 {
            assert_eq!(&rev(loopx, branch), head, "{branch} moved");
        }
        assert!(g2_tree.is_dir() && registered(&root, &g2_tree));
    };
    let all_before = branches(&loopx);

    // A dry run lists, and removes nothing.
    let dry = loopx.ok(&["clean", "--dry-run"]).stdout;
    let plan_line = format!(
        "would remove planning worktree {}",
        worktree(&loopx, "g1", "plan").display()
    );
    let t2_line = format!(
        "would remove worktree {}",
        worktree(&loopx, "g1", "t2").display()
    );
    for line in [
        plan_line.as_str(),
        t2_line.as_str(),
        "would remove branch loopx/g1-t1 (was ",
        "kept branch loopx/g1-t2: 1 commit that never landed on loopx/g1",
        "kept branch loopx/g1: 2 commits not merged into your branch: `git merge loopx/g1` brings them in",
    ] {
        assert!(dry.contains(line), "{line:?} in:\n{dry}");
    }
    // g2's names, not a bare "g2": the temporary directory's random name may hold one.
    for g2_name in ["loopx/g2", "worktrees/g2"] {
        assert!(!dry.contains(g2_name), "{g2_name} in:\n{dry}");
    }
    assert_eq!(branches(&loopx), all_before);
    assert!(worktree(&loopx, "g1", "plan").is_dir() && worktree(&loopx, "g1", "t2").is_dir());

    // `clean`: the worktrees and the landed todo's branch go; unmerged work stays.
    let json = loopx.ok(&["clean", "--json"]).json();
    let removed = json["clean"]["removed"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(removed.len(), 3, "{json}");
    assert!(
        removed
            .iter()
            .any(|r| r["kind"] == "branch" && r["name"] == "loopx/g1-t1"),
        "{json}"
    );
    for seat in ["plan", "t2"] {
        let dir = worktree(&loopx, "g1", seat);
        assert!(!dir.exists(), "{seat}");
        assert!(!registered(&root, &dir), "{seat} still registered with git");
    }
    assert!(!has_branch(&loopx, "loopx/g1-t1"));
    assert!(has_branch(&loopx, "loopx/g1") && has_branch(&loopx, "loopx/g1-t2"));
    g2_untouched(&loopx);
    let again = loopx.ok(&["clean"]).stdout;
    assert!(!again.contains("removed"), "{again}");

    // `--all` removes the unmerged branches too; g2's stay.
    let all = loopx.ok(&["clean", "--all"]).stdout;
    assert!(all.contains("removed branch loopx/g1 (was "), "{all}");
    assert!(all.contains("removed branch loopx/g1-t2 (was "), "{all}");
    assert_eq!(branches(&loopx), ["loopx/g2", "loopx/g2-t3"]);
    assert!(!loopx.path().join(".loopx/worktrees/g1").exists());
    g2_untouched(&loopx);

    // A goal whose branch is gone cannot be started from.
    loopx.ok(&["goal", "pause", "g2"]);
    refused(
        &loopx,
        &["--from", "g1"],
        "`--from g1`: the branch loopx/g1 does not exist",
    );
}

/// A `loopx run` at work may still use what a finished goal left: `clean` waits for it to stop
/// (a dry run does not).
#[test]
fn clean_is_refused_while_loopx_run_works_on_the_project() {
    let loopx = project("t1) sleep 60 ;;");
    loopx.ok(&["goal", "start", "Nothing yet"]);
    loopx.ok(&["goal", "done", "g1"]);
    loopx.ok(&["goal", "start", "Wait"]);
    loopx.ok(&["todo", "add", "Sleep"]);
    let mut run = Background::start(&loopx, &[]);
    run.wait_for("the slice", |e| e["event"] == "slice_started");
    let refused = loopx.run(&["clean"]);
    assert_eq!(refused.code, 5, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("a `loopx run` works on this project (pid "),
        "{}",
        refused.stderr
    );
    assert!(has_branch(&loopx, "loopx/g1"));
    let dry = loopx.ok(&["clean", "--dry-run"]).stdout;
    assert!(dry.contains("would remove branch loopx/g1 (was "), "{dry}");
    run.signal(nix::sys::signal::Signal::SIGINT);
    run.finish();
    let cleaned = loopx.ok(&["clean"]).stdout;
    assert!(
        cleaned.contains("removed branch loopx/g1 (was "),
        "{cleaned}"
    );
}

#[test]
fn clean_is_a_person_s_command_refused_inside_a_slice() {
    let loopx = project(FIX_A);
    loopx.ok(&["goal", "start", "Nothing yet"]);
    loopx.ok(&["goal", "done", "g1"]);
    let refused = loopx.run_env(
        &["clean"],
        &[("LOOPX_SLICE", "s9"), ("LOOPX_AGENT", "exec")],
    );
    assert_eq!(refused.code, 6, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("`loopx clean` is a person's command, and this process runs inside slice s9"),
        "{}",
        refused.stderr
    );
    assert!(has_branch(&loopx, "loopx/g1"), "nothing was removed");
}
