//! `loopx lark sync` against the scripted Lark Open API server (`crates/loopx-lark-server`).

use loopx_lark_server::{Failure, LarkServer};
use serde_json::Value;

use crate::support::Loopx;

const SECRET: &str = "s3cret-app";

/// A project with a goal and `[lark]` pointing at `server`, table `table` (or none).
fn project(server: &LarkServer, table: Option<&str>) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the retry client"]);
    let table = table.map_or(String::new(), |t| format!("table_id = \"{t}\"\n"));
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\n{table}",
        server.url()
    ));
    loopx
}

fn sync(loopx: &Loopx) -> Value {
    let run = loopx.run_env(
        &["--json", "lark", "sync"],
        &[("LOOPX_LARK_APP_SECRET", SECRET)],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    run.json()
}

/// The record of todo `id`: its fields.
fn record(server: &LarkServer, id: &str) -> serde_json::Map<String, Value> {
    let state = server.state();
    state
        .table()
        .records
        .values()
        .find(|f| f.get("Todo ID").and_then(Value::as_str) == Some(id))
        .cloned()
        .unwrap_or_else(|| panic!("no record of {id}"))
}

fn record_requests(server: &LarkServer, since: usize) -> usize {
    server.requests()[since..]
        .iter()
        .filter(|(_, path)| path.contains("/records"))
        .count()
}

#[test]
fn todos_become_records_that_follow_the_loop_and_a_table_in_step_costs_no_write() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = project(&server, None);
    loopx.ok(&["todo", "add", "Add retry", "--priority", "3"]);
    loopx.ok(&["todo", "add", "Write the docs"]);
    loopx.ok(&["agent", "add", "exec", "--profile", "executor"]);
    let first = sync(&loopx);
    assert_eq!(
        (
            &first["table_created"],
            &first["created"],
            &first["fields_created"].as_array().map(Vec::len)
        ),
        (&Value::Bool(true), &Value::from(2), &Some(10)),
        "{first}"
    );
    let t1 = record(&server, "t1");
    assert_eq!(t1["Task"], "Add retry");
    assert_eq!(t1["Status"], "Open");
    assert_eq!(t1["Priority"], 3);
    assert!(
        t1["Goal"]
            .as_str()
            .is_some_and(|g| g.contains("Ship the retry client")),
        "{t1:?}"
    );
    // The table is found by its name the next time, and one in step is only read.
    let before = server.requests().len();
    let again = sync(&loopx);
    assert_eq!(
        (
            &again["table_created"],
            &again["created"],
            &again["updated"],
            &again["deleted"]
        ),
        (
            &Value::Bool(false),
            &Value::from(0),
            &Value::from(0),
            &Value::from(0)
        ),
        "{again}"
    );
    assert!(
        server.requests()[before..].iter().all(|(method, path)| method == "GET" || path.ends_with("tenant_access_token/internal")),
        "{:?}",
        &server.requests()[before..]
    );
    // Claimed, then done with evidence: the record follows.
    loopx.ok(&["todo", "claim", "t1", "--agent", "exec"]);
    sync(&loopx);
    assert_eq!(record(&server, "t1")["Status"], "Claimed");
    assert_eq!(record(&server, "t1")["Agent"], "exec");
    loopx.ok(&[
        "evidence",
        "add",
        "12 passed",
        "--kind",
        "test",
        "--todo",
        "t1",
    ]);
    loopx.ok(&["todo", "done", "t1", "--agent", "exec", "--epoch", "1"]);
    let done = sync(&loopx);
    assert_eq!(done["updated"], 1, "{done}");
    let t1 = record(&server, "t1");
    assert_eq!(t1["Status"], "Done");
    assert_eq!(t1["Latest evidence"], "test: 12 passed");
    // A person's own row (no Todo ID) is left alone.
    {
        let mut state = server.state();
        let table = state.tables.values_mut().next().expect("a table");
        let mut own = serde_json::Map::new();
        own.insert("Task".into(), "An idea of mine".into());
        table.records.insert("recPerson".into(), own);
    }
    let after = sync(&loopx);
    assert_eq!(
        (&after["created"], &after["deleted"]),
        (&Value::from(0), &Value::from(0)),
        "{after}"
    );
    assert!(server.state().table().records.contains_key("recPerson"));
}

#[test]
fn a_burst_of_a_hundred_changes_is_a_few_record_requests() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let table = server.add_table("loopx");
    let loopx = project(&server, Some(&table));
    for i in 1..=100 {
        loopx.ok(&["todo", "add", &format!("Todo {i}")]);
    }
    let before = server.requests().len();
    let report = sync(&loopx);
    assert_eq!(report["created"], 100, "{report}");
    // One page read, one batch written.
    assert!(
        record_requests(&server, before) <= 5,
        "{:?}",
        &server.requests()[before..]
    );
    assert_eq!(server.state().table().records.len(), 100);
}

#[test]
fn throttling_is_waited_out_and_an_outage_changes_nothing() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let table = server.add_table("loopx");
    let loopx = project(&server, Some(&table));
    loopx.ok(&["todo", "add", "Add retry"]);
    server.fail_next(&[Failure::Throttled, Failure::Throttled]);
    let report = sync(&loopx);
    assert_eq!(report["created"], 1, "{report}");
    // Lark down: the command says so and fails; the next sync catches up.
    loopx.ok(&["todo", "add", "Write the docs"]);
    server.fail_next(&[Failure::Outage]);
    let run = loopx.run_env(&["lark", "sync"], &[("LOOPX_LARK_APP_SECRET", SECRET)]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("Lark"), "{}", run.stderr);
    let report = sync(&loopx);
    assert_eq!(report["created"], 1, "{report}");
    assert_eq!(server.state().table().records.len(), 2);
}

#[test]
fn a_wrong_secret_a_missing_one_and_one_in_the_file_are_refused_by_name() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = project(&server, None);
    let run = loopx.run(&["lark", "sync"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("LOOPX_LARK_APP_SECRET"),
        "{}",
        run.stderr
    );
    let run = loopx.run_env(&["lark", "sync"], &[("LOOPX_LARK_APP_SECRET", "wrong")]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("code 10014"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("wrong"),
        "the secret is not echoed: {}",
        run.stderr
    );
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\napp_secret = \"{SECRET}\"\n",
        server.url()
    ));
    let run = loopx.run(&["lark", "sync"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("is a secret"), "{}", run.stderr);
    assert!(
        !run.stderr.contains(SECRET),
        "the secret is not echoed: {}",
        run.stderr
    );
}
