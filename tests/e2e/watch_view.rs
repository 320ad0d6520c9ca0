//! `loopx watch` (issue 51) in a real terminal: tmux, typed into and read back while
//! `loopx run` runs two agents.

use crate::browser::output_dir;
use crate::support::{Background, Loopx, Terminal, script_agent};

/// An agent that prints a numbered line of its own every 0.2 s until the test's stop file
/// appears (two minutes at most), then reports done.
fn printing_agent(loopx: &Loopx, name: &str) {
    let stop = loopx.path().join("stop");
    let script = format!(
        "cat >/dev/null\ni=0\nwhile [ ! -e '{}' ] && [ $i -lt 600 ]; do echo \"{name} at work $i\"; i=$((i+1)); sleep 0.2; done\nprintf '%s\\n' '```loopx-report' '{{\"status\":\"done\",\"summary\":\"printed\"}}' '```'",
        stop.display()
    );
    script_agent(loopx, name, &script, "max_time = \"5m\"");
}

fn watch_in_tmux(loopx: &Loopx, cols: u16, rows: u16, args: &str) -> Terminal {
    let command = format!(
        "cd '{}' && env -u LOOPX_SLICE USER=tester XDG_STATE_HOME='{}' '{}' watch {args}; echo \"watch exited $?\"; sleep 60",
        loopx.path().display(),
        loopx.state.path().display(),
        crate::support::LOOPX,
    );
    Terminal::start(&command, cols, rows)
}

#[test]
fn watch_shows_both_agents_answers_a_question_with_keys_zooms_pauses_resizes_and_quits() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Watch two agents"]);
    printing_agent(&loopx, "alpha");
    printing_agent(&loopx, "bravo");
    loopx.ok(&["todo", "add", "Alpha's part"]);
    loopx.ok(&["todo", "add", "Bravo's part"]);
    let mut run = Background::start(&loopx, &["--max-slices", "2"]);
    for _ in 0..2 {
        run.wait_for("a slice's start", |e| e["event"] == "slice_started");
    }

    let terminal = watch_in_tmux(&loopx, 160, 48, "");
    terminal.wait_for("both agents' output in their panes", |s| {
        s.contains("alpha at work") && s.contains("bravo at work")
    });
    // The panes follow the output as it arrives: a later line replaces the first seen.
    let later = |s: &str, agent: &str| {
        s.lines()
            .filter_map(|l| l.split(&format!("{agent} at work ")).nth(1))
            .filter_map(|n| n.split_whitespace().next()?.parse::<u32>().ok())
            .max()
    };
    let first = terminal.screen();
    let (a0, b0) = (later(&first, "alpha"), later(&first, "bravo"));
    terminal.wait_for("newer lines of both", |s| {
        later(s, "alpha") > a0 && later(s, "bravo") > b0
    });

    loopx.ok(&[
        "gate",
        "ask",
        "Should t1 ship the watch view this week (yes) or after the release (not yet)?",
        "--option",
        "yes",
        "--option",
        "not yet",
        "--agent",
        "alpha",
    ]);
    let asked = terminal.wait_for("the question in the strip", |s| {
        s.contains("q1 Should t1 ship the watch view") && s.contains("[2] not yet")
    });
    std::fs::write(output_dir("watch").join("watch.txt"), &asked).expect("keep the screen");

    terminal.keys(&["a"]);
    terminal.wait_for("the answer's options", |s| s.contains("Answering q1"));
    terminal.keys(&["2", "n"]);
    terminal.keys(&["-l", "after the release"]);
    terminal.keys(&["Enter"]);
    terminal.wait_for("the answer said", |s| {
        s.contains("Answered q1 as human:tester")
    });
    let gates = loopx.ok(&["gate", "list", "--all", "--json"]).json();
    let answer = &gates["gates"][0]["answer"];
    assert_eq!(answer["option"], 2, "{gates:#}");
    assert_eq!(
        answer["by"], "human:tester",
        "the person answered: {gates:#}"
    );
    assert!(
        answer["text"]
            .as_str()
            .is_some_and(|t| t.contains("after the release")),
        "the note came with it: {gates:#}"
    );

    // Zoom: the selected pane (alpha's, the first) takes the screen; again, back.
    terminal.keys(&["z"]);
    let zoomed = terminal.wait_for("alpha's pane alone", |s| {
        s.contains("alpha at work") && !s.contains("bravo at work")
    });
    assert!(!zoomed.contains("Questions"), "{zoomed}");
    terminal.keys(&["z"]);
    terminal.wait_for("both panes again", |s| {
        s.contains("alpha at work") && s.contains("bravo at work")
    });

    // Pause the second pane's agent: the hold is the person's, as `quota pause` makes it.
    terminal.keys(&["Tab", "p"]);
    terminal.wait_for("the pause said", |s| s.contains("Paused bravo"));
    let quota = loopx.ok(&["quota", "status", "--json"]).json();
    let holds = quota["holds"].as_array().expect("holds");
    assert!(
        holds
            .iter()
            .any(|h| h["key"] == "agent:bravo" && h["set_by"] == "human:tester"),
        "{quota:#}"
    );
    terminal.keys(&["r"]);
    terminal.wait_for("the resume said", |s| s.contains("Resumed agent:bravo"));

    // A message to the same pane's agent, written with keys: the person's, waiting for it.
    terminal.keys(&["m"]);
    terminal.wait_for("the message line", |s| s.contains("Message to bravo:"));
    terminal.keys(&["-l", "look at t7 first"]);
    terminal.keys(&["Enter"]);
    terminal.wait_for("the message said", |s| s.contains("to bravo: it heads"));
    let sent = loopx
        .ok(&["log", "--json", "--kind", "message_sent"])
        .stdout;
    assert!(
        sent.contains("\"actor\":\"human:tester\"") && sent.contains("look at t7 first"),
        "{sent}"
    );

    // A smaller window is drawn anew to its size.
    let resized = terminal
        .tmux(&["resize-window", "-x", "100", "-y", "30"])
        .expect("tmux");
    assert!(resized.status.success(), "{resized:?}");
    let small = terminal.wait_for("the view drawn at 100 columns", |s| {
        s.lines().count() <= 30
            && s.lines()
                .any(|l| l.chars().count() == 100 && l.ends_with('┐'))
            && s.contains("alpha at work")
            && s.contains("quit")
    });
    assert!(small.lines().all(|l| l.chars().count() <= 100), "{small}");

    terminal.keys(&["q"]);
    terminal.wait_for("watch to exit", |s| s.contains("watch exited 0"));

    std::fs::write(loopx.path().join("stop"), "").expect("stop file");
    let (code, _) = run.finish();
    assert_eq!(code, 0);
}

#[test]
fn watch_needs_a_terminal_and_is_refused_inside_a_slice() {
    let loopx = Loopx::new();
    let piped = loopx.run(&["watch"]);
    assert_eq!(piped.code, 2, "{piped:?}");
    assert!(piped.stderr.contains("needs a terminal"), "{piped:?}");
    let inside = loopx.run_env(&["watch"], &[("LOOPX_SLICE", "s1")]);
    assert_eq!(inside.code, 6, "{inside:?}");
    assert!(inside.stderr.contains("person's command"), "{inside:?}");
}

#[test]
fn an_ended_slice_keeps_its_screen_until_the_agents_next_slice_in_a_new_run_and_a_lost_store_is_survived()
 {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Watch across runs"]);
    printing_agent(&loopx, "alpha");
    loopx.ok(&["todo", "add", "First part"]);
    let mut run = Background::start(&loopx, &["--max-slices", "1"]);
    run.wait_for("the slice's start", |e| e["event"] == "slice_started");
    let terminal = watch_in_tmux(&loopx, 120, 40, "--goal g1");
    terminal.wait_for("alpha's output", |s| s.contains("alpha at work"));

    // The slice ends and `loopx run` with it: the pane keeps its last screen.
    let stop = loopx.path().join("stop");
    std::fs::write(&stop, "").expect("stop file");
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    terminal.wait_for("the ended slice's last screen", |s| {
        s.contains("alpha · s1") && s.contains("ended: completed") && s.contains("alpha at work")
    });
    terminal.keys(&["t"]);
    terminal.wait_for("its transcript", |s| {
        s.contains("transcript of s1") && s.contains("alpha at work 0")
    });
    terminal.keys(&["Escape"]);
    terminal.wait_for("the panes again", |s| s.contains("ended: completed"));

    // A store that cannot be read for a moment is said, and read again once it can. (On
    // PostgreSQL there is no store file to take away.)
    if crate::support::test_database().is_none() {
        let store = loopx.store_path();
        let away = store.with_extension("away");
        std::fs::rename(&store, &away).expect("store moved away");
        terminal.wait_for("the store's trouble said", |s| {
            s.contains("the store could not be read")
        });
        std::fs::rename(&away, &store).expect("store back");
        terminal.wait_for("the store read again", |s| {
            s.contains("the store is read again")
        });
    }

    // A new `loopx run`: the agent's next slice takes the pane's place, followed live.
    std::fs::remove_file(&stop).expect("stop file removed");
    loopx.ok(&["todo", "add", "Second part"]);
    let mut again = Background::start(&loopx, &["--max-slices", "1"]);
    again.wait_for("the next slice's start", |e| e["event"] == "slice_started");
    terminal.wait_for("the next slice in the pane", |s| {
        s.contains("alpha · s2") && !s.contains("alpha · s1") && s.contains("alpha at work")
    });
    std::fs::write(&stop, "").expect("stop file");
    let (code, _) = again.finish();
    assert_eq!(code, 0);
    terminal.keys(&["q"]);
    terminal.wait_for("watch to exit", |s| s.contains("watch exited 0"));
}

#[test]
fn watch_goal_shows_only_that_goals_slices_and_questions() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "First goal of two"]);
    loopx.ok(&["goal", "start", "Second goal of two", "--priority", "1"]);
    printing_agent(&loopx, "alpha");
    printing_agent(&loopx, "bravo");
    loopx.ok(&["todo", "add", "For the first", "--goal", "g1"]);
    loopx.ok(&["todo", "add", "For the second", "--goal", "g2"]);
    let mut run = Background::start(&loopx, &["--max-slices", "2"]);
    for _ in 0..2 {
        run.wait_for("a slice's start", |e| e["event"] == "slice_started");
    }
    loopx.ok(&[
        "gate",
        "ask",
        "Should the first goal's work stop for a review (yes) or go on (no)?",
        "--option",
        "yes",
        "--option",
        "no",
        "--goal",
        "g1",
    ]);
    let terminal = watch_in_tmux(&loopx, 160, 40, "--goal g2");
    let shown = terminal.wait_for("the second goal's slice", |s| {
        s.contains("t2 For the second") && s.contains("at work")
    });
    assert!(shown.contains("goal g2"), "{shown}");
    assert!(!shown.contains("t1 For the first"), "{shown}");
    assert!(!shown.contains("first goal's work"), "{shown}");
    assert!(shown.contains("1 running"), "{shown}");
    terminal.keys(&["q"]);
    terminal.wait_for("watch to exit", |s| s.contains("watch exited 0"));
    std::fs::write(loopx.path().join("stop"), "").expect("stop file");
    let (code, _) = run.finish();
    assert_eq!(code, 0);
}

#[test]
fn watch_opened_after_a_run_shows_each_demo_agents_last_slice_as_its_transcript() {
    let loopx = crate::support::demo_project(&["a", "b"]);
    // One slice each, in turn: with both in one run, which agent takes the second slice is a
    // race the test does not need.
    for agent in ["a", "b"] {
        let run = loopx.run(&["run", "--once", "--agent", agent]);
        assert_eq!(run.code, 0, "{agent}: {}", run.stderr);
    }
    let terminal = watch_in_tmux(&loopx, 160, 40, "");
    let shown = terminal.wait_for("both agents' last slices", |s| {
        s.contains(" a · s") && s.contains(" b · s") && s.matches("ended: ").count() == 2
    });
    // The demo agent prints Claude Code's stream-json: the pane reads as its transcript, with
    // the tokens it reported; never the raw events.
    assert!(shown.contains("● session"), "{shown}");
    assert!(shown.contains("tokens"), "{shown}");
    assert!(!shown.contains("\"type\":"), "{shown}");
    terminal.keys(&["q"]);
    terminal.wait_for("watch to exit", |s| s.contains("watch exited 0"));
}
