//! The views with several active goals (`docs/goals.md`, "Several goals at once"): `status`
//! groups by goal and `status --goal` narrows to one, the board's columns hold every active
//! goal's todos, each card naming its goal, and the Lark table has a record per todo of each
//! goal, its Goal cell saying where that goal stands.

use serde_json::Value;

use crate::board::BoardProcess;
use crate::support::Loopx;

/// A project with two active goals, g2 served first (priority 1), and a todo each.
fn two_goals(loopx: &Loopx) {
    loopx.ok(&["goal", "start", "Edit the code"]);
    loopx.ok(&["goal", "start", "Edit the docs", "--priority", "1"]);
    loopx.ok(&["todo", "add", "Fix the parser", "--goal", "g1"]);
    loopx.ok(&["todo", "add", "Write the guide", "--goal", "g2"]);
}

/// A question that holds back g2 only.
fn ask_about_g2(loopx: &Loopx) {
    loopx.ok(&["gate", "ask", "Which tone for the guide?", "--goal", "g2"]);
}

fn next_titles(goal: &Value) -> Vec<&str> {
    (goal["next"].as_array().into_iter().flatten())
        .filter_map(|n| n["title"].as_str())
        .collect()
}

#[test]
fn status_shows_each_active_goal_with_its_todos_and_goal_narrows_to_one() {
    let loopx = Loopx::new();
    two_goals(&loopx);
    let shown = loopx.ok(&["status"]).stdout;
    assert!(shown.contains("Goals (2 active)"), "{shown}");
    let g2 = shown.find("g2    priority 1, share").expect("g2's line");
    let g1 = shown.find("g1    priority 0, share").expect("g1's line");
    assert!(g2 < g1, "the goal served first comes first: {shown}");
    // Next, grouped by goal: each goal's todo under its own heading.
    let next = &shown[shown.find("\nNext").expect("Next")..];
    let (docs, code) = (
        next.find("g2 Edit the docs").expect("g2's group"),
        next.find("g1 Edit the code").expect("g1's group"),
    );
    let (guide, parser) = (
        next.find("Write the guide").expect("g2's todo"),
        next.find("Fix the parser").expect("g1's todo"),
    );
    assert!(docs < guide && guide < code && code < parser, "{next}");

    let json = loopx.ok(&["status", "--json"]).json();
    assert_eq!(json["goal"]["id"], "g2", "`goal` stays the first goal");
    let goals = json["goals"].as_array().expect("goals");
    let ids: Vec<&str> = goals.iter().filter_map(|g| g["id"].as_str()).collect();
    assert_eq!(ids, ["g2", "g1"]);
    assert_eq!(goals[0]["priority"], 1);
    assert_eq!(next_titles(&goals[0]), ["Write the guide"]);
    assert_eq!(next_titles(&goals[1]), ["Fix the parser"]);

    // One goal: its todos, and only the questions that hold it back.
    ask_about_g2(&loopx);
    let g1 = loopx.ok(&["status", "--goal", "g1"]).stdout;
    assert!(g1.contains("Goal g1 (active): Edit the code"), "{g1}");
    assert!(
        g1.contains("Fix the parser") && !g1.contains("Write the guide"),
        "{g1}"
    );
    assert!(
        g1.contains("Needs you (0)"),
        "g2's question is not g1's: {g1}"
    );
    let g2 = loopx.ok(&["status", "--goal", "g2", "--json"]).json();
    assert_eq!(g2["goal"]["id"], "g2");
    assert_eq!(g2["goals"].as_array().map(Vec::len), Some(1));
    assert_eq!(g2["needs_you"].as_array().map(Vec::len), Some(1));
    // The question holds back g2's work: nothing of it is next, its todo waits on the gate.
    assert_eq!(next_titles(&g2["goals"][0]), Vec::<&str>::new());
    assert_eq!(g2["waiting"][0]["todo"], "t2");
    assert_eq!(g2["waiting"][0]["reason"], "blocked by gate q1");

    let unknown = loopx.run(&["status", "--goal", "g9"]);
    assert_ne!(unknown.code, 0);
    assert!(unknown.stderr.contains("g9"), "{}", unknown.stderr);
}

#[test]
fn one_goal_s_status_lists_no_goals_heading() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Edit the code"]);
    let shown = loopx.ok(&["status"]).stdout;
    assert!(
        shown.starts_with("Goal g1 (active): Edit the code"),
        "{shown}"
    );
    assert!(!shown.contains("Goals ("), "{shown}");
    let json = loopx.ok(&["status", "--json"]).json();
    assert_eq!(json["goals"][0]["id"], "g1");
}

#[test]
fn the_board_shows_the_todos_of_both_active_goals_each_naming_its_goal() {
    let loopx = Loopx::new();
    two_goals(&loopx);
    ask_about_g2(&loopx);
    let board = BoardProcess::start_with(&loopx, &["board", "--json"], &[]);
    let session = board.session();
    let (code, body) = board.request(
        &format!("GET /api/state HTTP/1.1\r\nX-Loopx-Session: {session}"),
        "",
    );
    assert_eq!(code, 200, "{body}");
    let state: Value = serde_json::from_str(&body).expect("JSON");
    let cards = |column: &str| -> Vec<(String, String)> {
        (state["columns"][column]["cards"]
            .as_array()
            .into_iter()
            .flatten())
        .map(|card| {
            let field = |k: &str| card[k].as_str().unwrap_or_default().to_owned();
            (field("goal"), field("title"))
        })
        .collect()
    };
    let pair = |goal: &str, title: &str| (goal.to_owned(), title.to_owned());
    assert_eq!(cards("open"), [pair("g1", "Fix the parser")]);
    // The question on g2 holds back g2's todo.
    assert_eq!(cards("blocked"), [pair("g2", "Write the guide")]);
    let goals = state["status"]["goals"].as_array().expect("the goals");
    assert_eq!(goals.len(), 2, "the header lists both goals");
    // A todo added from the page names its goal; without one, the board says which it needs.
    let add = |body: &str| {
        board.request(
            &format!(
                "POST /api/todo/add HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: application/json"
            ),
            body,
        )
    };
    let (code, body) = add(r#"{"title":"Proofread the guide","goal":"g2"}"#);
    assert_eq!(code, 200, "{body}");
    let todo: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(todo["todo"]["goal"], "g2", "{body}");
    let (code, body) = add(r#"{"title":"Which goal is this for?"}"#);
    assert_ne!(code, 200, "{body}");
    assert!(body.contains("several goals are active"), "{body}");
}

#[test]
fn the_lark_table_has_each_goal_s_todos_and_a_goal_s_question_is_on_its_own_goal() {
    use loopx_lark_server::LarkServer;
    let server = LarkServer::start("cli_test", crate::lark::SECRET, "bascnTest").expect("server");
    let loopx = crate::lark::project(&server, None);
    loopx.ok(&["goal", "start", "Edit the docs", "--priority", "1"]);
    loopx.ok(&["todo", "add", "Fix the parser", "--goal", "g1"]);
    loopx.ok(&["todo", "add", "Write the guide", "--goal", "g2"]);
    // About g1, the goal served second: not the one a gate that names none is about.
    loopx.ok(&[
        "gate",
        "ask",
        "Which parser library to keep?",
        "--goal",
        "g1",
    ]);
    crate::lark::sync(&loopx);
    let goal_cell = |todo: &str| {
        let record = crate::lark::record(&server, todo);
        record["Goal"].as_str().unwrap_or_default().to_owned()
    };
    let (g1, g2) = (goal_cell("t1"), goal_cell("t2"));
    assert_eq!(
        g1,
        "Ship the retry client (g1): active; a question waits for a person"
    );
    assert_eq!(g2, "Edit the docs (g2): active");
    let status = |todo: &str| crate::lark::status_on_board(&server, todo);
    assert_eq!(status("t1").as_deref(), Some("Blocked by a question"));
    assert_eq!(status("t2").as_deref(), Some("Open"));
}

#[test]
fn log_goal_shows_only_the_events_about_that_goal() {
    let loopx = Loopx::new();
    two_goals(&loopx);
    ask_about_g2(&loopx);
    loopx.ok(&["todo", "drop", "t1"]);
    let g1 = loopx.ok(&["log", "--goal", "g1"]).stdout;
    for want in ["goal g1 started", "t1 added", "t1 dropped"] {
        assert!(g1.contains(want), "{want:?} in {g1}");
    }
    for unwanted in ["goal g2", "t2 added", "gate q1", "project created"] {
        assert!(!g1.contains(unwanted), "{unwanted:?} in {g1}");
    }
    let g2 = loopx.ok(&["log", "--goal", "g2", "-n", "2"]).stdout;
    let lines: Vec<&str> = g2.lines().collect();
    assert_eq!(lines.len(), 2, "the newest 2 of g2's: {g2}");
    assert!(lines[0].contains("t2 added"), "{g2}");
    assert!(lines[1].contains("gate q1 opened"), "{g2}");
    let unknown = loopx.run(&["log", "--goal", "g9"]);
    assert_ne!(unknown.code, 0);
    assert!(unknown.stderr.contains("g9"), "{}", unknown.stderr);
}
