//! Permissions through the real binary: `full` runs only after a person approved the profile's
//! exact content, and a slice that changes files outside the goal's scope, or in `.loopx/`, is
//! recorded as a violation with a gate.

use std::path::Path;

use serde_json::Value;

use crate::support::{Loopx, git, todo_state};

/// The demo adapter with `full` mapped (the built-in one deliberately cannot express it).
fn full_adapter() -> String {
    let demo = include_str!("../../adapters/demo.toml");
    let mapped = "workspace-write = [\"--workspace-write\"]";
    assert!(
        demo.contains(mapped),
        "the demo adapter maps workspace-write"
    );
    demo.replace(mapped, &format!("{mapped}\nfull = [\"--workspace-write\"]"))
}

/// The demo profile on that adapter, at `full`.
fn full_profile() -> String {
    let demo = include_str!("../../profiles/demo.toml");
    demo.replace("adapter = \"demo\"", "adapter = \"demo-full\"")
        .replace("permission = \"workspace-write\"", "permission = \"full\"")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A project whose goal allows `full`, with agent `exec` on the `danger` profile and a todo.
pub(crate) fn danger_project() -> Loopx {
    let loopx = Loopx::new();
    let state = loopx.path().join(".loopx");
    write(&state.join("adapters/demo-full.toml"), &full_adapter());
    write(&state.join("profiles/danger.toml"), &full_profile());
    loopx.ok(&[
        "goal",
        "start",
        "Write the demo notes",
        "--permission",
        "full",
    ]);
    loopx.ok(&["agent", "add", "exec", "--profile", "danger"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    loopx
}

/// `loopx run --once --json`: its object and its stderr.
pub(crate) fn run_once(loopx: &Loopx) -> (Value, String) {
    let run = loopx.run_once(&[]);
    (run.json(), run.stderr)
}

fn gates(loopx: &Loopx) -> Vec<Value> {
    let gates = loopx.ok(&["gate", "list", "--all", "--json"]).json();
    gates["gates"].as_array().expect("gates").clone()
}

fn slices_started(loopx: &Loopx) -> usize {
    loopx
        .ok(&["log", "--json"])
        .stdout
        .lines()
        .filter(|l| l.contains("\"slice_started\""))
        .count()
}

/// Asserts the run asked for approval in `gate` and ran nothing.
fn assert_asks(loopx: &Loopx, out: &Value, stderr: &str, gate: &str) {
    assert_eq!(out["decision"], "ask", "{out}\n{stderr}");
    assert_eq!(out["gate"]["id"], gate, "{out}");
    assert_eq!(out["slice"], Value::Null, "nothing ran: {out}");
    let answer = format!("answer with: loopx gate answer {gate} 1 (approve) | 2 (deny)");
    assert!(stderr.contains(&answer), "{stderr}");
    assert!(stderr.contains("with full permission"), "{stderr}");
    assert!(!stderr.contains("claimed"), "{stderr}");
    assert_eq!(todo_state(loopx, "t1"), "open", "the todo is not claimed");
}

#[test]
fn full_permission_runs_only_after_an_approval_of_the_profiles_exact_content() {
    let loopx = danger_project();
    let (out, stderr) = run_once(&loopx);
    assert_asks(&loopx, &out, &stderr, "q1");
    assert_eq!(slices_started(&loopx), 0, "no slice is recorded");
    let gate = &gates(&loopx)[0];
    let question = gate["question"].as_str().expect("question");
    assert!(
        question.starts_with("Allow agent `exec` to run profile `danger` (sha256 "),
        "{question}"
    );
    assert_eq!(gate["options"], serde_json::json!(["approve", "deny"]));
    assert_eq!(gate["blocks"]["agent"], "exec", "{gate}");
    let hash = loopx.ok(&["profile", "show", "danger", "--json"]).json();
    let hash = hash.to_string();
    let context = gate["context"].as_str().expect("context");
    let line = context.lines().next().expect("a first line");
    let sha = line
        .strip_prefix("approval: agent=exec profile=danger sha256=")
        .unwrap_or_else(|| panic!("the binding line: {context}"));
    assert_eq!(sha.len(), 64, "{line}");
    assert!(hash.contains(sha), "the profile's content hash: {hash}");

    // Asked again before an answer: the same gate, still nothing runs.
    let (out, stderr) = run_once(&loopx);
    assert_asks(&loopx, &out, &stderr, "q1");
    assert_eq!(gates(&loopx).len(), 1, "no second gate");

    // Approved: the slice runs.
    loopx.ok(&["gate", "answer", "q1", "approve"]);
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["slice"]["outcome"], "completed", "{out}\n{stderr}");
    assert_eq!(out["outcome"], "ran", "{out}");
    assert_eq!(todo_state(&loopx, "t1"), "done");

    // Any edit of the profile asks again, with a new gate.
    loopx.ok(&["todo", "add", "Write more notes"]);
    let profile = loopx.path().join(".loopx/profiles/danger.toml");
    let edited = format!("{}\n# edited\n", full_profile());
    write(&profile, &edited);
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["decision"], "ask", "{out}\n{stderr}");
    assert_eq!(out["outcome"], "decided", "{out}");
    assert_eq!(out["gate"]["id"], "q2", "{out}");
    assert_eq!(out["slice"], Value::Null);
    assert_eq!(todo_state(&loopx, "t2"), "open");

    // Denied: the agent stops, and the reason says how to ask again.
    loopx.ok(&["gate", "answer", "q2", "--option", "2"]);
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["decision"], "stop", "{out}\n{stderr}");
    let reason = out["reason"].as_str().expect("a reason");
    assert!(reason.contains("denied in gate q2"), "{reason}");
    assert!(reason.contains("edit the profile"), "{reason}");
    assert_eq!(out["slice"], Value::Null);
    assert_eq!(slices_started(&loopx), 1, "only the approved slice ran");
}

/// Below `full` (the goal caps the level), the `full` approval is not asked: only the one the
/// project's own adapter needs.
#[test]
fn a_goal_below_full_needs_no_full_approval() {
    let loopx = danger_project();
    loopx.ok(&["goal", "done"]);
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["decision"], "ask", "{out}\n{stderr}");
    let question = out["gate"]["question"].as_str().expect("a question");
    assert!(
        question.contains("with the project's own adapter")
            && !question.contains("full permission"),
        "{question}"
    );
    loopx.ok(&["gate", "answer", "q1", "approve"]);
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["slice"]["outcome"], "completed", "{out}\n{stderr}");
    assert_eq!(gates(&loopx).len(), 1, "nothing more was asked");
}

/// Asserts there is evidence of `kind` whose summary starts with `summary` and whose detail
/// contains `detail`.
fn evidence_with(loopx: &Loopx, kind: &str, summary: &str, detail: &str) {
    let evidence = loopx.ok(&["evidence", "list", "--json"]).json();
    let evidence = evidence["evidence"].as_array().expect("a list").clone();
    let found = evidence.iter().any(|e| {
        e["kind"] == kind
            && e["summary"]
                .as_str()
                .is_some_and(|s| s.starts_with(summary))
            && e["detail"].as_str().is_some_and(|d| d.contains(detail))
    });
    assert!(
        found,
        "no {kind} evidence `{summary}…` with `{detail}`: {evidence:?}"
    );
}

/// The goal these scope-check tests share: its agents work in the project's own tree (the
/// shared tree's check; worktree goals are `worktrees.rs`).
fn shared_docs_goal(loopx: &Loopx) {
    loopx.ok(&[
        "goal",
        "start",
        "Write the docs",
        "--scope",
        "docs/",
        "--isolation",
        "shared",
    ]);
}

/// A git project with `docs/README.md` committed and the shared docs goal.
fn docs_repo() -> Loopx {
    let loopx = Loopx::new();
    git(loopx.path(), &["init", "-q"]);
    write(&loopx.path().join("docs/README.md"), "docs\n");
    git(loopx.path(), &["add", "docs"]);
    git(loopx.path(), &["commit", "-q", "-m", "docs"]);
    shared_docs_goal(&loopx);
    loopx
}

#[test]
fn a_slice_writing_outside_the_scope_is_a_violation_with_a_gate() {
    let loopx = docs_repo();
    loopx.ok(&["agent", "add", "exec", "--profile", "demo"]);
    loopx.ok(&["todo", "add", "Write the notes [demo:file=src/x.md]"]);
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(slice["changed_files"], serde_json::json!(["src/x.md"]));
    assert_eq!(slice["violations"], serde_json::json!(["src/x.md"]));
    assert_eq!(slice["violation_gate"], "q1");
    assert_eq!(slice["gate"], Value::Null, "the agent asked nothing");
    assert_eq!(slice["todo_state"], "released", "a person may roll it back");
    assert!(
        run.stderr
            .contains("changed files it may not change (src/x.md): gate q1 asks a person"),
        "{}",
        run.stderr
    );

    evidence_with(&loopx, "violation", "slice s1 of agent `exec`", "src/x.md");
    evidence_with(
        &loopx,
        "diff",
        "slice s1 changed",
        "src/x.md (new, untracked)",
    );

    let gate = &gates(&loopx)[0];
    assert_eq!(
        gate["question"],
        "Slice s1 of agent `exec` changed 1 file outside the goal's scope (src/x.md): keep the changes or roll them back?"
    );
    assert_eq!(gate["options"], serde_json::json!(["keep", "rollback"]));
    assert_eq!(gate["blocks"]["todos"], serde_json::json!(["t1"]));
    // The gate holds the todo back until a person answers.
    let (out, _) = run_once(&loopx);
    assert_ne!(out["decision"], "deliver", "{out}");
    assert_eq!(todo_state(&loopx, "t1"), "open");
}

/// Issue 33, gaps 1 and 9: an agent that wrote outside the scope of a shared goal and said
/// `loopx report done` during its slice left its todo done, so work after it went ahead; and
/// the violation gate read `asked by agent:exec`. Now the todo waits for a person: `keep`
/// finishes it as reported, `rollback` leaves it open; the gate is loopx's.
#[test]
fn a_scope_violation_holds_a_todo_reported_done_until_a_person_answers() {
    for (answer, after) in [("1", "done"), ("rollback", "open")] {
        let loopx = docs_repo();
        crate::support::script_agent(
            &loopx,
            "exec",
            &format!(
                "cat > /dev/null\necho stolen > secrets.txt\n'{}' report done > docs/done.out 2>&1\n",
                crate::support::LOOPX
            ),
            "max_time = \"1m\"",
        );
        loopx.ok(&["todo", "add", "Write the notes"]);
        loopx.ok(&["todo", "add", "Publish the notes", "--after", "t1"]);
        let (out, stderr) = run_once(&loopx);
        let slice = &out["slice"];
        assert_eq!(slice["report"], "none", "{out}\n{stderr}");
        assert_eq!(
            slice["violations"],
            serde_json::json!(["secrets.txt"]),
            "{out}"
        );
        assert_eq!(slice["todo_state"], "released", "{out}");
        assert_eq!(todo_state(&loopx, "t1"), "open");
        let note = std::fs::read_to_string(loopx.path().join("docs/done.out")).expect("done.out");
        assert!(note.contains("t1"), "{note}");
        // Nothing after t1 may start: t1 is held by the question, t2 waits for t1.
        let (next, _) = run_once(&loopx);
        assert_ne!(next["decision"], "deliver", "{next}");
        let listed = loopx.ok(&["gate", "list"]).stdout;
        assert!(listed.contains("opened by loopx"), "{listed}");
        assert!(!listed.contains("asked by agent"), "{listed}");
        let gate = &gates(&loopx)[0];
        assert_eq!(gate["asked_by"], "loopx", "{gate}");
        loopx.ok(&["gate", "answer", "q1", answer]);
        assert_eq!(todo_state(&loopx, "t1"), after, "after `{answer}`");
    }
}

#[test]
fn a_slice_in_scope_is_no_violation() {
    let loopx = Loopx::new();
    git(loopx.path(), &["init", "-q"]);
    shared_docs_goal(&loopx);
    loopx.ok(&["agent", "add", "exec", "--profile", "demo"]);
    loopx.ok(&["todo", "add", "Write the notes [demo:file=docs/x.md]"]);
    let (out, stderr) = run_once(&loopx);
    let slice = &out["slice"];
    assert_eq!(
        slice["changed_files"],
        serde_json::json!(["docs/x.md"]),
        "{stderr}"
    );
    assert_eq!(slice["violations"], serde_json::json!([]));
    assert_eq!(slice["todo_state"], "done");
    assert!(gates(&loopx).is_empty());
}

/// Without a sandbox (`mode = "off"`) the agent can reach `.loopx/`, and the check after the
/// slice is what finds it.
#[test]
fn an_unsandboxed_agent_writing_in_the_state_directory_is_a_violation_even_without_git() {
    let loopx = Loopx::new();
    write(
        &loopx.path().join(".loopx/profiles/sneaky.toml"),
        r#"adapter = "generic"
program = "/bin/sh"
extra_args = ["-c", "echo 'permission = \"full\"' > .loopx/profiles/evil.toml; echo wrote it"]
permission = "workspace-write"
capabilities = ["demo"]

[limits]
max_time = "1m"
idle_timeout = "30s"

[quota]
account = "sneaky"

[sandbox]
mode = "off"
"#,
    );
    loopx.ok(&["goal", "start", "Write the notes"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "sneaky"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    let (out, stderr) = run_once(&loopx);
    let slice = &out["slice"];
    assert_eq!(
        slice["changed_files"],
        Value::Null,
        "no git: not checked; {stderr}"
    );
    assert_eq!(
        slice["violations"],
        serde_json::json!([".loopx/profiles/evil.toml"]),
        "{out}\n{stderr}"
    );
    assert_eq!(slice["violation_gate"], "q1");
    evidence_with(
        &loopx,
        "slice",
        "work slice s1",
        "changes: not checked (the project is not in a git work tree)",
    );
    evidence_with(&loopx, "violation", "slice s1", ".loopx/profiles/evil.toml");
}

/// In its sandbox the agent cannot even see `.loopx/`: the write fails, nothing changes there,
/// and the store and config are out of reach.
#[test]
fn a_sandboxed_agent_cannot_reach_the_state_directory() {
    let loopx = Loopx::new();
    write(
        &loopx.path().join(".loopx/profiles/sneaky.toml"),
        r#"adapter = "generic"
program = "/bin/sh"
extra_args = ["-c", "ls -A .loopx > seen.txt; echo 'permission = \"full\"' > .loopx/profiles/evil.toml || echo refused >> seen.txt"]
permission = "workspace-write"
capabilities = ["demo"]

[limits]
max_time = "1m"
idle_timeout = "30s"

[quota]
account = "sneaky"
"#,
    );
    loopx.ok(&["goal", "start", "Write the notes"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "sneaky"]);
    loopx.ok(&["todo", "add", "Write the notes"]);
    let (out, stderr) = run_once(&loopx);
    let seen = std::fs::read_to_string(loopx.path().join("seen.txt")).expect("the agent ran");
    assert_eq!(
        seen, "refused\n",
        "an empty .loopx, and the write refused: {stderr}"
    );
    assert!(!loopx.path().join(".loopx/profiles/evil.toml").exists());
    assert_eq!(out["slice"]["violations"], serde_json::json!([]), "{out}");
}

/// A git project with a committed `docs/README.md` and `src/lib.rs`, a goal scoped to `docs/`,
/// and agent `exec` running `script`.
fn hiding_project(script: &str) -> Loopx {
    hiding_project_with(script, "")
}

/// Like [`hiding_project`], with `profile_rest` (TOML tables) added to the agent's profile.
fn hiding_project_with(script: &str, profile_rest: &str) -> Loopx {
    let loopx = Loopx::new();
    git(loopx.path(), &["init", "-q"]);
    write(&loopx.path().join("docs/README.md"), "docs\n");
    write(&loopx.path().join("src/lib.rs"), "fn main() {}\n");
    git(loopx.path(), &["add", "docs", "src"]);
    git(loopx.path(), &["commit", "-q", "-m", "start"]);
    shared_docs_goal(&loopx);
    crate::support::script_agent(
        &loopx,
        "exec",
        &format!("cat > /dev/null\n{script}"),
        &format!("max_time = \"1m\"\n{profile_rest}"),
    );
    loopx.ok(&["todo", "add", "Write the docs"]);
    loopx
}

/// `git update-index --skip-worktree` (or `--assume-unchanged`) hides a tracked file's change
/// from `git status`; the check still finds it.
#[test]
fn a_change_hidden_by_git_index_flags_is_found() {
    for flag in ["--skip-worktree", "--assume-unchanged"] {
        let loopx = hiding_project(&format!(
            "git update-index {flag} src/lib.rs\necho 'evil()' >> src/lib.rs\n"
        ));
        let (out, stderr) = run_once(&loopx);
        let slice = &out["slice"];
        assert_eq!(
            slice["violations"],
            serde_json::json!(["src/lib.rs"]),
            "{flag}: {out}\n{stderr}"
        );
    }
}

/// A new file listed in `.git/info/exclude` is invisible to `git status`. In a shared goal's
/// slice the whole `.git` is read-only, so the rule cannot be written and the file is found;
/// where the agent can write it (`mode = "off"`), changing git's ignore rules is itself a
/// violation, whatever the scope.
#[test]
fn a_file_hidden_by_info_exclude_is_a_violation() {
    let script = "echo secret.txt >> .git/info/exclude 2> /dev/null; echo $? > docs/exclude.rc\n\
                  echo x > secret.txt\n";
    let loopx = hiding_project(script);
    let (out, stderr) = run_once(&loopx);
    assert_ne!(read_file(&loopx, "docs/exclude.rc"), "0\n", "{out}");
    assert_eq!(
        out["slice"]["violations"],
        serde_json::json!(["secret.txt"]),
        "{out}\n{stderr}"
    );
    let loopx = hiding_project_with(script, "[sandbox]\nmode = \"off\"");
    let (out, stderr) = run_once(&loopx);
    let violations = out["slice"]["violations"].to_string();
    assert!(
        violations.contains("info/exclude (git's ignore rules)"),
        "{out}\n{stderr}"
    );
}

/// Issue 46, hole 1: an agent changed `src/lib.rs` (outside its `docs/` scope) and pointed
/// `refs/replace/<HEAD>` at a commit holding the change: loopx's git honoured the replace ref,
/// `git status` showed nothing, the todo was done. In a shared goal's slice `.git` is
/// read-only (the agent's own commits go to a quarantine in its room), and loopx's git ignores
/// replace refs and grafts where an agent could write them anyway (`mode = "off"`).
#[test]
fn a_change_hidden_by_a_replace_ref_is_found() {
    let script = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com \
                  GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com\n\
                  echo 'evil()' >> src/lib.rs\n\
                  git add src/lib.rs\n\
                  c=$(git commit-tree \"$(git write-tree)\" -p HEAD -m hidden)\n\
                  git replace HEAD \"$c\" 2> docs/replace.err; echo $? > docs/replace.rc\n";
    let loopx = hiding_project(script);
    let (out, stderr) = run_once(&loopx);
    assert_ne!(
        read_file(&loopx, "docs/replace.rc"),
        "0\n",
        "the replace ref was written: {out}"
    );
    assert_eq!(
        out["slice"]["violations"],
        serde_json::json!(["src/lib.rs"]),
        "{out}\n{stderr}"
    );
    // The person's index and objects are as they were: the agent staged into a copy.
    let staged = git(loopx.path(), &["diff", "--cached", "--name-only"]);
    assert_eq!(staged, "", "the agent staged into the person's index");
    // Unsandboxed the replace ref is written, and loopx's git does not follow it.
    let loopx = hiding_project_with(script, "[sandbox]\nmode = \"off\"");
    let (out, stderr) = run_once(&loopx);
    assert_eq!(read_file(&loopx, "docs/replace.rc"), "0\n", "{out}");
    let violations = out["slice"]["violations"].to_string();
    assert!(violations.contains("src/lib.rs"), "{out}\n{stderr}");
}

fn read_file(loopx: &Loopx, name: &str) -> String {
    std::fs::read_to_string(loopx.path().join(name))
        .unwrap_or_else(|e| panic!("the agent left no {name}: {e}"))
}

/// In the sandbox the repository's config is read-only: an agent cannot point
/// `core.excludesFile` (or `core.fsmonitor`, a filter, a hook) at a program or file of its own,
/// and what it tried to hide is found.
#[test]
fn the_repository_config_is_read_only_in_the_sandbox() {
    let loopx = hiding_project(
        "echo secret.txt > .myignore\n\
         git config core.excludesFile \"$PWD/.myignore\" 2> config.err; echo $? > config.rc\n\
         touch .git/hooks/pre-commit 2>/dev/null; echo $? > hook.rc\n\
         echo x > secret.txt\n",
    );
    let (out, stderr) = run_once(&loopx);
    let read = |name: &str| std::fs::read_to_string(loopx.path().join(name)).expect(name);
    assert_ne!(read("config.rc").trim(), "0", "{}", read("config.err"));
    assert_ne!(read("hook.rc").trim(), "0");
    assert!(!loopx.path().join(".git/hooks/pre-commit").exists());
    let violations = out["slice"]["violations"].to_string();
    assert!(violations.contains("secret.txt"), "{out}\n{stderr}");
}

/// The attack of a second reader: `.git/config` and `.git/hooks` were read-only, `.git` was
/// not, so an agent in a shared goal moved it aside, put a copy with a clean filter of its own
/// in its place, and loopx's `git status` after the slice ran the filter outside the sandbox
/// (it listed `.loopx/` and wrote `~/.bashrc`). `.git` itself is read-only in the slice now.
#[test]
fn an_agent_cannot_replace_the_repository_loopx_s_git_reads() {
    let loopx = hiding_project(
        "P=$PWD\n\
         { mv .git .git.orig && mkdir .git && cp -a .git.orig/. .git/; } 2> /dev/null; echo $? > docs/mv.rc\n\
         git config -f .git/config filter.pwn.clean \"touch $P/docs/PWNED; cat\" 2> /dev/null\n\
         echo '* filter=pwn' > docs/.gitattributes\n\
         echo changed >> docs/README.md\n",
    );
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["slice"]["outcome"], "completed", "{out}\n{stderr}");
    assert_ne!(read_file(&loopx, "docs/mv.rc"), "0\n", "{out}");
    assert!(loopx.path().join(".git/HEAD").is_file());
    assert!(
        !loopx.path().join("docs/PWNED").exists(),
        "loopx's git ran the agent's filter: {out}"
    );
}

/// The same where `.git` is a file naming the git directory (a linked worktree, a submodule, a
/// separate git dir): nothing of the repository was protected, and the agent pointed `.git` at
/// a copy with its filter. The file and the directories it names are read-only now.
#[test]
fn an_agent_cannot_point_a_git_file_at_a_repository_of_its_own() {
    let loopx = Loopx::new();
    let gitdir = tempfile::tempdir().expect("a place for the git directory");
    let separate = gitdir.path().join("repo.git");
    git(
        loopx.path(),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            separate.to_str().expect("a UTF-8 path"),
            ".",
        ],
    );
    assert!(loopx.path().join(".git").is_file(), "`.git` is a file");
    write(&loopx.path().join("docs/README.md"), "docs\n");
    git(loopx.path(), &["add", "docs"]);
    git(loopx.path(), &["commit", "-q", "-m", "start"]);
    shared_docs_goal(&loopx);
    crate::support::script_agent(
        &loopx,
        "exec",
        "cat > /dev/null\n\
         P=$PWD\n\
         mkdir .evilgit && cp -a \"$(git rev-parse --git-dir)/.\" .evilgit/\n\
         git config -f .evilgit/config filter.pwn.clean \"touch $P/docs/PWNED; cat\"\n\
         echo \"gitdir: $P/.evilgit\" > .git 2> /dev/null; echo $? > docs/dotgit.rc\n\
         git config -f \"$(git rev-parse --git-dir)/config\" filter.pwn.clean \"touch $P/docs/PWNED; cat\" 2> /dev/null; echo $? > docs/config.rc\n\
         echo '* filter=pwn' > docs/.gitattributes\n\
         echo changed >> docs/README.md\n",
        "max_time = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Write the docs"]);
    let (out, stderr) = run_once(&loopx);
    assert_eq!(out["slice"]["outcome"], "completed", "{out}\n{stderr}");
    assert_ne!(read_file(&loopx, "docs/dotgit.rc"), "0\n", "{out}");
    assert_ne!(read_file(&loopx, "docs/config.rc"), "0\n", "{out}");
    assert!(
        !loopx.path().join("docs/PWNED").exists(),
        "loopx's git ran the agent's filter: {out}"
    );
}
