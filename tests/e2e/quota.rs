//! `loopx quota`: the decision, spends, holds, and concurrent spends on one account.

use loopx_kernel::store::NewHold;
use std::process::Stdio;
use std::time::Duration;

use crate::support::Loopx;

/// A project whose agents `a` and `b` share the account `shared`, with the given `[quota]`
/// body (after `account = "shared"`).
fn project(quota: &str) -> Loopx {
    let loopx = Loopx::new();
    let profile = format!(
        "adapter = \"demo\"\npermission = \"workspace-write\"\n\n[quota]\naccount = \"shared\"\n{quota}\n"
    );
    std::fs::write(loopx.path().join(".loopx/profiles/budget.toml"), profile)
        .expect("write profile");
    loopx.ok(&["goal", "start", "Spend carefully"]);
    loopx.ok(&["agent", "add", "a", "--profile", "budget"]);
    loopx.ok(&["agent", "add", "b", "--profile", "budget"]);
    loopx.ok(&[
        "todo",
        "add",
        "Add retry to the HTTP client",
        "--priority",
        "2",
    ]);
    loopx
}

fn should_run(loopx: &Loopx, agent: &str) -> serde_json::Value {
    loopx
        .ok(&["quota", "should-run", "--agent", agent, "--json"])
        .json()
}

#[test]
fn should_run_prints_the_documented_json() {
    let loopx = project("slices_per_hour = 6\nburst = 1");
    let run = loopx.ok(&["quota", "should-run", "--agent", "a", "--json"]);
    insta::assert_snapshot!(loopx.stable(&run.stdout));
    let human = loopx.ok(&["quota", "should-run", "--agent", "a"]);
    assert_eq!(
        human.stdout.trim(),
        "deliver t1 (work): t1 is the highest-priority open todo a can take"
    );
}

#[test]
fn pacing_persists_across_processes_and_a_hold_beats_it() {
    let loopx = project("slices_per_hour = 6\nburst = 1");
    loopx.ok(&["quota", "spend", "--agent", "a"]);
    // A new process: the arrival time came from the store, not from memory.
    let paced = should_run(&loopx, "a");
    assert_eq!(paced["decision"], "wait");
    assert!(
        paced["reason"]
            .as_str()
            .expect("reason")
            .contains("paced at 6"),
        "{paced}"
    );
    let refused = loopx.run(&["quota", "spend", "--agent", "a"]);
    assert_eq!(refused.code, 5, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("quota says wait until"),
        "{}",
        refused.stderr
    );

    loopx.ok(&[
        "quota",
        "hold",
        "--account",
        "shared",
        "--until",
        "3h",
        "--reason",
        "five_hour limit",
    ]);
    for agent in ["a", "b"] {
        let held = should_run(&loopx, agent);
        assert_eq!(held["decision"], "wait", "every agent on the account waits");
        assert!(
            held["reason"].as_str().expect("reason").contains("on hold"),
            "the hold binds: {held}"
        );
    }
    loopx.ok(&["quota", "resume", "--account", "shared"]);
    assert_eq!(should_run(&loopx, "b")["decision"], "deliver");
}

#[test]
fn pause_and_resume_one_agent() {
    let loopx = project("");
    loopx.ok(&["quota", "pause", "--agent", "a"]);
    let paused = should_run(&loopx, "a");
    assert_eq!(paused["decision"], "wait");
    assert!(paused["wake_at"].is_null(), "until a person resumes");
    assert_eq!(
        should_run(&loopx, "b")["decision"],
        "deliver",
        "the other agent goes on"
    );
    loopx.ok(&["quota", "resume", "--agent", "a"]);
    assert_eq!(should_run(&loopx, "a")["decision"], "deliver");
    let nothing = loopx.run(&["quota", "resume"]);
    assert_eq!(nothing.code, 2, "{}", nothing.stderr);
}

#[test]
fn reads_never_write() {
    let loopx = project("slices_per_hour = 6\nburst = 1");
    let before = std::fs::read(loopx.store_path()).expect("read");
    for _ in 0..3 {
        loopx.ok(&["quota", "should-run", "--agent", "a", "--json"]);
        loopx.ok(&["quota", "status", "--json"]);
        loopx.ok(&["status"]);
    }
    assert_eq!(
        std::fs::read(loopx.store_path()).expect("read"),
        before,
        "the store file is byte-for-byte unchanged"
    );
}

#[test]
fn status_shows_what_is_left_and_what_holds() {
    let loopx = project(
        "slices_per_hour = 6\nburst = 2\n\n[[quota.windows]]\nwindow = \"5h\"\ntokens = 1000",
    );
    loopx.ok(&["quota", "spend", "--agent", "a", "--tokens", "300"]);
    loopx.ok(&[
        "quota",
        "hold",
        "--account",
        "shared",
        "--until",
        "2026-12-31T00:00:00Z",
        "--reason",
        "weekly limit",
    ]);
    let run = loopx.ok(&["quota", "status"]);
    insta::assert_snapshot!(loopx.stable(&run.stdout));
    let json = loopx.ok(&["quota", "status", "--json"]).json();
    assert_eq!(json["agents"][0]["windows"][0]["tokens_left"], 700);
}

/// Runs `loopx quota spend` for `agent` in `n` processes at once; returns how many were
/// admitted, and insists every other one was refused with the conflict code.
fn spend_at_once(loopx: &Loopx, n: usize, extra: &[&str]) -> usize {
    let children: Vec<_> = (0..n)
        .map(|i| {
            let agent = if i % 2 == 0 { "a" } else { "b" };
            let mut args = vec!["quota", "spend", "--agent", agent];
            args.extend_from_slice(extra);
            loopx
                .command(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    crate::support::count_admitted(children)
}

fn ledger(loopx: &Loopx) -> usize {
    let log = loopx.ok(&["log", "--json", "-n", "1000"]);
    log.stdout
        .lines()
        .filter(|l| l.contains("\"kind\":\"quota_spent\""))
        .count()
}

#[test]
fn eight_processes_spending_on_one_budget_never_overspend() {
    // A token window of 1,000 and spends of 300 known up front: exactly three fit.
    let loopx = project("[[quota.windows]]\nwindow = \"5h\"\ntokens = 1000");
    let admitted = spend_at_once(&loopx, 8, &["--tokens", "300"]);
    assert_eq!(admitted, 3);
    assert_eq!(
        ledger(&loopx),
        3,
        "every admitted spend recorded exactly once"
    );
    let status = loopx.ok(&["quota", "status", "--json"]).json();
    assert_eq!(status["agents"][0]["windows"][0]["tokens_left"], 100);
}

#[test]
fn eight_processes_against_a_shared_burst() {
    // Pacing is per agent: a burst of 2 each for a and b.
    let loopx = project("slices_per_hour = 6\nburst = 2");
    let admitted = spend_at_once(&loopx, 8, &[]);
    assert_eq!(admitted, 4);
    assert_eq!(ledger(&loopx), 4);
    let doctor = loopx.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);
}

#[test]
fn charged_usage_is_never_refused_and_becomes_debt() {
    let loopx = project("[[quota.windows]]\nwindow = \"5h\"\ntokens = 1000");
    loopx.ok(&[
        "quota", "spend", "--agent", "a", "--charge", "--tokens", "2500", "--ran", "10m",
    ]);
    let wait = should_run(&loopx, "b");
    assert_eq!(
        wait["decision"], "wait",
        "the shared window is overspent: {wait}"
    );
    assert!(
        wait["reason"]
            .as_str()
            .expect("reason")
            .contains("window of shared is spent"),
        "{wait}"
    );
}

#[test]
fn a_vendor_reset_never_shortens_a_persons_pause() {
    let loopx = project("");
    loopx.ok(&["quota", "pause", "--account", "shared"]);
    // What a supervisor does with a parsed `resets_at`, through the kernel API, with the
    // person's account book as the CLI gives it.
    let settings = loopx_kernel::StoreSettings {
        account_book: Some(loopx.state.path().join("loopx/accounts.redb")),
        ..Default::default()
    };
    let project = loopx_kernel::Project::at(loopx.path())
        .expect("project")
        .with_store(settings);
    let store = loopx_kernel::Store::open(&project).expect("store");
    let until = loopx_kernel::Timestamp::now().plus(std::time::Duration::from_secs(60));
    let op = loopx_kernel::Op::QuotaHold(NewHold {
        key: "shared".into(),
        until: Some(until),
        reason: "five_hour limit".into(),
        source: loopx_kernel::model::HoldSource::Vendor,
    });
    store
        .apply(op, "agent:a", loopx_kernel::Timestamp::now())
        .expect("hold");
    drop(store);
    let status = loopx.ok(&["quota", "status", "--json"]).json();
    let hold = &status["holds"][0];
    assert!(
        hold["until"].is_null(),
        "still paused until resumed: {hold}"
    );
    assert_eq!(hold["source"], "manual");
}

#[test]
fn a_slice_is_stopped_where_it_would_take_its_window_a_quarter_past_its_budget() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Spend carefully"]);
    // Claude Code reports each message's usage as it comes: 3,000 tokens every half second.
    crate::support::cli_stand_in(
        &loopx,
        "claude",
        "claude-code",
        r#"echo '{"type":"system","subtype":"init","session_id":"9a2b","model":"claude-sonnet-4-5","tools":[],"apiKeySource":"none"}'
for n in 1 2 3 4 5 6 7 8; do
  echo '{"type":"assistant","message":{"id":"msg_'$n'","type":"message","role":"assistant","content":[{"type":"text","text":"Working."}],"usage":{"input_tokens":2000,"output_tokens":1000}},"session_id":"9a2b"}'
  sleep 0.5
done
exec sleep 60"#,
        "[limits]\nmax_time = \"2m\"\n\n[quota]\naccount = \"acct\"\n\n[[quota.windows]]\nwindow = \"5h\"\ntokens = 10000\n",
    );
    loopx.ok(&["todo", "add", "Add retry to the HTTP client"]);
    loopx.ok(&[
        "quota", "spend", "--agent", "claude", "--charge", "--tokens", "8000", "--ran", "10m",
    ]);
    // 8,000 of 10,000 spent: the slice may take the window to 12,500, so 4,500 more.
    let decision = should_run(&loopx, "claude");
    assert_eq!(decision["decision"], "deliver", "{decision:#}");
    assert_eq!(decision["max_tokens"], 4500, "{decision:#}");
    let run = loopx.run(&["run", "--json", "--once"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "interrupted", "{slice:#}");
    let reason = slice["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("spent 4500 tokens, the slice's ceiling"),
        "{reason}"
    );
    // Stopped at its second message (6,000 tokens), not after eight, nor at the wall time.
    let took = Duration::from_millis(slice["duration_ms"].as_u64().expect("a duration"));
    assert!(took < Duration::from_secs(3), "the slice took {took:?}");
    // What it spent is charged: the overrun becomes debt, 14,000 of a 10,000 window.
    let log = loopx.ok(&["log", "-n", "100"]).stdout;
    assert!(
        log.contains("usage charged for claude on acct: 6000 tokens"),
        "{log}"
    );
    let decision = should_run(&loopx, "claude");
    assert_eq!(decision["decision"], "wait", "{decision:#}");
}
