//! What a person sees at scale: `todo list` pages, `status` shows a bounded first screen whose
//! counts still say how much there is, and a slice's record keeps its prompt in a file.

use crate::support::{Loopx, cli_stand_in};

#[test]
fn todo_list_pages_in_the_order_todos_were_added() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the parser"]);
    for title in ["One", "Two", "Three", "Four", "Five"] {
        loopx.ok(&["todo", "add", title, "--priority", "1"]);
    }
    loopx.ok(&["todo", "done", "t2"]);
    let first = loopx.ok(&["todo", "list", "--limit", "2"]);
    let lines: Vec<&str> = first.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", first.stdout);
    assert!(
        lines[0].contains("t1") && lines[1].contains("t3"),
        "{}",
        first.stdout
    );
    assert!(
        lines[2].contains("More: loopx todo list --after t3 --limit 2"),
        "the last line gives the next page: {}",
        first.stdout
    );
    let second = loopx
        .ok(&["todo", "list", "--after", "t3", "--limit", "2", "--json"])
        .json();
    let ids: Vec<&str> = second["todos"]
        .as_array()
        .expect("todos")
        .iter()
        .map(|t| t["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["t4", "t5"]);
    assert_eq!(
        second["more"], false,
        "t5 is the last open todo: {second:#}"
    );
    let all = loopx.ok(&["todo", "list", "--all", "--after", "t1", "--limit", "1"]);
    assert!(
        all.stdout.contains("t2"),
        "--all pages finished todos too: {}",
        all.stdout
    );
    assert!(
        all.stdout.contains("--after t2 --limit 1 --all"),
        "{}",
        all.stdout
    );
    let none = loopx.run(&["todo", "list", "--limit", "0"]);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("--limit 0"), "{}", none.stderr);
    let bad = loopx.run(&["todo", "list", "--after", "seven"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("seven"),
        "names the bad id: {}",
        bad.stderr
    );
}

#[test]
fn status_shows_a_bounded_first_screen_with_the_counts() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the parser"]);
    loopx.ok(&["todo", "add", "Write the grammar"]);
    for i in 0..24 {
        loopx.ok(&["todo", "add", &format!("Parse rule {i}"), "--after", "t1"]);
    }
    let status = loopx.ok(&["status", "--json"]).json();
    let waiting = status["waiting"].as_array().expect("waiting");
    assert_eq!(waiting.len(), 10, "the first ten: {status:#}");
    assert_eq!(waiting[0]["reason"], "waits on t1 (Write the grammar)");
    assert_eq!(status["waiting_total"], 24);
    assert_eq!(status["counts"]["open"], 25);
    let next: Vec<&str> = status["next"]
        .as_array()
        .expect("next")
        .iter()
        .map(|n| n["todo"].as_str().expect("todo"))
        .collect();
    assert_eq!(next, ["t1"], "only t1 can be taken");
    let human = loopx.ok(&["status"]).stdout;
    assert!(human.contains("Waiting (24)"), "{human}");
    assert!(human.contains("… and 14 more waiting"), "{human}");
    // A gate that holds back every agent: nothing is next, and the first in line says why.
    loopx.ok(&[
        "gate",
        "ask",
        "Should the grammar follow the 2019 spec or the 2023 draft?",
        "--global",
    ]);
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(status["next"], serde_json::json!([]), "{status:#}");
    let gated: Vec<&serde_json::Value> = status["waiting"]
        .as_array()
        .expect("waiting")
        .iter()
        .filter(|w| w["reason"] == "blocked by gate q1")
        .collect();
    assert_eq!(gated.len(), 1, "{status:#}");
    assert_eq!(gated[0]["todo"], "t1");
    // Finishing t1 frees every todo that waited on it.
    loopx.ok(&["gate", "answer", "q1", "the 2023 draft"]);
    loopx.ok(&["todo", "done", "t1"]);
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(status["waiting_total"], 0, "{status:#}");
    assert_eq!(status["next"].as_array().expect("next").len(), 5);
    assert_eq!(status["counts"]["open"], 24);
    assert_eq!(status["counts"]["done"], 1);
}

#[test]
fn a_slice_record_keeps_an_argument_prompt_in_the_prompt_file() {
    // Codex takes its prompt as an argument, Claude Code as the first line on its stdin.
    let codex = r#"echo '{"type":"thread.started","thread_id":"3f1e"}'
echo '{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"Done.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"retries added\"}\n```"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}'"#;
    let claude = r#"echo '{"type":"system","subtype":"init","session_id":"3f1e","model":"claude-sonnet-4-5","tools":[]}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"Done.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"retries added\"}\n```","session_id":"3f1e","usage":{"input_tokens":10,"output_tokens":5}}'"#;
    for (adapter, script, by_argument) in [("codex", codex, true), ("claude-code", claude, false)] {
        let loopx = Loopx::new();
        loopx.ok(&["goal", "start", "Add retries"]);
        cli_stand_in(&loopx, "agent", adapter, script, "");
        loopx.ok(&["todo", "add", "Add retry to the HTTP client"]);
        loopx.ok(&["run", "--max-slices", "1"]);
        let project = loopx_kernel::Project::at(loopx.path()).expect("project");
        let store = loopx_kernel::Store::open_read(&project).expect("store");
        let slice = store
            .read(|s| s.slice(loopx_kernel::SliceId(1)))
            .expect("read")
            .expect("s1");
        let argv = slice.argv.join(" ");
        assert!(
            !argv.contains("Add retry to the HTTP client"),
            "{adapter}: the record holds no prompt: {argv}"
        );
        assert_eq!(
            argv.contains("{prompt: .loopx/slices/s1.prompt}"),
            by_argument,
            "{adapter}: {argv}"
        );
        let file = loopx.path().join(".loopx/slices/s1.prompt");
        let prompt = std::fs::read_to_string(&file).expect("the prompt file");
        assert!(
            prompt.contains("Add retry to the HTTP client"),
            "{adapter}: {prompt}"
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&file).expect("meta").permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{adapter}");
    }
}
