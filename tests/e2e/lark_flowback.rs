//! Changes people make in the Lark table, taken or refused by `loopx run` (issue 46, hole 6):
//! a change is credited to the person Lark's record-change event names for that very cell, never
//! to whoever touched the record last.

use loopx_lark_server::{Field, LarkServer, Presser};
use serde_json::{Value, json};

use crate::lark::{
    KEY, SECRET, TOKEN, eventually, free_port, record, run_listening_on, status_on_board, sync,
};
use crate::support::{Background, Loopx};

/// A goal with `titles` as todos, `loopx run` keeping the board with Ann the one answerer and
/// the listener on a free port, Lark sending it the table's record-change events, and a column
/// of the people's own (`Note`): the project, its run and the listener's URL, once every todo
/// has its record. The last todo is the run's agent's.
pub(crate) fn board_with_events(
    server: &LarkServer,
    titles: &[&str],
) -> (Loopx, Background, String) {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the retry client"]);
    for title in titles {
        loopx.ok(&["todo", "add", title]);
    }
    // An agent busy with a todo of its own keeps the run (and its listener) going; the others
    // stay open for people to change.
    crate::support::script_agent(
        &loopx,
        "exec",
        "cat > /dev/null\nsleep 170",
        "max_time = \"3m\"",
    );
    loopx.ok(&["todo", "add", "Keep the run busy", "--priority", "9"]);
    let port = free_port();
    let run = run_listening_on(&loopx, server, port, &["--for", "3m"]);
    let url = format!("http://127.0.0.1:{port}/lark/callback");
    server.send_events_to(&url, lark());
    eventually("every todo on the board", || {
        (1..=titles.len()).all(|i| status_on_board(server, &format!("t{i}")).is_some())
    });
    server
        .state()
        .tables
        .values_mut()
        .next()
        .expect("a table")
        .fields
        .push(Field {
            id: "fldNote".into(),
            name: "Note".into(),
            kind: 1,
            options: vec![],
        });
    (loopx, run, url)
}

pub(crate) fn lark() -> Presser {
    Presser {
        verification_token: TOKEN.into(),
        encrypt_key: KEY.into(),
    }
}

fn todo(loopx: &Loopx, id: &str) -> Value {
    loopx.ok(&["todo", "show", id, "--json"]).json()["todo"].clone()
}

/// The event log's refusals of changes made in Lark.
fn refusals(loopx: &Loopx) -> Vec<String> {
    loopx
        .ok(&["log", "-n", "200"])
        .stdout
        .lines()
        .filter(|l| l.contains("refused and put back"))
        .map(str::to_owned)
        .collect()
}

/// Waits until loopx has read the table `passes` more times (what it would take or refuse again
/// it would have by then): a pass reads every record first, and passes do not overlap, so the
/// pass before the last read seen has ended.
fn more_passes(server: &LarkServer, passes: usize) {
    let reads = || {
        server
            .requests()
            .iter()
            .filter(|(method, path)| method == "GET" && path.contains("/records"))
            .count()
    };
    let before = reads();
    eventually("more passes over the table", || reads() >= before + passes);
}

/// Stops the run (its agent's slice is cut short).
pub(crate) fn stop(run: Background) {
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = run.finish();
}

/// The attack of issue 46, hole 6: Eve (not an answerer) moves t1 to Dropped, then Ann (an
/// answerer) edits her own note in that record before loopx reads the table. Lark's
/// `last_modified_by` names Ann, and the drop was credited to her (`human:lark:ou_ann t1
/// dropped`). The event for the Status cell names Eve: the drop is refused and put back.
#[test]
fn a_drop_by_someone_not_allowed_is_not_credited_to_the_answerer_who_edited_the_record_after() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let (loopx, run, _) = board_with_events(&server, &["Add retry"]);
    server.edit_all(&[
        ("ou_eve", "t1", json!({"Status": "Dropped"})),
        ("ou_ann", "t1", json!({"Note": "I'll look at it on Monday"})),
    ]);
    eventually("the change taken or refused", || {
        todo(&loopx, "t1")["state"] != "open" || !refusals(&loopx).is_empty()
    });
    assert_eq!(
        todo(&loopx, "t1")["state"],
        "open",
        "{}",
        todo(&loopx, "t1")
    );
    let refused = refusals(&loopx);
    assert!(
        refused.iter().any(|l| l.contains("human:lark:ou_eve")
            && l.contains(r#"t1 Status set to "Dropped" by ou_eve"#)
            && l.contains("not one of the answerers")),
        "{refused:?}"
    );
    eventually("t1 put back on the board", || {
        status_on_board(&server, "t1").as_deref() == Some("Open")
    });
    // Ann's own column is hers: left as she wrote it.
    assert_eq!(record(&server, "t1")["Note"], "I'll look at it on Monday");
    let log = loopx.ok(&["log", "-n", "200"]).stdout;
    assert!(
        !log.lines()
            .any(|l| l.contains("human:lark:ou_ann") && l.contains("dropped")),
        "{log}"
    );
    stop(run);
}

#[test]
fn a_drop_a_priority_and_a_new_row_by_an_answerer_flow_back_and_anything_else_is_put_back() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let titles = ["Add retry", "Write the docs", "Old idea", "Rename me"];
    let (loopx, run, _) = board_with_events(&server, &titles);
    server.edit_all(&[
        ("ou_ann", "t3", json!({"Status": "Dropped"})),
        ("ou_ann", "t2", json!({"Priority": 7})),
        ("ou_eve", "t1", json!({"Status": "Dropped"})),
        (
            "ou_ann",
            "t4",
            json!({"Task": "Renamed in Lark", "Status": "Done"}),
        ),
    ]);
    let ann_row = server.add_as("ou_ann", json!({"Task": "Ship the changelog"}));
    let eve_row = server.add_as("ou_eve", json!({"Task": "Eve's idea"}));
    eventually("every change taken or refused", || {
        refusals(&loopx).len() >= 4
            && todo(&loopx, "t3")["state"] == "dropped"
            && todo(&loopx, "t2")["priority"] == 7
            && loopx.run(&["todo", "show", "t6"]).code == 0
    });
    // In the kernel, by Ann (t5 is the run's agent's).
    assert_eq!(todo(&loopx, "t6")["title"], "Ship the changelog");
    assert_eq!(todo(&loopx, "t6")["created_by"], "human:lark:ou_ann");
    assert_eq!(todo(&loopx, "t1")["state"], "open");
    assert_eq!(todo(&loopx, "t4")["title"], "Rename me");
    let log = loopx.ok(&["log", "-n", "200"]).stdout;
    assert!(
        log.lines()
            .any(|l| l.contains("human:lark:ou_ann") && l.contains("t3")),
        "{log}"
    );
    // Each refusal is in the event log, by whoever the event names.
    let recorded = refusals(&loopx);
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    assert!(
        recorded.iter().any(|l| l.contains("human:lark:ou_eve")
            && l.contains(r#"t1 Status set to "Dropped" by ou_eve in lark"#)
            && l.contains("not one of the answerers")),
        "{recorded:?}"
    );
    assert!(
        recorded
            .iter()
            .any(|l| l.contains("Eve's idea") && l.contains("human:lark:ou_eve")),
        "{recorded:?}"
    );
    for (what, why) in [
        ("t4 Task", "loopx's to fill"),
        ("t4 Status", "only a move to Dropped"),
    ] {
        assert!(
            recorded
                .iter()
                .any(|l| l.contains("human:lark:ou_ann") && l.contains(what) && l.contains(why)),
            "{what}: {recorded:?}"
        );
    }
    // On the table: Ann's row is t6's; Eve's is gone; the refused edits are put back.
    eventually("the table in step", || {
        let state = server.state();
        let table = state.table();
        table
            .records
            .get(&ann_row)
            .is_some_and(|r| r["Todo ID"] == "t6")
            && !table.records.contains_key(&eve_row)
            && table
                .records
                .values()
                .any(|r| r["Todo ID"] == "t4" && r["Task"] == "Rename me" && r["Status"] == "Open")
    });
    assert_eq!(status_on_board(&server, "t1").as_deref(), Some("Open"));
    assert_eq!(status_on_board(&server, "t3").as_deref(), Some("Dropped"));
    // Nothing is taken or refused twice: a few passes later the log says the same.
    more_passes(&server, 2);
    assert_eq!(refusals(&loopx).len(), 4, "recorded once");
    stop(run);
}

/// Without record-change events (no callback listener) no change can be attributed: the table is
/// only shown. An answerer's drop is put back, and a row without a Todo ID is left alone.
#[test]
fn without_record_change_events_a_change_in_the_table_is_put_back_not_credited() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the retry client"]);
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\n[lark.questions]\nchat_id = \"oc_team\"\nanswerers = [\"ou_ann\"]\n",
        server.url()
    ));
    loopx.ok(&["todo", "add", "Add retry"]);
    sync(&loopx);
    server.edit_as("ou_ann", "t1", json!({"Status": "Dropped"}));
    let note = server.add_as("ou_ann", json!({"Task": "A note of mine"}));
    let report = sync(&loopx);
    let refused = report["refused"].to_string();
    assert!(
        refused.contains("t1 Status") && refused.contains("no record-change event"),
        "{report}"
    );
    assert_eq!(report["taken"], json!([]), "{report}");
    assert_eq!(todo(&loopx, "t1")["state"], "open");
    assert_eq!(status_on_board(&server, "t1").as_deref(), Some("Open"));
    assert!(server.state().table().records.contains_key(&note));
    // The refusal names nobody it cannot be sure of: the board itself records it.
    let recorded = refusals(&loopx);
    assert!(
        recorded.len() == 1
            && recorded[0].contains("human:lark ")
            && !recorded[0].contains("human:lark:ou_ann"),
        "{recorded:?}"
    );
}

/// An outsider who reaches the listener, and Eve who may not change the board, try to have
/// Eve's change to a priority credited to Ann: an event signed with a guessed key, one of
/// another Base, one of another table, Ann's real event for another value, that event again,
/// and Eve's own event arriving after loopx wrote the cell over. None is believed: the change
/// waits for its event, is refused by nobody it cannot name, and stays put back.
#[test]
fn forged_foreign_replayed_mismatched_and_late_events_credit_no_one() {
    use loopx_lark_server::{RecordChange, Signing};
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let (loopx, run, url) = board_with_events(&server, &["Add retry"]);
    server.hold_events();
    let record = server.edit_as("ou_eve", "t1", json!({"Priority": 7}));
    let (table, priority) = {
        let state = server.state();
        let (id, table) = state.tables.iter().next().expect("a table");
        let field = table
            .fields
            .iter()
            .find(|f| f.name == "Priority")
            .expect("Priority");
        (id.clone(), field.id.clone())
    };
    let lark = lark();
    let event = |id: &str, base: &str, table: &str, value: i64| {
        let change = RecordChange {
            event_id: id.into(),
            at_ms: crate::lark::now_secs() * 1000,
            open_id: "ou_ann".into(),
            base: base.into(),
            table: table.into(),
            record: record.clone(),
            action: "record_edited".into(),
            before: vec![(priority.clone(), json!(0))],
            after: vec![(priority.clone(), json!(value))],
        };
        lark.seal(&lark.record_event(&change), [6; 16])
    };
    let now = crate::lark::now_secs();
    let send = |(id, base, table, value): (&str, &str, &str, i64), nonce: &str, signing| {
        lark.post(&url, &event(id, base, table, value), now, nonce, signing)
    };
    let forged = send(
        ("ev-forged", "bascnTest", &table, 7),
        "n-forged",
        Signing::Wrong,
    );
    assert_eq!(forged.0, 401, "{forged:?}");
    for event in [
        ("ev-base", "bascnOther", table.as_str(), 7),
        ("ev-table", "bascnTest", "tblOther", 7),
        ("ev-ann-5", "bascnTest", table.as_str(), 5),
    ] {
        assert_eq!(send(event, event.0, Signing::Good).0, 200, "{}", event.0);
    }
    let replayed = send(
        ("ev-ann-5", "bascnTest", &table, 5),
        "ev-ann-5",
        Signing::Good,
    );
    assert!(replayed.1.to_string().contains("replay"), "{replayed:?}");
    // No event names who set 7: left alone for a while, then refused, by nobody it can name.
    eventually("the priority refused", || {
        refusals(&loopx).iter().any(|l| l.contains("t1 Priority"))
    });
    let refused = refusals(&loopx);
    assert!(
        refused.len() == 1
            && refused[0].contains("human:lark ")
            && refused[0].contains("by someone no event names"),
        "{refused:?}"
    );
    assert_eq!(todo(&loopx, "t1")["priority"], 0);
    eventually("t1's priority put back", || {
        record_priority(&server) == Some(0)
    });
    // Eve's own event, late: older than loopx's write of the cell, it changes nothing.
    server.release_events();
    more_passes(&server, 2);
    assert_eq!(refusals(&loopx).len(), 1, "{:?}", refusals(&loopx));
    assert_eq!(todo(&loopx, "t1")["priority"], 0);
    assert_eq!(record_priority(&server), Some(0));
    stop(run);
}

fn record_priority(server: &LarkServer) -> Option<i64> {
    record(server, "t1").get("Priority").and_then(Value::as_i64)
}
