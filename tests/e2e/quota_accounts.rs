//! One quota ledger per account, across projects: two projects of one person (one state
//! directory) spending on one account share its window and its holds, unless a project keeps
//! its own ledger (`[quota] ledger = "project"`).

use std::process::Stdio;

use crate::support::{Loopx, test_database};

/// A profile on the account `acct` with a 10,000-token window, agent `name` on it, a goal and
/// a todo.
fn spender(loopx: &Loopx, name: &str) {
    let profile = "adapter = \"demo\"\npermission = \"workspace-write\"\n\n[quota]\naccount = \"acct\"\n\n[[quota.windows]]\nwindow = \"5h\"\ntokens = 10000\n";
    std::fs::write(loopx.path().join(".loopx/profiles/budget.toml"), profile)
        .expect("write profile");
    loopx.ok(&["goal", "start", "Spend carefully"]);
    loopx.ok(&["agent", "add", name, "--profile", "budget"]);
    loopx.ok(&["todo", "add", "Add retry to the HTTP client"]);
}

/// Two projects of one person, agent `a` in the first and `b` in the second, both on `acct`;
/// `config` is each project's `loopx.toml`.
fn two_projects(config: &str) -> (Loopx, Loopx) {
    let first = Loopx::new();
    let second = Loopx::beside(&first);
    for (loopx, name) in [(&first, "a"), (&second, "b")] {
        loopx.write_config(config);
        spender(loopx, name);
    }
    (first, second)
}

fn should_run(loopx: &Loopx, agent: &str) -> serde_json::Value {
    loopx
        .ok(&["quota", "should-run", "--agent", agent, "--json"])
        .json()
}

/// A database store keeps its project's ledger (its hosts do not share this user's file).
fn shared_ledger_applies() -> bool {
    test_database().is_none()
}

#[test]
fn two_projects_on_one_account_spend_one_window() {
    if !shared_ledger_applies() {
        return;
    }
    let (first, second) = two_projects("");
    first.ok(&[
        "quota", "spend", "--agent", "a", "--charge", "--tokens", "8000", "--ran", "10m",
    ]);
    // 8,000 of the account's 10,000 spent in the first project: the second's slice may take
    // the window to its ceiling (12,500) and no further.
    let decision = should_run(&second, "b");
    assert_eq!(decision["decision"], "deliver", "{decision:#}");
    assert_eq!(decision["max_tokens"], 4500, "{decision:#}");
    let refused = second.run(&["quota", "spend", "--agent", "b", "--tokens", "3000"]);
    assert_eq!(refused.code, 5, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("does not fit in the window of acct"),
        "{}",
        refused.stderr
    );
    // What the second spends fills the window for the first too.
    second.ok(&[
        "quota", "spend", "--agent", "b", "--charge", "--tokens", "2000", "--ran", "5m",
    ]);
    let decision = should_run(&first, "a");
    assert_eq!(decision["decision"], "wait", "{decision:#}");
    let status = first.ok(&["quota", "status", "--json"]).json();
    assert_eq!(
        status["agents"][0]["windows"][0]["tokens_left"], 0,
        "{status:#}"
    );

    // The person's view across projects: the account, both projects, the window.
    let all = first.ok(&["quota", "status", "--all", "--json"]).json();
    let account = &all["accounts"][0];
    assert_eq!(account["account"], "acct", "{all:#}");
    assert_eq!(account["windows"][0]["tokens"], 10000, "{all:#}");
    let mut projects: Vec<String> = account["projects"]
        .as_array()
        .expect("projects")
        .iter()
        .map(|p| p["project"].as_str().expect("a project").to_owned())
        .collect();
    projects.sort();
    let mut want = vec![
        first.path().display().to_string(),
        second.path().display().to_string(),
    ];
    want.sort();
    assert_eq!(projects, want, "{all:#}");
    let human = second.ok(&["quota", "status", "--all"]).stdout;
    assert!(human.contains("account acct"), "{human}");
    assert!(human.contains("window 18000s: 10000 tokens"), "{human}");
}

#[test]
fn a_hold_on_an_account_in_one_project_holds_the_other() {
    if !shared_ledger_applies() {
        return;
    }
    let (first, second) = two_projects("");
    assert_eq!(should_run(&second, "b")["decision"], "deliver");
    first.ok(&[
        "quota",
        "hold",
        "--account",
        "acct",
        "--until",
        "3h",
        "--reason",
        "five_hour limit",
    ]);
    let decision = should_run(&second, "b");
    assert_eq!(decision["decision"], "wait", "{decision:#}");
    assert!(
        decision["reason"]
            .as_str()
            .expect("reason")
            .contains("five_hour limit"),
        "{decision:#}"
    );
    let all = second.ok(&["quota", "status", "--all", "--json"]).json();
    assert_eq!(all["accounts"][0]["holds"][0]["reason"], "five_hour limit");
    // Lifted from the second project, it is lifted for the first.
    second.ok(&["quota", "resume", "--account", "acct"]);
    assert_eq!(should_run(&first, "a")["decision"], "deliver");
}

#[test]
fn a_project_that_keeps_its_own_ledger_is_apart() {
    let (first, second) = two_projects("[quota]\nledger = \"project\"\n");
    first.ok(&[
        "quota", "spend", "--agent", "a", "--charge", "--tokens", "8000", "--ran", "10m",
    ]);
    first.ok(&["quota", "hold", "--account", "acct", "--until", "3h"]);
    let decision = should_run(&second, "b");
    assert_eq!(decision["decision"], "deliver", "{decision:#}");
    let status = second.ok(&["quota", "status", "--json"]).json();
    assert_eq!(
        status["agents"][0]["windows"][0]["tokens_left"], 10000,
        "{status:#}"
    );
    assert_eq!(should_run(&first, "a")["decision"], "wait");
    let all = first.ok(&["quota", "status", "--all", "--json"]).json();
    assert_eq!(all["accounts"], serde_json::json!([]), "{all:#}");
}

#[test]
fn a_ledger_setting_that_is_neither_is_refused_with_its_line() {
    // A database store keeps its own ledger and never reads the setting to choose: the value
    // is then a problem `quota status` shows, not a refusal.
    if !shared_ledger_applies() {
        return;
    }
    let loopx = Loopx::new();
    loopx.write_config("[quota]\nledger = \"everywhere\"\n");
    let run = loopx.run(&["quota", "status"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("loopx.toml:2"), "{}", run.stderr);
    assert!(run.stderr.contains("everywhere"), "{}", run.stderr);
}

#[test]
fn a_damaged_account_book_is_an_error_naming_it_and_left_alone() {
    if !shared_ledger_applies() {
        return;
    }
    let (first, _second) = two_projects("");
    let book = first.state.path().join("loopx/accounts.redb");
    std::fs::write(&book, b"not a database").expect("write");
    let run = first.run(&["quota", "spend", "--agent", "a", "--tokens", "10"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("accounts.redb"), "{}", run.stderr);
    assert_eq!(std::fs::read(&book).expect("read"), b"not a database");
    // A symbolic link in its place is refused too, and what it points at is untouched.
    let target = first.path().join("elsewhere");
    std::fs::write(&target, b"").expect("write");
    std::fs::remove_file(&book).expect("remove");
    std::os::unix::fs::symlink(&target, &book).expect("symlink");
    let run = first.run(&["quota", "spend", "--agent", "a", "--tokens", "10"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(std::fs::read(&target).expect("read").len(), 0);
}

#[test]
fn eight_processes_in_two_projects_never_overspend_their_account() {
    if !shared_ledger_applies() {
        return;
    }
    let (first, second) = two_projects("");
    // Four processes in each project at once, spends of 3,000 known up front on one 10,000
    // window: exactly three fit, whichever project they come from.
    let children: Vec<_> = (0..8)
        .map(|i| {
            let (loopx, agent) = if i % 2 == 0 {
                (&first, "a")
            } else {
                (&second, "b")
            };
            loopx
                .command(&["quota", "spend", "--agent", agent, "--tokens", "3000"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    assert_eq!(crate::support::count_admitted(children), 3);
    let all = first.ok(&["quota", "status", "--all", "--json"]).json();
    assert_eq!(all["accounts"][0]["windows"][0]["tokens"], 9000, "{all:#}");
    let spends: u64 = all["accounts"][0]["projects"]
        .as_array()
        .expect("projects")
        .iter()
        .map(|p| p["spends"].as_u64().expect("spends"))
        .sum();
    assert_eq!(spends, 3, "{all:#}");
}

#[test]
fn a_usage_limit_met_by_a_slice_in_one_project_holds_the_others_agents() {
    if !shared_ledger_applies() {
        return;
    }
    let first = Loopx::new();
    let second = Loopx::beside(&first);
    for loopx in [&first, &second] {
        loopx.ok(&["goal", "start", "Write the demo notes"]);
        loopx.ok(&[
            "agent",
            "add",
            "exec",
            "--profile",
            "demo",
            "--capability",
            "demo",
        ]);
    }
    first.ok(&["todo", "add", "Write the notes [demo:usage-limit]"]);
    second.ok(&["todo", "add", "Write the other notes"]);
    let run = first.run_once(&[("LOOPX_DEMO_RESET_SECS", "600")]);
    assert_eq!(
        run.json()["slice"]["outcome"],
        "usage_limited",
        "{}",
        run.stderr
    );
    // The vendor's limit is the account's: the second project's agent on it waits too.
    let decision = should_run(&second, "exec");
    assert_eq!(decision["decision"], "wait", "{decision:#}");
    assert!(
        decision["reason"]
            .as_str()
            .expect("reason")
            .contains("usage limit reported by `exec`"),
        "{decision:#}"
    );
    let root = std::fs::canonicalize(first.path()).expect("root");
    assert!(
        decision["reason"]
            .as_str()
            .expect("reason")
            .contains(&format!("(in project {})", root.display())),
        "{decision:#}"
    );
}

#[test]
fn a_project_that_starts_sharing_its_ledger_brings_what_its_windows_spent() {
    if !shared_ledger_applies() {
        return;
    }
    let (first, second) = two_projects("[quota]\nledger = \"project\"\n");
    first.ok(&[
        "quota", "spend", "--agent", "a", "--charge", "--tokens", "8000", "--ran", "10m",
    ]);
    // The first project shares its ledger from now on: its 8,000 are the account's, and the
    // second, sharing too, sees them.
    for loopx in [&first, &second] {
        loopx.write_config("");
    }
    let decision = should_run(&first, "a");
    assert_eq!(decision["max_tokens"], 4500, "{decision:#}");
    first.ok(&[
        "quota", "spend", "--agent", "a", "--charge", "--tokens", "1000", "--ran", "1m",
    ]);
    let decision = should_run(&second, "b");
    assert_eq!(decision["max_tokens"], 3500, "{decision:#}");
}

/// The book's writes are part of the project's batch: a batch the kernel refuses (or a store
/// failure the caller retries) leaves nothing in the book — no hold, no charge counted twice.
#[test]
fn a_refused_batch_leaves_nothing_in_the_account_book() {
    if !shared_ledger_applies() {
        return;
    }
    let (first, second) = two_projects("");
    let settings = loopx_kernel::StoreSettings {
        account_book: Some(first.state.path().join("loopx/accounts.redb")),
        ..Default::default()
    };
    let project = loopx_kernel::Project::at(first.path())
        .expect("project")
        .with_store(settings);
    let store = loopx_kernel::Store::open(&project).expect("store");
    let now = loopx_kernel::Timestamp::now();
    let hold = loopx_kernel::Op::QuotaHold(loopx_kernel::store::NewHold {
        key: "acct".into(),
        until: Some(now.plus(std::time::Duration::from_secs(3600))),
        reason: "five_hour limit".into(),
        source: loopx_kernel::model::HoldSource::Vendor,
    });
    // The hold, then a claim of a todo that does not exist: the batch is refused.
    let claim = loopx_kernel::Op::TodoClaim(loopx_kernel::store::ClaimTodo {
        todo: loopx_kernel::TodoId(99),
        agent: "a".parse().expect("name"),
        ttl: std::time::Duration::from_secs(60),
    });
    let refused = store.apply_all(vec![hold.clone(), claim], "agent:a", now);
    assert!(refused.is_err(), "{refused:?}");
    drop(store);
    assert_eq!(
        should_run(&second, "b")["decision"],
        "deliver",
        "no hold was kept"
    );
    let all = second.ok(&["quota", "status", "--all", "--json"]).json();
    let holds = all["accounts"][0]["holds"].as_array().map_or(0, Vec::len);
    assert_eq!(holds, 0, "{all:#}");
    // The same hold alone is kept, for both projects.
    let store = loopx_kernel::Store::open(&project).expect("store");
    store.apply(hold, "agent:a", now).expect("hold");
    drop(store);
    assert_eq!(should_run(&second, "b")["decision"], "wait");
}
