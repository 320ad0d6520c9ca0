//! `loopx goal history` (docs/history.md): a goal run through `loopx run` by two agents, with a
//! proposed todo, a dropped one, a question answered and a `--next` successor, accounts for
//! every slice and every token, draws every todo with its parent, marks a todo done on
//! evidence gone stale (and its successor), and its lineage is a graph Graphviz reads; and
//! issue 50's acceptance run: two demo agents, an amendment, a monitor, a question and a drop
//! in one `loopx run`, accounted for to the second.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{LOOPX, Loopx, cli_stand_in};

/// A Claude Code stand-in that works by its todo: on t1 it proposes a follow-up (for the
/// asker), on t2 it asks
/// a question first and finishes once answered, on anything else it finishes. Each slice
/// spends 1,500 tokens.
fn writer(loopx: &Loopx, name: &str) {
    let script = format!(
        r#"case "$LOOPX_TODO" in
  t1) '{LOOPX}' report todo 'Follow up on a' --role asker > /dev/null; '{LOOPX}' report done --summary wrote-a > /dev/null ;;
  t2) if [ -f "$LOOPX_PROJECT/asked" ]; then '{LOOPX}' report done --summary wrote-b > /dev/null;
      else touch "$LOOPX_PROJECT/asked"; '{LOOPX}' report ask 'Markdown or plain text for b?' > /dev/null; fi ;;
  *) '{LOOPX}' report done --summary did-it > /dev/null ;;
esac
echo '{{"type":"system","subtype":"init","session_id":"3f1e","model":"claude-sonnet-4-5","tools":[]}}'
echo '{{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"3f1e","usage":{{"input_tokens":1000,"output_tokens":500}}}}'"#
    );
    cli_stand_in(
        loopx,
        name,
        "claude-code",
        &script,
        "[limits]\nmax_time = \"2m\"\nidle_timeout = \"1m\"",
    );
}

/// The slices of g1 and their tokens, as the store records them.
fn store_slices(loopx: &Loopx) -> BTreeMap<String, u64> {
    let project = loopx_kernel::Project::at(loopx.path()).expect("project");
    let store = loopx_kernel::Store::open_read(&project).expect("store");
    let slices = store.read(|s| s.slices()).expect("read");
    slices
        .into_iter()
        .filter(|s| s.goal == Some(loopx_kernel::GoalId(1)))
        .map(|s| (s.id.to_string(), s.tokens))
        .collect()
}

fn lane_slices(history: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for lane in history["lanes"].as_array().expect("lanes") {
        for slice in lane["slices"].as_array().expect("slices") {
            let id = slice["id"].as_str().expect("id").to_owned();
            out.insert(id, slice["tokens"].as_u64().expect("tokens"));
        }
    }
    out
}

/// The lineage's todos, each checked to have a parent that is a node of the graph.
fn todos_with_their_parents_drawn(history: &Value) -> &Vec<Value> {
    let nodes: BTreeSet<&str> = history["lineage"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("id"))
        .collect();
    let todos = history["lineage"]["todos"].as_array().expect("todos");
    for todo in todos {
        let parent = todo["parent"].as_str().expect("a parent");
        assert!(nodes.contains(parent), "{todo:#}");
    }
    todos
}

fn todo_line<'a>(history: &'a Value, id: &str) -> &'a Value {
    history["lineage"]["todos"]
        .as_array()
        .expect("todos")
        .iter()
        .find(|t| t["todo"] == id)
        .unwrap_or_else(|| panic!("{id} in the lineage: {history:#}"))
}

/// Graphviz's `dot` reads `text` and draws it (CI installs it: scripts/install-test-tools.sh).
fn dot_draws(text: &str) {
    let mut dot = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("Graphviz's `dot` (scripts/install-test-tools.sh installs it)");
    dot.stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = dot.wait_with_output().expect("dot");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "dot refused it: {stderr}\n{text}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("<svg"),
        "{stderr}"
    );
}

/// g1 run by ann and bob: t1 done by ann (proposing t5), t2 asked about by bob (q1 answered),
/// t3 titled `dropped` and dropped, t4 a person's, done on a test result gone stale, with its
/// `--next` successor t6.
pub(crate) fn two_agents_one_goal(loopx: &Loopx, dropped: &str) {
    loopx.ok(&["goal", "start", "Write the notes"]);
    // Roles keep each agent to its own first todo, whatever the machine's load: ann writes
    // t1, bob asks about t2 (and takes the follow-up ann proposes).
    loopx.ok(&["todo", "add", "Write a", "--role", "writer"]);
    loopx.ok(&["todo", "add", "Write b", "--role", "asker"]);
    loopx.ok(&["todo", "add", dropped]);
    loopx.ok(&["todo", "drop", "t3"]);
    // A person's todo no agent takes yet: it gets evidence and a `--next` successor.
    loopx.ok(&["todo", "add", "Review a", "--not-before", "3h"]);
    writer(loopx, "ann");
    writer(loopx, "bob");
    loopx.ok(&["agent", "set", "ann", "--role", "writer"]);
    loopx.ok(&["agent", "set", "bob", "--role", "asker"]);
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    loopx.ok(&["gate", "answer", "q1", "markdown"]);
    // t4 is done on a test result pinned to a file that changes afterwards.
    std::fs::write(loopx.path().join("notes.txt"), "a\n").expect("write");
    loopx.ok(&[
        "evidence",
        "add",
        "notes read back",
        "--kind",
        "test",
        "--todo",
        "t4",
        "--file",
        "notes.txt",
    ]);
    loopx.ok(&["todo", "done", "t4", "--next", "Publish a"]);
    std::fs::write(loopx.path().join("notes.txt"), "a, changed\n").expect("write");
}

#[test]
fn a_goals_history_accounts_for_every_slice_and_token_and_draws_every_todo_with_its_parent() {
    let loopx = Loopx::new();
    two_agents_one_goal(&loopx, "Write c");
    // t5 and t6 (t2 rests a while after a slice that did not finish it).
    let run = loopx.run(&["run", "--max-slices", "2"]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let history = loopx.ok(&["goal", "history", "--json"]).json();
    assert_eq!(history["format_version"], 1, "{history:#}");
    // Every slice of the goal and every token, in the lanes: two agents, one lane each.
    let store = store_slices(&loopx);
    let lanes = lane_slices(&history);
    assert_eq!(lanes, store, "{history:#}");
    let tokens: u64 = store.values().sum();
    assert!(tokens >= 3 * 1500, "{store:?}");
    assert_eq!(history["cost"]["total"]["tokens"], tokens, "{history:#}");
    let by_agent: u64 = history["cost"]["by_agent"]
        .as_object()
        .expect("by agent")
        .values()
        .map(|s| s["tokens"].as_u64().expect("tokens"))
        .sum();
    assert_eq!(by_agent, tokens);
    let agents: Vec<&str> = history["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .map(|l| l["agent"].as_str().expect("agent"))
        .collect();
    assert_eq!(agents, ["ann", "bob"], "{history:#}");
    // The question, from asked to answered, and by whom.
    let q1 = &history["questions"][0];
    assert_eq!(q1["gate"], "q1", "{history:#}");
    assert_eq!(q1["asked_by"], "agent:bob", "{q1:#}");
    assert!(
        q1["answered_by"]
            .as_str()
            .expect("answered")
            .starts_with("human:"),
        "{q1:#}"
    );
    assert!(q1["wait_ms"].is_u64(), "{q1:#}");
    // Every todo, with its parent: made by a person under r1, proposed by t1's slice, the
    // dropped one as a dead end, t4's successor.
    let todos = todos_with_their_parents_drawn(&history);
    assert_eq!(todos.len(), 6, "{history:#}");
    assert_eq!(todo_line(&history, "t1")["parent"], "r1");
    assert_eq!(todo_line(&history, "t3")["dead_end"], true);
    let proposed = todo_line(&history, "t5");
    assert_eq!(proposed["made"], "proposed", "{proposed:#}");
    let t1_slice = history["lanes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|l| l["slices"].as_array().into_iter().flatten())
        .find(|s| s["todo"] == "t1")
        .expect("t1's slice");
    assert_eq!(proposed["parent"], t1_slice["id"], "{history:#}");
    let next = todo_line(&history, "t6");
    assert_eq!(
        (&next["made"], &next["parent"]),
        (&Value::from("next"), &Value::from("t4"))
    );
    // Voiding spreads: t4 rests on its stale test result, and t6 after it.
    let t4 = todo_line(&history, "t4");
    assert_eq!(t4["rests_on_stale"], true, "{t4:#}");
    assert!(
        t4["stale_because"]
            .as_str()
            .expect("why")
            .contains("notes.txt"),
        "{t4:#}"
    );
    assert_eq!(next["rests_on_stale"], true, "{next:#}");
    assert_eq!(todo_line(&history, "t1")["rests_on_stale"], false);

    // The terminal view fits 100 columns; the graph is one Graphviz and Mermaid read.
    let text = loopx.ok(&["goal", "history"]).stdout;
    assert!(text.contains("Lineage: 6 todos"), "{text}");
    assert!(text.contains("t4 rests on stale evidence"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    let dot = loopx
        .ok(&["goal", "history", "g1", "--graph", "dot"])
        .stdout;
    assert!(dot.contains("\"t4\" -> \"t6\" [label=\"next\"]"), "{dot}");
    dot_draws(&dot);
    let mermaid = loopx.ok(&["goal", "history", "--graph", "mermaid"]).stdout;
    assert!(mermaid.starts_with("flowchart LR\n"), "{mermaid}");
    assert!(
        mermaid.contains("t3[\"t3: Write c (dropped)\"]:::dead"),
        "{mermaid}"
    );
}

#[test]
fn goal_history_refuses_a_bad_since_and_an_unknown_goal_and_asks_which_of_two_goals() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the notes"]);
    let bad = loopx.run(&["goal", "history", "--since", "yesterday"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("invalid time `yesterday` for --since"),
        "{}",
        bad.stderr
    );
    let unknown = loopx.run(&["goal", "history", "g9"]);
    assert_ne!(unknown.code, 0);
    assert!(unknown.stderr.contains("g9"), "{}", unknown.stderr);
    // With two goals active it asks which; a finished goal's history needs no id.
    loopx.ok(&["goal", "start", "Check the notes"]);
    let which = loopx.run(&["goal", "history"]);
    assert!(
        which.stderr.contains("several goals are active (g1, g2)"),
        "{}",
        which.stderr
    );
    loopx.ok(&["goal", "done", "g2"]);
    loopx.ok(&["goal", "done", "g1"]);
    let newest = loopx.ok(&["goal", "history", "--json"]).json();
    assert_eq!(newest["goal"], "g2", "{newest:#}");
    // An hour back counts only what happened since: nothing ran yet.
    let since = loopx
        .ok(&["goal", "history", "--since", "1h", "--json"])
        .json();
    assert!(since["since"].is_string(), "{since:#}");
    assert_eq!(since["lanes"], Value::Array(vec![]), "{since:#}");
}

/// Issue 50's acceptance, in one `loopx run` of two demo agents: a question a person answers
/// during the run, a monitor polled until met (then the todo after it), an amendment (and the
/// re-planning it calls for), and a todo a person drops. `goal history --json` accounts for
/// every slice and every token, for every second of each agent's time (its slices and what it
/// waited on between them add up to the time from its first record to the run's end, within
/// a second), and its lineage has every todo with its parent.
#[test]
fn one_run_with_a_question_a_monitor_an_amendment_and_a_drop_is_accounted_for_to_the_second() {
    let loopx = crate::support::demo_project(&["exec", "rev"]);
    loopx.ok(&[
        "todo",
        "add",
        "Choose the format [demo:ask]",
        "--priority",
        "5",
    ]);
    let check = "if test -e job.done; then echo finished; else echo running; exit 1; fi";
    loopx.ok(&[
        "todo",
        "add",
        "Wait for the job",
        "--check",
        check,
        "--every",
        "10s",
    ]);
    loopx.ok(&["todo", "add", "Read the job's result", "--after", "t2"]);
    loopx.ok(&["todo", "add", "Write the intro [demo:file=demo/intro.md]"]);
    loopx.ok(&["todo", "add", "Write an appendix", "--not-before", "1h"]);
    // Long enough for the monitor's second poll (its cadence is 10 s, the shortest there is)
    // and the work it releases.
    let mut run = crate::support::Background::start(&loopx, &["--for", "16s"]);
    run.wait_for("the question", |e| e["event"] == "question");
    loopx.ok(&["gate", "answer", "q1", "1"]);
    run.saw_or_wait_for("the monitor's first poll", |e| e["event"] == "polled");
    std::fs::write(loopx.path().join("job.done"), "").expect("the job ends");
    loopx.ok(&["todo", "drop", "t5"]);
    run.saw_or_wait_for("a slice's end", |e| e["event"] == "slice_ended");
    loopx.ok(&[
        "goal",
        "amend",
        "--objective",
        "Write the demo notes, in English",
        "--why",
        "the readers asked",
    ]);
    run.saw_or_wait_for("the monitor met", |e| {
        e["event"] == "polled" && e["result"] == "met"
    });
    let (code, events) = run.finish();
    assert_eq!(code, 0, "{events:#?}");

    let history = loopx.ok(&["goal", "history", "--json"]).json();
    // Every slice of the goal and every token, in the lanes: two agents, one lane each.
    let store = store_slices(&loopx);
    assert_eq!(lane_slices(&history), store, "{history:#}");
    let tokens: u64 = store.values().sum();
    assert_eq!(history["cost"]["total"]["tokens"], tokens, "{history:#}");
    // The question, answered by a person during the run; the monitor, met; the amendment.
    let q1 = &history["questions"][0];
    assert_eq!(
        (&q1["gate"], &q1["state"]),
        (&"q1".into(), &"answered".into()),
        "{q1:#}"
    );
    assert!(
        q1["answered_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("human:"))
    );
    let monitor = &history["monitors"][0];
    assert_eq!(monitor["todo"], "t2", "{history:#}");
    assert!(
        monitor["polls"].as_u64().is_some_and(|n| n >= 2),
        "{monitor:#}"
    );
    assert!(monitor["met_at"].is_string(), "{monitor:#}");
    assert_eq!(history["amendments"][0]["revision"], 2, "{history:#}");
    every_second_of_each_agent(&loopx, &history);
    // Every todo of the goal, each with its parent drawn; the dropped one a dead end, the
    // todo after the monitor drawn from it.
    let project = loopx_kernel::Project::at(loopx.path()).expect("project");
    let store = loopx_kernel::Store::open_read(&project).expect("store");
    let stored =
        (store.read(|s| s.todos_where(|t| t.goal == loopx_kernel::GoalId(1)))).expect("read");
    let todos = todos_with_their_parents_drawn(&history);
    let drawn: Vec<&str> = todos
        .iter()
        .map(|t| t["todo"].as_str().unwrap_or(""))
        .collect();
    let stored: Vec<String> = stored.iter().map(|t| t.id.to_string()).collect();
    assert_eq!(drawn, stored, "{history:#}");
    assert_eq!(todo_line(&history, "t5")["dead_end"], true);
    let then = history["lineage"]["edges"].as_array().expect("edges");
    assert!(
        then.iter()
            .any(|e| e["from"] == "t2" && e["to"] == "t3" && e["kind"] == "then"),
        "{history:#}"
    );
}

/// Each agent's slices and waits add up, within a second, to the time from its first record
/// under the run (a state or a slice) to the run's end; the waits include one on the question
/// or on nothing to take.
fn every_second_of_each_agent(loopx: &Loopx, history: &Value) {
    let log = loopx.ok(&["log", "--json", "-n", "10000"]).stdout;
    let events: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let at = |e: &Value| {
        loopx_kernel::Timestamp::parse_rfc3339(e["at"].as_str().unwrap_or_default())
            .map(|t| t.0)
            .unwrap_or_default()
    };
    let mut waited_on = BTreeSet::new();
    let lanes = history["lanes"].as_array().cloned().expect("lanes");
    assert_eq!(lanes.len(), 2, "{history}");
    for lane in lanes {
        let agent = lane["agent"].as_str().unwrap_or_default().to_owned();
        let marks: Vec<&Value> = events
            .iter()
            .filter(|e| {
                (e["kind"] == "agent_waits" || e["kind"] == "slice_started")
                    && e["data"]["agent"] == agent.as_str()
            })
            .collect();
        let first = marks.first().map(|e| at(e)).unwrap_or_default();
        let stopped = marks
            .iter()
            .rev()
            .find(|e| e["data"]["on"] == "stopped")
            .map(|e| at(e))
            .expect("the run's end is recorded");
        let working = lane["working_ms"].as_u64().unwrap_or_default();
        let waiting: u64 = lane["waiting_ms"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(on, ms)| {
                waited_on.insert(on.clone());
                ms.as_u64().unwrap_or_default()
            })
            .sum();
        let length = stopped - first;
        assert!(length >= 10_000, "{agent} ran {length} ms: {lane}");
        assert!(working > 0, "{agent} worked: {lane}");
        assert!(
            (working + waiting).abs_diff(length) <= 1000,
            "{agent}: {working} ms working + {waiting} ms waiting, of {length} ms: {lane}"
        );
    }
    assert!(
        waited_on.contains("nothing") || waited_on.contains("question"),
        "{waited_on:?}"
    );
}
