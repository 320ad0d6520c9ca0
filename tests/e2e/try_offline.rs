//! `docs/try-offline.md`'s Lark part, run as printed: `loopx-lark-server` started from a shell,
//! its printed lines put in `.loopx/loopx.toml`, `loopx lark sync` against it, and the table
//! read back. It needs no tool beyond bash and curl, so it runs on every test run. (The page's
//! agents' part needs the real CLIs: `crates/loopx-model-server/tests/real_clis.rs` runs it.)
//! Both servers' `--help` say what they are for and point to the page.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::LOOPX;

const PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/try-offline.md");

/// Builds `loopx-lark-server` and `loopx-model-server` beside the `loopx` under test (same
/// target directory and profile; a no-op when they are fresh), as `cargo install --path
/// crates/…` would install them; returns that directory.
fn build_servers() -> PathBuf {
    let dir = Path::new(LOOPX).parent().expect("target/<profile>");
    let target = dir.parent().expect("the target directory");
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => panic!("no profile directory above {LOOPX}"),
    };
    let built = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "loopx-lark-server",
            "-p",
            "loopx-model-server",
        ])
        .args(["--bin", "loopx-lark-server", "--bin", "loopx-model-server"])
        .args(["--profile", profile])
        .arg("--target-dir")
        .arg(target)
        .status()
        .expect("cargo runs");
    assert!(built.success(), "building the servers failed ({built})");
    dir.to_owned()
}

/// A port on 127.0.0.1 free just now: the page's fixed 8791 could be another run's.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

#[test]
fn the_lark_part_of_try_offline_md_runs_as_printed() {
    let page = std::fs::read_to_string(PAGE).expect("docs/try-offline.md");
    let port = free_port().to_string();
    let commands = loopx_model_server::walkthrough::section_commands(
        &page,
        "The Lark board against a scripted Lark",
    )
    .replace("8791", &port);
    let bin = build_servers();
    let work = tempfile::tempdir().expect("a temp dir");
    // A failing command stops the script, and the server started in the background goes too.
    let script = format!("set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{commands}");
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(work.path())
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("HOME", work.path())
        .env("USER", "tester")
        .env("NO_COLOR", "1")
        .output()
        .expect("bash runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    // The server printed what the page tells a person to paste, and where it listens.
    let printed = std::fs::read_to_string(work.path().join("try-lark/lark-server.txt"))
        .expect("the server's lines");
    let pasted = &page[page.find("[lark]\nbase_url").expect("the [lark] lines")..];
    let pasted = &pasted[..pasted.find("EOF").expect("their end")].replace("8791", &port);
    assert!(printed.contains(pasted), "{printed}\n---\n{pasted}");
    assert!(
        printed.contains("export LOOPX_LARK_APP_SECRET=offline-secret"),
        "{printed}"
    );
    assert!(
        printed.contains(&format!("http://127.0.0.1:{port}")),
        "{printed}"
    );
    // Two syncs: the first made the table and the first todo's record, the second added one.
    let syncs: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("Lark table"))
        .collect();
    assert_eq!(syncs.len(), 2, "{stdout}");
    assert!(
        syncs[0].contains(": 1 created, 0 updated, 0 deleted"),
        "{stdout}"
    );
    assert!(
        syncs[1].contains(": 1 created, 0 updated, 0 deleted"),
        "{stdout}"
    );
    let state: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("the state");
    let records = state["tables"][0]["records"].as_array().expect("records");
    let tasks: Vec<&str> = records
        .iter()
        .filter_map(|r| r["fields"]["Task"].as_str())
        .collect();
    assert_eq!(
        tasks,
        ["Write the README", "Review the README"],
        "{state:#}"
    );
}

#[test]
fn each_server_s_help_says_what_it_is_for_and_points_to_the_page() {
    let bin = build_servers();
    for (server, says) in [
        ("loopx-lark-server", "loopx's Lark board"),
        (
            "loopx-model-server",
            "the real agent CLIs run with no account",
        ),
    ] {
        let out = Command::new(bin.join(server))
            .arg("--help")
            .output()
            .expect("the server runs");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{server}: {help}");
        assert!(help.contains("docs/try-offline.md"), "{server}: {help}");
        assert!(help.replace('\n', " ").contains(says), "{server}: {help}");
        assert!(!help.contains("see the crate docs"), "{server}: {help}");
    }
}
