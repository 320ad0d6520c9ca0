//! What follows each outcome, through the real binary: shell-script agents (on the `generic`
//! adapter, or standing in for a CLI on its real adapter) that report nothing, are not logged
//! in, talk about limits, finish by exiting 0, or hang after the vendor refused them.

use std::time::Duration;

use serde_json::Value;

use crate::support::{Loopx, cli_stand_in, event, script_agent, todo_state};

/// The JSON lines of a `loopx run --json`.
fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[test]
fn an_agent_that_never_reports_runs_a_few_slices_then_waits() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    script_agent(
        &loopx,
        "mute",
        "cat >/dev/null; echo 'looked around, changed nothing'",
        "max_time = \"20s\"",
    );
    loopx.ok(&["todo", "add", "Tidy the README"]);
    loopx.ok(&["todo", "add", "Tidy the changelog"]);
    let run = loopx.run(&["run", "--json", "--for", "10s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = events(&run.stdout);
    let started = event(&events, "slice_started").len();
    // Before: 220 slices in 9.6 s. Now each todo is tried once, then rests a minute.
    assert!(
        (1..=3).contains(&started),
        "{started} slices in 10 s: {events:#?}"
    );
    for ended in event(&events, "slice_ended") {
        assert_eq!(ended["outcome"], "completed", "{ended:#}");
        assert_eq!(ended["todo_state"], "released", "{ended:#}");
    }
    let paused = event(&events, "paused");
    let reason = paused
        .last()
        .and_then(|p| p["reason"].as_str())
        .unwrap_or_else(|| panic!("no pause: {events:#?}"));
    assert!(reason.contains("without progress"), "{reason}");
}

#[test]
fn an_agent_that_is_not_logged_in_halts_on_a_gate_that_names_the_fix() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Add retries"]);
    // What Claude Code prints without credentials, and its exit code.
    cli_stand_in(
        &loopx,
        "claude",
        "claude-code",
        r#"echo '{"type":"system","subtype":"init","session_id":"3f1e","model":"claude-sonnet-4-5","tools":[],"apiKeySource":"none"}'
echo '{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"3f1e"}'
exit 1"#,
        "",
    );
    loopx.ok(&["todo", "add", "Add retry to the HTTP client"]);
    let run = loopx.run(&["run", "--json", "--on-gate", "exit", "--for", "60s"]);
    assert_eq!(run.code, 7, "halted on a gate: {}", run.stderr);
    let events = events(&run.stdout);
    let ended = event(&events, "slice_ended");
    // Before: 138 slices in 5 s.
    assert!(ended.len() <= 3, "{ended:#?}");
    assert_eq!(ended[0]["outcome"], "auth_failed", "{:#}", ended[0]);
    let questions = event(&events, "question");
    let question = questions[0]["question"].as_str().expect("a question");
    assert!(
        question.contains("not logged in")
            && question.contains("/login")
            && question.contains("then answer `retry`"),
        "{question}"
    );
    let status = loopx.ok(&["quota", "status", "--json"]).json();
    let holds = status["holds"].as_array().expect("holds");
    assert_eq!(holds.len(), 1, "{status:#}");
    assert_eq!(holds[0]["key"], "claude-code");
    assert_eq!(
        holds[0]["until"],
        Value::Null,
        "held until a person answers"
    );
    // A person logs in and answers: the account runs again.
    let gate = questions[0]["gate"].as_str().expect("a gate id");
    loopx.ok(&["gate", "answer", gate, "retry"]);
    let status = loopx.ok(&["quota", "status", "--json"]).json();
    assert_eq!(status["holds"], serde_json::json!([]), "{status:#}");
}

#[test]
fn todos_about_limits_401s_and_questions_are_not_misread() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Harden the client"]);
    // The agent repeats its task (the line after "Your task:") and says what it did.
    script_agent(
        &loopx,
        "chatty",
        "task=$(sed -n '/^Your task:/{n;p;q}')\necho \"Working on: $task\"\necho \"$task\"\necho 'Rate limit exceeded errors are now logged as warnings.'\necho 'All 401 tests passed.'\necho 'Do you want to proceed?'",
        "max_time = \"20s\"",
    );
    for title in [
        "Log a warning when the API rate limit is exceeded",
        "Fix issue #401 in login",
        "Do you want to proceed?",
    ] {
        loopx.ok(&["todo", "add", title]);
    }
    let run = loopx.run(&["run", "--json", "--max-slices", "3"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = events(&run.stdout);
    let ended = event(&events, "slice_ended");
    assert_eq!(ended.len(), 3, "{events:#?}");
    let mut todos: Vec<&str> = ended
        .iter()
        .map(|e| e["todo"].as_str().expect("a todo"))
        .collect();
    todos.sort_unstable();
    assert_eq!(todos, ["t1", "t2", "t3"], "each todo got its slice");
    for e in &ended {
        assert_eq!(e["outcome"], "completed", "{e:#}");
        assert_eq!(e["hold_until"], Value::Null, "{e:#}");
        assert_eq!(e["gate"], Value::Null, "{e:#}");
    }
    let status = loopx.ok(&["quota", "status", "--json"]).json();
    assert_eq!(status["holds"], serde_json::json!([]), "{status:#}");
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    assert_eq!(gates["gates"], serde_json::json!([]), "{gates:#}");
}

#[test]
fn done_when_exit_0_finishes_the_todos_and_the_goal() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Format the sources"]);
    loopx.agents_close_goals();
    script_agent(
        &loopx,
        "formatter",
        "cat >/dev/null; echo formatted",
        "max_time = \"20s\"",
    );
    let profile = loopx.path().join(".loopx/profiles/formatter.toml");
    let text = std::fs::read_to_string(&profile).expect("profile");
    std::fs::write(&profile, format!("done_when = \"exit-0\"\n{text}")).expect("profile");
    loopx.ok(&["todo", "add", "Format src/"]);
    loopx.ok(&["todo", "add", "Format tests/"]);
    let run = loopx.run(&["run", "--json", "--for", "60s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t1"), "done");
    assert_eq!(todo_state(&loopx, "t2"), "done");
    let events = events(&run.stdout);
    let finished = event(&events, "finished");
    assert_eq!(finished[0]["reason"], "goal", "{events:#?}");
    let goals = loopx.ok(&["goal", "list", "--json"]).json();
    assert_eq!(goals["goals"][0]["status"], "done", "{goals}");
}

#[test]
fn a_rejected_limit_followed_by_a_hang_ends_the_slice_at_once() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Add retries"]);
    cli_stand_in(
        &loopx,
        "claude",
        "claude-code",
        r#"reset=$(( $(date +%s) + 3600 ))
echo '{"type":"system","subtype":"init","session_id":"9a2b","model":"claude-sonnet-4-5","tools":[],"apiKeySource":"none"}'
echo '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":'$reset',"rateLimitType":"five_hour","utilization":0.9},"session_id":"9a2b"}'
echo '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":'$reset',"rateLimitType":"five_hour"},"session_id":"9a2b"}'
exec sleep 60"#,
        "[limits]\nmax_time = \"2m\"\n",
    );
    loopx.ok(&["todo", "add", "Add retry to the HTTP client"]);
    let before = jiff::Timestamp::now();
    let run = loopx.run(&["run", "--json", "--once"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let once = run.json();
    let slice = &once["slice"];
    assert_eq!(slice["outcome"], "usage_limited", "{slice:#}");
    let took = Duration::from_millis(slice["duration_ms"].as_u64().expect("a duration"));
    assert!(took < Duration::from_secs(1), "the slice took {took:?}");
    // The account is held until the vendor's reset, an hour away.
    let until: jiff::Timestamp = slice["hold_until"]
        .as_str()
        .expect("a hold")
        .parse()
        .expect("a time");
    let ahead = until.as_second() - before.as_second();
    assert!((3590..=3610).contains(&ahead), "held {ahead} s");
}

#[test]
fn a_goal_past_its_budget_asks_with_the_figures_instead_of_burning() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    loopx.write_config("[budget]\nslices = 2\n");
    script_agent(
        &loopx,
        "mute",
        "cat >/dev/null; echo 'looked around'",
        "max_time = \"20s\"",
    );
    for title in ["Tidy the README", "Tidy the changelog", "Tidy the FAQ"] {
        loopx.ok(&["todo", "add", title]);
    }
    let run = loopx.run(&["run", "--json", "--on-gate", "exit", "--for", "60s"]);
    assert_eq!(run.code, 7, "halted on the budget gate: {}", run.stderr);
    let events = events(&run.stdout);
    assert_eq!(event(&events, "slice_ended").len(), 2, "{events:#?}");
    let question = event(&events, "question")[0];
    assert_eq!(
        question["question"],
        "goal g1 spent 2 slices (budget 2) without a todo done; continue?"
    );
    assert_eq!(
        question["options"],
        serde_json::json!(["continue", "pause"])
    );
    // `pause` pauses the goal; the loop then has nothing to run.
    let gate = question["gate"].as_str().expect("a gate id");
    loopx.ok(&["gate", "answer", gate, "pause"]);
    let goals = loopx.ok(&["goal", "list", "--json"]).json();
    assert_eq!(goals["goals"][0]["status"], "paused", "{goals}");
}

#[test]
fn the_output_cap_bounds_the_log_not_the_agent_unless_the_profile_says_so() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Chat"]);
    let chatter = "cat >/dev/null; stty -opost; yes 'a line of chatter' | head -c 3000000; echo; echo 'all said'";
    script_agent(&loopx, "chatty", chatter, "max_output = \"1MiB\"");
    loopx.ok(&["todo", "add", "Say a lot"]);
    let run = loopx.run(&["run", "--json", "--once", "--agent", "chatty"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "completed", "{slice:#}");
    let bytes = slice["output_bytes"].as_u64().expect("a count");
    assert!(bytes >= 3_000_000, "every byte counted: {bytes}");
    let log =
        std::fs::read(loopx.path().join(slice["log"].as_str().expect("a log"))).expect("the log");
    assert!(
        log.len() <= (1 << 20) + 200,
        "the log is bounded: {}",
        log.len()
    );
    let log = String::from_utf8_lossy(&log);
    assert!(
        log.contains("bytes dropped here"),
        "a marker says what is missing"
    );
    assert!(log.trim_end().ends_with("all said"), "the tail is kept");

    script_agent(
        &loopx,
        "capped",
        chatter,
        "max_output = \"1MiB\"\nkill_on_output = true",
    );
    // t1 rests after a slice that left it open: the second agent takes the next todo.
    loopx.ok(&["todo", "add", "Say more"]);
    let run = loopx.run(&["run", "--json", "--once", "--agent", "capped"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "failed", "{slice:#}");
    let reason = slice["reason"].as_str().expect("a reason");
    assert!(reason.contains("kill_on_output"), "{reason}");
}

/// Issue 31: a shell agent whose every write the sandbox refused reported `progress` each
/// time: 1,341 slices in two minutes, and no question. A `progress` report that moved nothing
/// a person could see is `unchanged`: the todo rests, and the stall guard counts it.
#[test]
fn an_agent_that_always_reports_progress_without_a_change_is_stopped_by_the_stall_guard() {
    let loopx = Loopx::new();
    crate::support::committed_repo(loopx.path(), &[("app.py", "print('hi')\n")]);
    // Its write goes where the sandbox refuses it; it says `progress` all the same.
    let ended =
        progress_without_a_change_rests(&loopx, "echo hello > /etc/loopx-greeting 2>/dev/null");
    assert!(
        ended["reason"]
            .as_str()
            .is_some_and(|r| r.contains("nothing a person could see moved")),
        "{ended:#}"
    );
    // Later (its rests over: this process's clock runs ahead), two more such slices, and the
    // next decision asks a person instead of running a fourth.
    for skew in ["600000", "1800000"] {
        let once = loopx.run_env(
            &["run", "--once", "--json"],
            &[("LOOPX_CLOCK_SKEW_MS", skew)],
        );
        assert_eq!(once.code, 0, "{}{}", once.stdout, once.stderr);
        assert_eq!(
            once.json()["slice"]["outcome"],
            "unchanged",
            "{}",
            once.stdout
        );
    }
    let asked = loopx.run_env(
        &["run", "--once", "--json"],
        &[("LOOPX_CLOCK_SKEW_MS", "7200000")],
    );
    let asked = asked.json();
    assert_eq!(asked["decision"], "ask", "{asked:#}");
    assert_eq!(asked["slice"], Value::Null, "{asked:#}");
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    assert_eq!(
        gates["gates"][0]["kind"]["stall"]["todo"], "t1",
        "the stall guard asks about t1: {gates:#}"
    );
}

/// Agent `eager` runs `write` and reports `progress` on the goal's one todo, for 8 s: one slice,
/// `unchanged`, and the todo rests. The slice's end, as `run --json` printed it.
fn progress_without_a_change_rests(loopx: &Loopx, write: &str) -> Value {
    loopx.ok(&["goal", "start", "Add a greeting"]);
    script_agent(
        loopx,
        "eager",
        &format!(
            "cat >/dev/null\n{write}\nprintf '%s\\n' '```loopx-report' '{{\"status\":\"progress\",\"summary\":\"working on the greeting\"}}' '```'"
        ),
        "max_time = \"20s\"",
    );
    loopx.ok(&["todo", "add", "Add a greeting to app.py"]);
    let run = loopx.run(&["run", "--json", "--for", "8s"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let events = events(&run.stdout);
    let ended = event(&events, "slice_ended");
    assert_eq!(
        ended.len(),
        1,
        "one slice, then the todo rests: {events:#?}"
    );
    assert_eq!(ended[0]["outcome"], "unchanged", "{:#}", ended[0]);
    ended[0].clone()
}

/// A new project bounds what a goal spends without a todo done, whatever its agents report:
/// its `loopx.toml` sets the budget whose gate `a_goal_past_its_budget_asks_…` exercises.
#[test]
fn a_new_project_s_config_bounds_a_goal_at_thirty_slices_without_a_todo_done() {
    let loopx = Loopx::new();
    let config = std::fs::read_to_string(loopx.path().join(".loopx/loopx.toml")).expect("read");
    assert!(config.contains("[budget]\nslices = 30\n"), "{config}");
    // The file loads (a bad one is an error that names it).
    let status = loopx.ok(&["quota", "status", "--json"]).json();
    assert_eq!(status["problems"], serde_json::json!([]), "{status:#}");
}

/// Issue 31: a profile whose CLI is not installed was accepted by `agent add`; `loopx run` then
/// showed `spawn_failed` and "paced at 6 slices an hour", and no question named the fix.
#[test]
fn an_agent_whose_cli_is_not_installed_is_named_by_agent_add_doctor_and_one_question() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Add retries"]);
    loopx.ok(&["todo", "add", "Retry idempotent requests"]);
    // A Codex profile, on a PATH without `codex`.
    std::fs::write(
        loopx.path().join(".loopx/profiles/cx.toml"),
        "adapter = \"codex\"\npermission = \"workspace-write\"\n",
    )
    .expect("profile");
    let path = [("PATH", "/usr/bin:/bin")];
    let added = loopx.run_env(&["agent", "add", "rev", "--profile", "cx"], &path);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(
        added
            .stdout
            .contains("warning: rev cannot run yet: `codex` is not on PATH")
            && added.stdout.contains("npm install -g @openai/codex"),
        "{}",
        added.stdout
    );
    let doctor = loopx.run_env(&["doctor"], &path);
    assert!(
        doctor.stdout.contains("agents") && doctor.stdout.contains("npm install -g @openai/codex"),
        "{}",
        doctor.stdout
    );
    let run = loopx.run_env(
        &["run", "--json", "--on-gate", "exit", "--for", "30s"],
        &path,
    );
    let events = events(&run.stdout);
    let ended = event(&events, "slice_ended");
    assert_eq!(ended.len(), 1, "one try, then a question: {events:#?}");
    assert_eq!(ended[0]["outcome"], "spawn_failed", "{:#}", ended[0]);
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    let gate = &gates["gates"][0];
    assert_eq!(gate["kind"]["spawn"]["agent"], "rev", "{gates:#}");
    assert_eq!(gate["asked_by"], "loopx", "{gates:#}");
    let question = gate["question"].as_str().unwrap_or_default();
    assert!(
        question.contains("`rev` could not be started")
            && question.contains("npm install -g @openai/codex"),
        "{question}"
    );
}

/// Issue 47, item 15: outside git an agent that reported `progress` and changed nothing kept its
/// word (30 slices in 12 s before the budget asked). loopx walks the goal's scope before and
/// after the slice: nothing changed there is `unchanged`, and its todo rests as in git.
#[test]
fn outside_git_an_agent_that_reports_progress_and_changes_nothing_rests_after_one_slice() {
    let loopx = Loopx::new();
    std::fs::write(loopx.path().join("app.py"), "print('hi')\n").expect("write");
    // It rewrites app.py as it was (a new time, the same bytes), and says `progress`.
    progress_without_a_change_rests(&loopx, "echo \"print('hi')\" > app.py");
    // A slice that does change a file of the scope is progress.
    script_agent(
        &loopx,
        "editor",
        "cat >/dev/null\necho \"print('hello')\" > app.py\nprintf '%s\\n' '```loopx-report' '{\"status\":\"progress\",\"summary\":\"greeting changed\"}' '```'",
        "max_time = \"20s\"",
    );
    loopx.ok(&["agent", "remove", "eager"]);
    let once = loopx.run_env(
        &["run", "--once", "--json"],
        &[("LOOPX_CLOCK_SKEW_MS", "600000")],
    );
    assert_eq!(
        once.json()["slice"]["outcome"],
        "progress",
        "{}",
        once.stdout
    );
}
