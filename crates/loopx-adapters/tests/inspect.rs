//! The data behind `loopx profile list|show|check` and `loopx adapter test`.

use std::path::{Path, PathBuf};

use loopx_adapters::inspect::{
    adapter_test, check_profile_file, check_profiles_dir, judge_health, list_profiles,
};
use loopx_adapters::{AdapterCatalog, find_profile, load_profile_file};

fn repo_profiles() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles")
}

fn project_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write profile");
    }
    dir
}

#[test]
fn list_shows_valid_and_invalid_profiles() {
    let dir = project_with(&[
        (
            "good.toml",
            "adapter = \"claude-code\"\npermission = \"read-only\"\nrole = \"reviewer\"\n",
        ),
        (
            "bad.toml",
            "adapter = \"claude-code\"\npermision = \"read-only\"\n",
        ),
        ("notes.txt", "not a profile"),
    ]);
    let listing = list_profiles(dir.path(), &AdapterCatalog::builtin()).expect("readable");
    let names: Vec<&str> = listing.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["bad", "good"]);
    assert_eq!(listing[1].role.as_deref(), Some("reviewer"));
    assert!(listing[1].problems.is_empty());
    // Both the unknown key and the missing `permission` are reported.
    assert_eq!(listing[0].problems.len(), 2, "{:?}", listing[0].problems);
    assert!(
        listing[0].problems[0].contains("bad.toml:"),
        "{:?}",
        listing[0].problems
    );
}

#[test]
fn check_reports_located_problems_and_a_rendering() {
    let dir = project_with(&[(
        "p.toml",
        "adapter = \"codex\"\npermission = \"read-only\"\n[limits]\nmax_time = \"soon\"\n",
    )]);
    let result = check_profile_file(&dir.path().join("p.toml"), &AdapterCatalog::builtin());
    assert!(!result.ok);
    assert_eq!(result.problems[0].line, 4);
    assert!(
        result
            .rendered
            .expect("a rendering")
            .contains("max_time = \"soon\"")
    );
    let all = check_profiles_dir(&repo_profiles(), &AdapterCatalog::builtin()).expect("readable");
    assert!(all.iter().all(|r| r.ok));
}

#[test]
fn find_profile_suggests_a_close_name() {
    let err = find_profile(&repo_profiles(), "executer", &AdapterCatalog::builtin())
        .expect_err("no such profile");
    assert!(
        err.to_string().contains("did you mean `executor`?"),
        "{err}"
    );
    assert!(find_profile(&repo_profiles(), "executor", &AdapterCatalog::builtin()).is_ok());
}

#[test]
fn adapter_test_replays_every_stream_of_each_shipped_profile() {
    for name in ["executor", "reviewer", "planner", "demo"] {
        let loaded = load_profile_file(
            &repo_profiles().join(format!("{name}.toml")),
            &AdapterCatalog::builtin(),
        )
        .expect("loads");
        let test = adapter_test(&loaded, Path::new("/opt/loopx"));
        assert!(!test.replays.is_empty(), "{name} has no recorded streams");
        for replay in &test.replays {
            assert!(replay.passed, "{name}: {replay:?}");
        }
        assert!(!test.health.args.is_empty());
    }
}

#[test]
fn demo_health_probe_runs_the_loopx_binary() {
    let loaded = load_profile_file(
        &repo_profiles().join("demo.toml"),
        &AdapterCatalog::builtin(),
    )
    .expect("loads");
    let test = adapter_test(&loaded, Path::new("/opt/loopx"));
    assert_eq!(test.health.program, "/opt/loopx");
    assert_eq!(test.health.args, ["__demo-agent", "--version"]);
}

#[test]
fn health_output_is_judged() {
    let adapter = AdapterCatalog::builtin()
        .load("claude-code")
        .expect("loads")
        .expect("exists");
    let ok = judge_health(&adapter, Some(0), "2.1.197 (Claude Code)\n");
    assert!(ok.ok);
    assert_eq!(ok.version.as_deref(), Some("2.1.197"));
    assert!(!judge_health(&adapter, Some(0), "command not found").ok);
    assert!(!judge_health(&adapter, Some(127), "").ok);
    assert!(!judge_health(&adapter, None, "2.1.0").ok);
}
