//! Monitors (`docs/monitors.md`): todos loopx polls itself, with no agent and no quota.

use serde_json::Value;

use crate::support::{
    Background, Loopx, SOON, demo_project, event, processes_with, todo_state, wait_for,
};

/// A check that is met once `flag` exists in the project's tree.
fn flag_check(flag: &str) -> String {
    format!("if test -e {flag}; then echo finished; else echo still running; exit 1; fi")
}

/// A monitor `t1` with `check` polled `every`, and a todo `t2` after it.
fn monitor_and_follow_up(loopx: &Loopx, check: &str, every: &str) {
    loopx.ok(&["todo", "add", "Wait", "--check", check, "--every", every]);
    loopx.ok(&["todo", "add", "Then", "--after", "t1"]);
}

fn should_run(loopx: &Loopx) -> Value {
    loopx
        .ok(&["quota", "should-run", "--agent", "exec", "--json"])
        .json()
}

#[test]
fn a_monitor_met_after_polls_wakes_its_dependent_and_no_agent_runs_before() {
    let loopx = demo_project(&["exec"]);
    let check = flag_check("job-42.done");
    loopx.ok(&[
        "todo",
        "add",
        "Wait for job 42",
        "--check",
        &check,
        "--every",
        "10s",
    ]);
    loopx.ok(&["todo", "add", "Evaluate job 42", "--after", "t1"]);
    // Before any poll the agent is quiet, and says what for: not a planning slice.
    let decision = should_run(&loopx);
    assert_eq!(decision["decision"], "quiet", "{decision}");
    assert_eq!(decision["waiting_for"]["todo"], "t1", "{decision}");
    assert!(
        decision["waiting_for"]["next_poll"].is_string(),
        "{decision}"
    );
    let mut bg = Background::start(&loopx, &["--max-slices", "1"]);
    let first = bg.wait_for("the first poll", |e| e["event"] == "polled");
    assert_eq!(first["todo"], "t1", "{first}");
    assert_eq!(first["result"], "not yet", "{first}");
    assert_eq!(first["exit"], 1, "{first}");
    std::fs::write(loopx.path().join("job-42.done"), "").expect("the job ends");
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    let polls = event(&events, "polled");
    let met = polls.last().expect("a last poll");
    assert_eq!(met["result"], "met", "{events:#?}");
    assert_eq!(met["exit"], 0, "{events:#?}");
    // No slice ran before the monitor was met; the one that ran was on its dependent.
    let position = |want: &Value| events.iter().position(|e| e == want).expect("seen");
    let started = event(&events, "slice_started");
    assert_eq!(started.len(), 1, "{events:#?}");
    assert!(position(started[0]) > position(met), "{events:#?}");
    assert_eq!(started[0]["todo"], "t2", "{events:#?}");
    assert_eq!(todo_state(&loopx, "t1"), "done");
    // The dependent's slice starts from what the monitor saw.
    let prompt =
        std::fs::read_to_string(loopx.path().join(".loopx/slices/s1.prompt")).expect("prompt");
    let evidence = &prompt[prompt.find("Recent evidence:").expect("the section")..];
    assert!(evidence.contains("[monitor] t1 met after"), "{prompt}");
    assert!(evidence.contains("    finished"), "{prompt}");
    // The check's output is the monitor's evidence, and every poll is counted on the todo.
    let evidence = loopx.ok(&["evidence", "list", "--json"]).json();
    let kinds: Vec<&str> = evidence["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter(|e| e["todo"] == "t1")
        .map(|e| e["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["monitor"], "{evidence}");
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    let monitor = &shown["todo"]["monitor"];
    assert_eq!(
        monitor["polls"].as_u64(),
        Some(polls.len() as u64),
        "{shown}"
    );
    let recent = monitor["recent"].as_array().expect("observations");
    assert_eq!(recent.last().expect("one")["verdict"], "met", "{shown}");
    assert!(
        recent.last().expect("one")["tail"]
            .as_str()
            .is_some_and(|t| t.contains("finished")),
        "{shown}"
    );
}

#[test]
fn an_agent_cannot_claim_a_monitor_and_a_resting_todo_waits() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Wait", "--check", "exit 1", "--every", "1m"]);
    let refused = loopx.run(&["todo", "claim", "t1", "--agent", "exec"]);
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("t1 is a monitor"),
        "{}",
        refused.stderr
    );
    loopx.ok(&["todo", "drop", "t1"]);
    loopx.ok(&[
        "todo",
        "add",
        "Deploy after the freeze",
        "--not-before",
        "2h",
    ]);
    let decision = should_run(&loopx);
    assert_eq!(decision["decision"], "wait", "{decision}");
    assert_eq!(decision["todo"]["id"], "t2", "{decision}");
    assert!(decision["wake_at"].is_string(), "{decision}");
    let refused = loopx.run(&["todo", "claim", "t2", "--agent", "exec"]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("rests until"), "{}", refused.stderr);
    // A cadence shorter than ten seconds is a busy loop, refused with what to give instead.
    let fast = loopx.run(&["todo", "add", "Spin", "--check", "true", "--every", "1s"]);
    assert_eq!(fast.code, 2, "{}", fast.stderr);
    assert!(fast.stderr.contains("--every 1m"), "{}", fast.stderr);
    // A profile that does not load is refused when it is given, not at the first poll.
    let misspelt = ["todo", "add", "Look", "--check", "true", "--every", "1m"];
    let misspelt = loopx.run(&[&misspelt[..], &["--profile", "exce"]].concat());
    assert_ne!(misspelt.code, 0);
    assert!(
        misspelt.stderr.contains("profile `exce`"),
        "{}",
        misspelt.stderr
    );
    assert!(!loopx.ok(&["todo", "list"]).stdout.contains("Look"));
}

#[test]
fn an_expired_monitor_asks_a_person_and_its_dependents_wait_for_the_answer() {
    let loopx = demo_project(&["exec"]);
    loopx.ok(&[
        "todo",
        "add",
        "Wait for the review",
        "--check",
        "exit 1",
        "--every",
        "10s",
        "--expires",
        "1s",
    ]);
    loopx.ok(&["todo", "add", "Merge after the review", "--after", "t1"]);
    // The run's clock 2 s ahead: the monitor has expired for it, with no wait for the expiry.
    let run = loopx.run_env(
        &["run", "--on-gate", "exit"],
        &[("LOOPX_CLOCK_SKEW_MS", "2000")],
    );
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("waiting on gate q1"), "{}", run.stderr);
    assert!(run.stderr.contains("expired"), "{}", run.stderr);
    assert!(!run.stderr.contains("slice s1"), "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t2"), "open");
    // `drop`: the monitor is dropped, which releases the todo after it.
    loopx.ok(&["gate", "answer", "q1", "3"]);
    assert_eq!(todo_state(&loopx, "t1"), "dropped");
    let decision = should_run(&loopx);
    assert_eq!(decision["decision"], "deliver", "{decision}");
    assert_eq!(decision["todo"]["id"], "t2", "{decision}");
}

/// A check that fails (exit 2: neither met nor not yet) backs off, doubling its cadence, and
/// after three failures in a row asks a person with its output; no agent runs meanwhile.
#[test]
fn a_failing_check_backs_off_and_then_asks_with_its_output() {
    let loopx = demo_project(&["exec"]);
    monitor_and_follow_up(
        &loopx,
        "echo 'scripts/run-done.sh: no such file'; exit 2",
        "10s",
    );
    let started = std::time::Instant::now();
    let run = loopx.run(&["run", "--on-gate", "exit", "--for", "3m"]);
    let took = started.elapsed();
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    let polls: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("monitor t1 polled:"))
        .collect();
    assert_eq!(polls.len(), 3, "{}", run.stderr);
    // 10 s, then 20 s, then 40 s: the three polls spread over a minute, not over 20 s.
    assert!(
        polls[0].contains("failed (exit 2); next poll at"),
        "{}",
        run.stderr
    );
    assert!(
        polls[1].contains("failed (exit 2); next poll at"),
        "{}",
        run.stderr
    );
    assert!(
        polls[2].contains("asked (exit 2); a person is asked: gate q1"),
        "{}",
        run.stderr
    );
    assert!(took.as_secs() >= 55, "{took:?}\n{}", run.stderr);
    assert!(!run.stderr.contains("slice s1"), "{}", run.stderr);
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    let question = gate["gate"]["question"].as_str().unwrap_or_default();
    assert!(question.contains("failed 3 times"), "{gate}");
    let context = gate["gate"]["context"].as_str().unwrap_or_default();
    assert!(context.contains("no such file"), "{gate}");
    assert_eq!(todo_state(&loopx, "t2"), "open");
}

#[test]
fn a_check_cannot_write_outside_its_sandbox() {
    let loopx = demo_project(&["exec"]);
    let outside = tempfile::tempdir().expect("a directory outside the project");
    let check = format!(
        "echo planted > planted.txt; echo planted > {}/planted.txt; echo x >> .loopx/loopx.toml; echo looked; exit 0",
        outside.path().display()
    );
    loopx.ok(&["todo", "add", "Look", "--check", &check, "--every", "10s"]);
    let config_before =
        std::fs::read_to_string(loopx.path().join(".loopx/loopx.toml")).expect("config");
    let mut bg = Background::start(&loopx, &["--for", "20s"]);
    let polled = bg.wait_for("the poll", |e| e["event"] == "polled");
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = bg.finish();
    assert_eq!(polled["result"], "met", "{polled}");
    assert!(!loopx.path().join("planted.txt").exists());
    assert!(!outside.path().join("planted.txt").exists());
    let config_after =
        std::fs::read_to_string(loopx.path().join(".loopx/loopx.toml")).expect("config");
    assert_eq!(config_before, config_after);
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    let tail = shown["todo"]["monitor"]["recent"][0]["tail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(tail.contains("looked"), "{tail}");
}

/// Issue 28: an agent that started a long job reports a monitor and the work after it; loopx
/// polls the check (which runs read-only in the sandbox, whatever it tries) and starts the
/// follow-up once the job is done, with no slice in between.
#[test]
fn an_agent_reports_a_monitor_and_its_follow_up_which_runs_once_the_job_is_done() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Train and evaluate model 42"]);
    let script = format!(
        "r() {{ n=$1; shift; '{loopx}' --json report \"$@\" > $n.out 2> $n.err; echo $? > $n.rc; }}\n\
         cat > /dev/null\n\
         if [ \"$LOOPX_TODO\" = t1 ]; then\n\
           r monitor todo 'Wait for run 42' --check 'echo planted > planted-by-check.txt; if test -e run42.done; then echo loss 0.12; else exit 1; fi' --every 10s\n\
           id=$(grep -o '\"id\":\"t[0-9]*\"' monitor.out | head -1 | cut -d'\"' -f4)\n\
           r follow todo 'Evaluate run 42' --after \"$id\"\n\
           r profile todo 'Wait with my rights' --check true --every 1m --profile executor\n\
         fi\n\
         r done done --summary 'ok'\n",
        loopx = crate::support::LOOPX
    );
    crate::support::script_agent(
        &loopx,
        "exec",
        &script,
        "max_time = \"2m\"\nidle_timeout = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Start training run 42"]);
    let mut bg = Background::start(&loopx, &["--max-slices", "2"]);
    let first = bg.wait_for("the monitor's first poll", |e| e["event"] == "polled");
    assert_eq!(first["todo"], "t2", "{first}");
    assert_eq!(first["result"], "not yet", "{first}");
    std::fs::write(loopx.path().join("run42.done"), "").expect("the run ends");
    let (code, events) = bg.finish();
    assert_eq!(code, 0, "{events:#?}");
    let started: Vec<&Value> = event(&events, "slice_started");
    let todos: Vec<&str> = started.iter().filter_map(|e| e["todo"].as_str()).collect();
    assert_eq!(todos, ["t1", "t3"], "{events:#?}");
    let met = events
        .iter()
        .position(|e| e["event"] == "polled" && e["result"] == "met")
        .expect("met");
    let second = events.iter().position(|e| *e == *started[1]).expect("seen");
    assert!(met < second, "{events:#?}");
    // The check ran in the read-only sandbox: it wrote nothing in the project.
    assert!(!loopx.path().join("planted-by-check.txt").exists());
    // A profile is a person's to give.
    let profile = std::fs::read_to_string(loopx.path().join("profile.err")).expect("stderr");
    let rc = std::fs::read_to_string(loopx.path().join("profile.rc")).unwrap_or_default();
    let out = std::fs::read_to_string(loopx.path().join("profile.out")).unwrap_or_default();
    assert!(
        profile.contains("only a person"),
        "rc {rc} out {out} err {profile}"
    );
    let shown = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(shown["todo"]["created_by"], "agent:exec", "{shown}");
    assert_eq!(shown["todo"]["state"], "done", "{shown}");
}

/// Two supervisors on one project poll a monitor once per cadence between them: a poll is
/// claimed like a slice, and the one that loses the claim runs no check.
#[test]
fn two_supervisors_never_poll_one_monitor_at_once() {
    let loopx = demo_project(&["exec"]);
    monitor_and_follow_up(&loopx, "exit 1", "10s");
    let mut a = Background::start(&loopx, &["--for", "14s"]);
    let mut b = Background::start(&loopx, &["--for", "14s"]);
    a.wait_for("a's start", |e| e["event"] == "running");
    b.wait_for("b's start", |e| e["event"] == "running");
    let (_, a_events) = a.finish();
    let (_, b_events) = b.finish();
    let polled = event(&a_events, "polled").len() + event(&b_events, "polled").len();
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    let polls = shown["todo"]["monitor"]["polls"].as_u64().expect("polls");
    assert_eq!(polled as u64, polls, "{a_events:#?}\n{b_events:#?}");
    // Two cadences in 14 seconds: the first poll at once, the second 10 s later.
    assert_eq!(polls, 2, "{shown}");
    assert!(event(&a_events, "slice_started").is_empty());
    assert!(event(&b_events, "slice_started").is_empty());
}

/// `loopx run --once` (a cron job's supervisor) polls the due monitors before it decides, so
/// the work after a met one runs in the same invocation.
#[test]
fn run_once_polls_first_and_then_works_on_what_the_met_monitor_released() {
    let loopx = demo_project(&["exec"]);
    monitor_and_follow_up(&loopx, "echo done", "1h");
    let run = loopx.ok(&["run", "--once"]);
    assert!(
        run.stderr.contains("monitor t1 polled: met (exit 0)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("started: work on t2"), "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t1"), "done");
}

/// A check's stdin is `/dev/null`: one that reads it reads end-of-file at once, and never
/// waits on a terminal nobody types into.
#[test]
fn a_check_that_reads_its_stdin_reads_end_of_file() {
    let loopx = demo_project(&["exec"]);
    let check = "if [ -t 0 ]; then echo a terminal; exit 1; fi; cat; echo end of file";
    monitor_and_follow_up(&loopx, check, "1h");
    let run = loopx.ok(&["run", "--once"]);
    assert!(
        run.stderr.contains("monitor t1 polled: met (exit 0)"),
        "{}",
        run.stderr
    );
}

/// A stop while a check runs stops the check and ends the run at once, not when the check
/// would have ended.
#[test]
fn a_stop_during_a_long_check_ends_the_run_at_once() {
    let loopx = demo_project(&["exec"]);
    // A length of sleep no other process has: the check is found running by it.
    let unique = format!("50.{}", fastrand::u32(1000..1_000_000));
    monitor_and_follow_up(&loopx, &format!("sleep {unique}; exit 1"), "10m");
    let mut bg = Background::start(&loopx, &[]);
    bg.wait_for("the start", |e| e["event"] == "running");
    wait_for("the check running", SOON, || {
        !processes_with(&format!("sleep {unique}")).is_empty()
    });
    let stopped = std::time::Instant::now();
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    let (_, events) = bg.finish();
    assert!(
        stopped.elapsed() < std::time::Duration::from_secs(10),
        "{:?}: {events:#?}",
        stopped.elapsed()
    );
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    assert_eq!(shown["todo"]["state"], "open", "{shown}");
}

/// A check's output is read as a slice's log is: a secret of loopx's environment split by
/// colour codes is whole again, and redacted, before anything is stored.
#[test]
fn a_secret_a_check_prints_between_colour_codes_is_redacted() {
    let loopx = demo_project(&["exec"]);
    let check = r"printf 'token: hunt\033[0mer2-sekrit-42\n'; exit 1";
    loopx.ok(&["todo", "add", "Wait", "--check", check, "--every", "10m"]);
    let mut cmd = loopx.command(&["run", "--json", "--for", "3s"]);
    cmd.env("SOME_SERVICE_TOKEN", "hunter2-sekrit-42");
    let out = cmd.output().expect("loopx run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"polled\""), "{stdout}");
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    let tail = shown["todo"]["monitor"]["recent"][0]["tail"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(tail.starts_with("token: "), "{tail}");
    assert!(!tail.contains("sekrit") && !tail.contains("hunt"), "{tail}");
}

/// Issue 46, hole 8: a check an agent wrote ran 105 processes under a profile allowing 20: it
/// got the defaults. It runs under the limits of the agent whose check it is.
#[test]
fn an_agent_s_check_runs_under_its_agent_s_limits() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Train and evaluate model 42"]);
    let check = r#"python3 -c "
import os, time
n = 0
for _ in range(100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    n += 1
print('started', n)
""#;
    let script = format!(
        "cat > /dev/null\n\
         if [ \"$LOOPX_TODO\" = t1 ]; then\n\
           '{loopx}' report todo 'Count the children' --check '{check}' --every 10s > monitor.out 2>&1\n\
         fi\n\
         '{loopx}' report done --summary ok > /dev/null\n",
        loopx = crate::support::LOOPX,
        check = check.replace('\'', "'\\''"),
    );
    crate::support::script_agent(
        &loopx,
        "exec",
        &script,
        "max_time = \"2m\"\nidle_timeout = \"1m\"\nprocesses = 20",
    );
    loopx.ok(&["todo", "add", "Start training run 42"]);
    let mut bg = Background::start(&loopx, &["--for", "50s"]);
    let polled = bg.wait_for("the check's poll", |e| e["event"] == "polled");
    assert_eq!(polled["todo"], "t2", "{polled}");
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = bg.finish();
    let shown = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    assert_eq!(shown["todo"]["created_by"], "agent:exec", "{shown}");
    let text = shown.to_string();
    let started: u32 = text
        .split("started ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the check's output: {shown}"));
    assert!(
        started < 20,
        "the check started {started} children under its agent's limit of 20"
    );
}

/// Issue 46, hole 7: polls run one at a time, each up to a tenth of its cadence: five agent
/// checks that only slept held a person's 10 s monitor 50 s and `loopx run --once` 41 s. A
/// person's monitors go first; an agent's check runs at most 10 s, and the agents' checks
/// take at most a share of each round (the rest wait for the next).
#[test]
fn a_person_s_monitor_goes_before_the_agents_checks() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Train and evaluate model 42"]);
    let script = format!(
        "cat > /dev/null\n\
         if [ \"$LOOPX_TODO\" = t1 ]; then\n\
           for i in 1 2 3 4 5; do '{loopx}' report todo \"Sleep $i\" --check 'sleep 60' --every 10s > /dev/null; done\n\
         fi\n\
         '{loopx}' report done --summary ok > /dev/null\n",
        loopx = crate::support::LOOPX,
    );
    crate::support::script_agent(&loopx, "exec", &script, "max_time = \"2m\"");
    loopx.ok(&["todo", "add", "Start training run 42"]);
    let first = loopx.ok(&["run", "--once", "--json"]).json();
    assert_eq!(first["slice"]["todo"], "t1", "{first}");
    loopx.ok(&[
        "todo",
        "add",
        "Wait for CI",
        "--check",
        "exit 1",
        "--every",
        "10s",
    ]);
    let mut bg = Background::start(&loopx, &["--for", "25s"]);
    let (_, events) = {
        bg.wait_for("the first poll", |e| e["event"] == "polled");
        bg.finish()
    };
    let polled: Vec<&str> = event(&events, "polled")
        .iter()
        .filter_map(|e| e["todo"].as_str())
        .collect();
    assert_eq!(
        polled.first(),
        Some(&"t7"),
        "the person's first: {polled:?}"
    );
    // In 25 s the person's 10 s monitor is polled on time (at 0, 10 and 20 s), the agents'
    // sleeping checks at most 10 s a round.
    let person = polled.iter().filter(|t| **t == "t7").count();
    assert!(person >= 2, "the person's monitor waited: {polled:?}");
    let agents = polled.len() - person;
    assert!(
        agents <= 4,
        "{agents} agent checks of 10 s each in 25 s: {polled:?}"
    );
}

/// Issue 46, hole 2: a person's check `sh scripts/ci-status.sh` ran, at its next poll, the
/// script an agent had just rewritten to pass; the monitor was met and the deploy behind it
/// released. A person's check pins the files it names: one an agent changed is not run, the
/// person is asked with what it now says, and `poll` runs the content they saw.
#[test]
fn a_person_s_check_does_not_run_a_script_an_agent_rewrote() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the release"]);
    std::fs::create_dir_all(loopx.path().join("scripts")).expect("mkdir");
    std::fs::write(
        loopx.path().join("scripts/ci-status.sh"),
        "echo pending; exit 1\n",
    )
    .expect("the person's script");
    let rewrite = "cat > /dev/null\n\
        printf 'echo \"CI passed\"; exit 0\\n' > scripts/ci-status.sh\n\
        printf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"fixed the build\"}' '```'";
    crate::support::script_agent(&loopx, "exec", rewrite, "max_time = \"30s\"");
    loopx.ok(&["todo", "add", "Fix the build"]);
    let added = loopx.ok(&[
        "todo",
        "add",
        "Wait for CI",
        "--check",
        "sh scripts/ci-status.sh",
        "--every",
        "10s",
    ]);
    assert!(
        added.stdout.contains("Pinned scripts/ci-status.sh"),
        "{}",
        added.stdout
    );
    loopx.ok(&["todo", "add", "Deploy", "--after", "t2"]);
    // The first poll: not yet; then the agent's slice rewrites the script; the next poll.
    let mut bg = Background::start(&loopx, &["--for", "25s"]);
    let asked = bg.wait_for("the poll after the rewrite", |e| {
        e["event"] == "polled" && e["result"] != "not yet"
    });
    bg.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = bg.finish();
    assert_eq!(asked["result"], "asked", "{asked}");
    assert_eq!(todo_state(&loopx, "t2"), "open");
    assert_eq!(todo_state(&loopx, "t3"), "open");
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    let gate = &gates["gates"][0];
    let question = gate["question"].as_str().unwrap_or_default();
    assert!(
        question.contains("was not run: scripts/ci-status.sh changed"),
        "{gate:#}"
    );
    assert!(
        gate["context"]
            .as_str()
            .unwrap_or_default()
            .contains("echo \"CI passed\""),
        "the person sees what it now says: {gate:#}"
    );
    let shown = loopx.ok(&["todo", "show", "t2", "--json"]).json();
    let recent = shown["todo"]["monitor"]["recent"].to_string();
    assert!(!recent.contains("CI passed"), "it did not run: {recent}");
    // The person looked, and runs it as it is now.
    let id = gate["id"].as_str().expect("a gate id").to_owned();
    loopx.ok(&["gate", "answer", &id, "poll"]);
    loopx.ok(&["run", "--once"]);
    assert_eq!(todo_state(&loopx, "t2"), "done");
}

/// Issue 47, item 4: a check that prints a timestamp wrote an event at every poll (`t1 polled
/// (3 so far): not yet, exit 1`, again and again: 360 an hour at 10 s). The log hears of the
/// first poll and of a change of verdict; the monitor keeps the latest output and the count.
#[test]
fn a_check_whose_output_always_differs_logs_its_first_poll_and_not_every_poll() {
    let loopx = demo_project(&["exec"]);
    monitor_and_follow_up(&loopx, "date +%s%N; exit 1", "10s");
    // Six polls, one cadence apart on this process's clock.
    for poll in 0..6u64 {
        let skew = (poll * 11_000).to_string();
        let once = loopx.run_env(&["run", "--once"], &[("LOOPX_CLOCK_SKEW_MS", &skew)]);
        assert!(
            once.stderr.contains("monitor t1 polled: not yet (exit 1)"),
            "poll {poll}: {}",
            once.stderr
        );
    }
    let log = loopx.ok(&["log", "-n", "200"]).stdout;
    let polled: Vec<&str> = log.lines().filter(|l| l.contains("t1 polled (")).collect();
    assert_eq!(polled.len(), 1, "{log}");
    assert!(
        polled[0].contains("t1 polled (1 so far): not yet, exit 1"),
        "{log}"
    );
    let shown = loopx.ok(&["todo", "show", "t1", "--json"]).json();
    let monitor = &shown["todo"]["monitor"];
    assert_eq!(monitor["polls"], 6, "{shown}");
    let recent = monitor["recent"].as_array().expect("observations");
    assert_eq!(recent.len(), 1, "{shown}");
    assert_eq!(recent[0]["count"], 6, "{shown}");
}
