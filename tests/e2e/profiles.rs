//! Profiles and adapters from the command line, and the `__exec` helper.

use crate::support::{LOOPX, Loopx};

#[test]
fn init_writes_example_profiles_that_validate() {
    let loopx = Loopx::new();
    let list = loopx.ok(&["profile", "list", "--json"]).json();
    let names: Vec<&str> = list["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    // Besides the examples, a profile for each agent CLI this machine has on PATH.
    let examples: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !VENDOR_ADAPTERS.contains(n))
        .collect();
    assert_eq!(examples, ["demo", "executor", "planner", "reviewer"]);
    for profile in list["profiles"].as_array().expect("profiles") {
        assert_eq!(
            profile["problems"].as_array().expect("problems").len(),
            0,
            "{profile}"
        );
        assert_eq!(profile["content_hash"].as_str().expect("hash").len(), 64);
    }
    let check = loopx.ok(&["profile", "check"]);
    assert_eq!(
        check
            .stdout
            .lines()
            .filter(|l| l.starts_with("ok "))
            .count(),
        names.len(),
        "{}",
        check.stdout
    );
    let show = loopx.ok(&["profile", "show", "executor"]);
    assert!(
        show.stdout.contains("adapter claude-code"),
        "{}",
        show.stdout
    );
}

/// The built-in adapters of agent CLIs, for which `loopx init` writes a profile when it finds
/// the program on PATH.
const VENDOR_ADAPTERS: [&str; 6] = [
    "claude-code",
    "codex",
    "gemini",
    "cursor",
    "opencode",
    "qwen",
];

#[test]
fn init_writes_a_profile_for_each_agent_cli_it_finds_on_path() {
    let bin = tempfile::tempdir().expect("a bin dir");
    let write = |name: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.path().join(name);
        std::fs::write(&path, "#!/bin/sh\necho 2025.11.25-d5b3271\n").expect("a fake CLI");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    write("codex", 0o755);
    write("cursor-agent", 0o755);
    // Not executable: not an installed CLI.
    write("claude", 0o644);
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let dir = Loopx::empty();
    let init = dir.run_env(&["init"], &[("PATH", &path)]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(
        init.stdout
            .contains("one for each agent CLI found: codex, cursor"),
        "{}",
        init.stdout
    );
    let profiles = dir.path().join(".loopx/profiles");
    assert!(!profiles.join("claude-code.toml").exists());
    let cursor = std::fs::read_to_string(profiles.join("cursor.toml")).expect("cursor's profile");
    assert!(cursor.contains("adapter = \"cursor\""), "{cursor}");
    assert!(cursor.contains("found `cursor-agent` on PATH"), "{cursor}");
    assert!(
        !cursor.contains(&bin.path().display().to_string()),
        "no path of this machine in a file that may be committed: {cursor}"
    );
    // They load, and their CLI answers its health check.
    let check = dir.run_env(&["profile", "check"], &[("PATH", &path)]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    for name in ["codex", "cursor"] {
        assert!(
            check.stdout.contains(&format!("/profiles/{name}.toml")),
            "{}",
            check.stdout
        );
        let test = dir.run_env(&["adapter", "test", name, "--json"], &[("PATH", &path)]);
        let report = test.json();
        assert_eq!(report["health"]["ok"], true, "{name}: {report}");
    }
}

#[test]
fn an_invalid_profile_is_refused_with_its_location() {
    let loopx = Loopx::new();
    let bad = loopx.path().join(".loopx/profiles/nightly.toml");
    std::fs::write(
        &bad,
        "adapter = \"claude-code\"\npermision = \"read-only\"\n",
    )
    .expect("write");
    let check = loopx.run(&["profile", "check", bad.to_str().expect("utf-8")]);
    assert_eq!(check.code, 3, "{}{}", check.stdout, check.stderr);
    assert!(
        check.stdout.contains("nightly.toml:2:1"),
        "names file:line:column: {}",
        check.stdout
    );
    assert!(
        check.stdout.contains("permission"),
        "suggests the right key: {}",
        check.stdout
    );
    let list = loopx.ok(&["profile", "list", "--json"]).json();
    let nightly = list["profiles"]
        .as_array()
        .expect("profiles")
        .iter()
        .find(|p| p["name"] == "nightly")
        .expect("listed");
    assert!(
        nightly["content_hash"].is_null(),
        "an invalid profile has no hash to approve"
    );
}

#[test]
fn adapter_test_replays_recorded_streams_and_reports_a_missing_cli() {
    let loopx = Loopx::new();
    let run = loopx.run_env(
        &["adapter", "test", "reviewer", "--json"],
        &[("PATH", "/nonexistent")],
    );
    assert_eq!(run.code, 3, "the CLI is not installed here: {}", run.stderr);
    let report = run.json();
    let replays = report["adapter_test"]["replays"]
        .as_array()
        .expect("replays");
    assert!(replays.len() >= 4, "codex streams replayed: {replays:?}");
    assert!(replays.iter().all(|r| r["passed"] == true), "{replays:?}");
    assert_eq!(report["health"]["ok"], false);
    assert!(
        report["health"]["reason"]
            .as_str()
            .expect("reason")
            .contains("not installed"),
        "{report}"
    );
}

#[test]
fn exec_helper_sets_limits_then_runs_the_program() {
    let out = std::process::Command::new(LOOPX)
        .args([
            "__exec",
            "--limit",
            "nofile=64",
            "--",
            "/bin/sh",
            "-c",
            "ulimit -n",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "64");
    let bad = std::process::Command::new(LOOPX)
        .args(["__exec", "--limit", "bogus=1", "--", "/bin/true"])
        .output()
        .expect("run");
    assert_eq!(
        bad.status.code(),
        Some(127),
        "a refused limit is a spawn failure"
    );
}

#[test]
fn two_windows_with_one_period_are_refused() {
    let loopx = Loopx::new();
    let bad = loopx.path().join(".loopx/profiles/double.toml");
    let text = "adapter = \"demo\"\npermission = \"workspace-write\"\n\n[quota]\naccount = \"x\"\n\n[[quota.windows]]\nwindow = \"5h\"\ntokens = 10\n\n[[quota.windows]]\nwindow = \"5h\"\ncost_usd = 1.0\n";
    std::fs::write(&bad, text).expect("write");
    let check = loopx.run(&["profile", "check", bad.to_str().expect("utf-8")]);
    assert_eq!(check.code, 3, "{}", check.stdout);
    assert!(
        check.stdout.contains("a second quota window of `5h`"),
        "{}",
        check.stdout
    );
}
