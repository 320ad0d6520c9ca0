//! Steering from the terminal (issue 16): one meaning for an answer, whichever way it is given.

use crate::support::Loopx;

fn ask(loopx: &Loopx, question: &str) {
    loopx.ok(&[
        "gate", "ask", question, "--option", "ship it", "--option", "hold it", "--option",
        "drop it", "--global",
    ]);
}

fn answer_of(loopx: &Loopx, gate: &str) -> (String, u64) {
    let shown = loopx.ok(&["gate", "show", gate, "--json"]).json();
    let answer = &shown["gate"]["answer"];
    (
        answer["text"].as_str().unwrap_or_default().to_owned(),
        answer["option"].as_u64().unwrap_or(0),
    )
}

#[test]
fn a_number_means_that_option_and_an_out_of_range_one_is_refused() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Release 2.0"]);
    ask(&loopx, "Ship the release candidate to users?");
    ask(&loopx, "Ship the second candidate to users?");
    ask(&loopx, "Ship the third candidate to users?");

    // The hint names every option by its number (a literal `N` was once typed, and taken).
    let hint = "loopx gate answer q1 1 (ship it) | 2 (hold it) | 3 (drop it)";
    let listed = loopx.ok(&["gate", "list"]).stdout;
    assert!(listed.contains(hint), "{listed}");
    let status = loopx.ok(&["status", "--json"]).json();
    assert_eq!(status["needs_you"][0]["answer_command"], hint, "{status}");

    let refused = loopx.run(&["gate", "answer", "q1", "7"]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains('7'), "{}", refused.stderr);
    assert_eq!(
        answer_of(&loopx, "q1"),
        (String::new(), 0),
        "nothing recorded"
    );

    loopx.ok(&["gate", "answer", "q1", "2"]);
    loopx.ok(&["gate", "answer", "q2", "--option", "2"]);
    loopx.ok(&["gate", "answer", "q3", "Hold it"]);
    for gate in ["q1", "q2"] {
        assert_eq!(answer_of(&loopx, gate), ("hold it".to_owned(), 2), "{gate}");
    }
    // In words, any case: option 2, recorded as the option reads.
    assert_eq!(answer_of(&loopx, "q3"), ("hold it".to_owned(), 2));
}

#[test]
fn a_number_that_is_also_another_option_s_text_is_refused_as_ambiguous() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Release 2.0"]);
    loopx.ok(&[
        "gate",
        "ask",
        "How many parallel workers should the test run use?",
        "--option",
        "4",
        "--option",
        "2",
        "--option",
        "1",
        "--global",
    ]);
    let refused = loopx.run(&["gate", "answer", "q1", "1"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--option N"), "{}", refused.stderr);
    // The same text at its own place is not ambiguous; --option is never.
    loopx.ok(&["gate", "answer", "q1", "2"]);
    assert_eq!(answer_of(&loopx, "q1"), ("2".to_owned(), 2));
}

#[test]
fn gate_context_keeps_its_indentation_and_titles_stay_on_one_line() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Release 2.0"]);
    loopx.ok(&[
        "gate",
        "ask",
        "Which changelog format should the release use?",
        "--option",
        "keep a changelog",
        "--context",
        "Two candidates:\n    - keep a changelog\n        (sections per release)\n    - plain list",
        "--global",
    ]);
    let listed = loopx.ok(&["gate", "list"]).stdout;
    assert!(
        listed.contains(
            "    context: Two candidates:\n                 - keep a changelog\n                     (sections per release)\n                 - plain list\n"
        ),
        "{listed}"
    );
    assert!(listed.contains("asked by human:tester"), "{listed}");

    loopx.ok(&["todo", "add", "Two\nlines of title"]);
    let todos = loopx.ok(&["todo", "list"]).stdout;
    assert!(todos.contains("Two ⏎ lines of title"), "{todos}");
    let status = loopx.ok(&["status"]).stdout;
    assert!(status.contains("Two ⏎ lines of title"), "{status}");
}

#[test]
fn a_gate_loopx_opened_says_so() {
    let loopx = Loopx::new();
    loopx.write_config("[notify]\ncommand = \"true\"\ntimeout = \"1s\"\n");
    let project = loopx_kernel::Project::at(loopx.path()).expect("the project");
    loopx_supervisor::Notifier::load(&project)
        .expect("loopx.toml loads")
        .expect("a notification command")
        .seek_approval(loopx_kernel::Timestamp::now())
        .expect("the store opens")
        .expect("a gate asks");
    let listed = loopx.ok(&["gate", "list"]).stdout;
    assert!(listed.contains("opened by loopx"), "{listed}");
    assert!(!listed.contains("asked by"), "{listed}");
}

#[test]
fn init_keeps_state_and_logs_out_of_git_and_names_the_next_steps() {
    let loopx = Loopx::empty();
    let init = loopx.ok(&["init"]).stdout;
    for step in [
        "loopx goal start",
        "loopx agent add",
        "loopx todo add",
        "loopx run",
    ] {
        assert!(init.contains(step), "{init}");
    }
    let ignore = std::fs::read_to_string(loopx.path().join(".loopx/.gitignore")).expect("written");
    for line in ["/state.redb", "/slices/", "/worktrees/"] {
        assert!(ignore.lines().any(|l| l == line), "{ignore}");
    }
    // Git agrees: the store and the logs are ignored, the profiles are not.
    crate::support::git(loopx.path(), &["init", "-q"]);
    std::fs::create_dir_all(loopx.path().join(".loopx/slices")).expect("slices");
    std::fs::write(loopx.path().join(".loopx/slices/s1.log"), "output").expect("log");
    let untracked = crate::support::git(
        loopx.path(),
        &["status", "--short", "--untracked-files=all"],
    );
    assert!(!untracked.contains("state.redb"), "{untracked}");
    assert!(!untracked.contains("s1.log"), "{untracked}");
    assert!(
        untracked.contains(".loopx/profiles/executor.toml"),
        "{untracked}"
    );
}

#[test]
fn an_agent_in_a_slice_shows_as_running_it() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Tidy the docs"]);
    let script = "cat >/dev/null\ntouch started.flag\nwhile [ ! -e go.flag ]; do sleep 0.05; done\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"tidied\"}' '```'";
    crate::support::script_agent(&loopx, "a", script, "max_time = \"60s\"");
    loopx.ok(&["todo", "add", "Tidy the README"]);
    let run = crate::support::Background::start(&loopx, &["--max-slices", "1"]);
    crate::support::wait_file(&loopx.path().join("started.flag"));
    let status = loopx.ok(&["status"]).stdout;
    let json = loopx.ok(&["status", "--json"]).json();
    std::fs::write(loopx.path().join("go.flag"), "").expect("go");
    assert_eq!(json["agents"][0]["running"], "s1", "{json}");
    assert!(status.contains("Running (1 slice)"), "{status}");
    assert!(
        status.contains("  a            running s1 on t1 ("),
        "{status}"
    );
    assert!(
        !status.contains("claimed by a"),
        "shown once, as the slice: {status}"
    );
    assert_eq!(run.finish().0, 0);
}

#[test]
fn a_question_with_options_refuses_words_that_name_none_of_them_and_takes_a_note() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Release 2.0"]);
    ask(&loopx, "Ship the release candidate to users?");
    for words in ["N", "ok", "yes please", "1 (ship it)"] {
        let refused = loopx.run(&["gate", "answer", "q1", words]);
        assert_eq!(
            refused.code, 2,
            "{words}: {}{}",
            refused.stdout, refused.stderr
        );
        assert!(
            refused.stderr.contains("is not an option of gate q1")
                && refused
                    .stderr
                    .contains("1 (ship it) | 2 (hold it) | 3 (drop it)"),
            "{words}: {}",
            refused.stderr
        );
        assert_eq!(
            answer_of(&loopx, "q1"),
            (String::new(), 0),
            "{words}: nothing recorded"
        );
    }
    // Guidance travels beside an option, never instead of one.
    loopx.ok(&[
        "gate",
        "answer",
        "q1",
        "2",
        "--note",
        "wait for the security review",
    ]);
    assert_eq!(
        answer_of(&loopx, "q1"),
        ("hold it: wait for the security review".to_owned(), 2)
    );
    // A question without options still takes words.
    loopx.ok(&[
        "gate",
        "ask",
        "Which region should the canary run in first?",
        "--global",
    ]);
    loopx.ok(&["gate", "answer", "q2", "eu-west-1"]);
    assert_eq!(answer_of(&loopx, "q2"), ("eu-west-1".to_owned(), 0));
}
