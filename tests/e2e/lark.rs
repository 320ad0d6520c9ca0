//! `loopx lark sync` against the scripted Lark Open API server (`crates/loopx-lark-server`).

use loopx_lark_server::{Failure, LarkServer};
use serde_json::Value;

use crate::support::Loopx;

pub(crate) const SECRET: &str = "s3cret-app";

/// A project with a goal and `[lark]` pointing at `server`, table `table` (or none).
pub(crate) fn project(server: &LarkServer, table: Option<&str>) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the retry client"]);
    let table = table.map_or(String::new(), |t| format!("table_id = \"{t}\"\n"));
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\n{table}",
        server.url()
    ));
    loopx
}

pub(crate) fn sync(loopx: &Loopx) -> Value {
    let run = loopx.run_env(
        &["--json", "lark", "sync"],
        &[("LOOPX_LARK_APP_SECRET", SECRET)],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    run.json()
}

/// The record of todo `id`: its fields.
pub(crate) fn record(server: &LarkServer, id: &str) -> serde_json::Map<String, Value> {
    let state = server.state();
    state
        .table()
        .records
        .values()
        .find(|f| f.get("Todo ID").and_then(Value::as_str) == Some(id))
        .cloned()
        .unwrap_or_else(|| panic!("no record of {id}"))
}

/// The Status a todo's record shows, if the table has one for it.
pub(crate) fn status_on_board(server: &LarkServer, id: &str) -> Option<String> {
    let state = server.state();
    let table = state.tables.values().next()?;
    let record = table
        .records
        .values()
        .find(|f| f.get("Todo ID").and_then(Value::as_str) == Some(id))?;
    record
        .get("Status")
        .and_then(Value::as_str)
        .map(str::to_owned)
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
    assert_eq!(
        server.state().table().views,
        [("Kanban".to_owned(), "kanban".to_owned())]
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
fn a_todo_shows_running_on_the_board_while_its_slice_runs() {
    use crate::support::Background;
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let table = server.add_table("loopx");
    let loopx = project(&server, Some(&table));
    let script = "cat >/dev/null\nsleep 4\nprintf '%s\\n' '```loopx-report' '{\"status\":\"done\",\"summary\":\"waited\"}' '```'";
    crate::support::script_agent(&loopx, "a", script, "max_time = \"2m\"");
    loopx.ok(&["todo", "add", "Wait a little"]);
    let env = [("LOOPX_LARK_APP_SECRET", SECRET)];
    let run = Background::start_env(&loopx, &["--max-slices", "1"], &env);
    eventually("t1 running on the board", || {
        status_on_board(&server, "t1").as_deref() == Some("Running")
    });
    eventually("t1 done on the board", || {
        status_on_board(&server, "t1").as_deref() == Some("Done")
    });
    let (code, _) = run.finish();
    assert_eq!(code, 0);
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
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("HTTP 503") && run.stderr.contains("run it again"),
        "{}",
        run.stderr
    );
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

pub(crate) const TOKEN: &str = "verify-me";
pub(crate) const KEY: &str = "encrypt-me";

/// A free port on 127.0.0.1 (bound and let go: another process could take it in between, as
/// with any test that picks a port).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port()
}

/// `loopx run` with the board, the questions' chat (Ann the one answerer) and the callback
/// listener on a free port: the port and the run.
fn run_listening(loopx: &Loopx, server: &LarkServer) -> (u16, crate::support::Background) {
    let port = free_port();
    (port, run_listening_on(loopx, server, port, &[]))
}

/// `loopx run ARGS` with the board, the questions' chat and the callback listener on `port`.
pub(crate) fn run_listening_on(
    loopx: &Loopx,
    server: &LarkServer,
    port: u16,
    args: &[&str],
) -> crate::support::Background {
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\npoll = \"1s\"\n[lark.questions]\nchat_id = \"oc_team\"\nanswerers = [\"ou_ann\"]\nlisten = \"127.0.0.1:{port}\"\n",
        server.url()
    ));
    let env = [
        ("LOOPX_LARK_APP_SECRET", SECRET),
        ("LOOPX_LARK_VERIFICATION_TOKEN", TOKEN),
        ("LOOPX_LARK_ENCRYPT_KEY", KEY),
    ];
    crate::support::Background::start_env(loopx, args, &env)
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Waits up to 30 s for `check` to hold.
pub(crate) fn eventually(what: &str, check: impl Fn() -> bool) {
    crate::support::wait_for(what, crate::support::SOON, check);
}

#[test]
fn a_question_becomes_a_card_and_only_an_allowed_signed_press_answers_it_and_wakes_the_run() {
    use crate::support::demo_project;
    use loopx_lark_server::{Presser, Signing};
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = demo_project(&["exec"]);
    loopx.agents_close_goals();
    loopx.ok(&[
        "todo",
        "add",
        "Choose the format [demo:ask]",
        "--priority",
        "5",
    ]);
    loopx.ok(&["todo", "add", "Write the outro", "--after", "t1"]);
    let (port, mut run) = run_listening(&loopx, &server);
    run.wait_for("the question", |e| e["event"] == "question");
    eventually("the question's card", || {
        server.state().card_of("q1").is_some()
    });
    let (message, card) = server.state().card_of("q1").expect("the card");
    assert_eq!(server.state().messages[&message].chat, "oc_team");
    assert!(
        card.to_string().contains("\"option\":1"),
        "a button per option: {card}"
    );
    eventually("t1 blocked on the board", || {
        status_on_board(&server, "t1").as_deref() == Some("Blocked by a question")
    });

    let url = format!("http://127.0.0.1:{port}/lark/callback");
    let lark = Presser {
        verification_token: TOKEN.into(),
        encrypt_key: KEY.into(),
    };
    let press = |who: &str| {
        lark.seal(
            &lark.button_event(
                who,
                &message,
                &serde_json::json!({"gate": "q1", "option": 1}),
            ),
            [7; 16],
        )
    };
    let open = || loopx.ok(&["gate", "show", "q1", "--json"]).json()["gate"]["state"] == "open";
    // Lark checks the callback URL when it is saved: answered once it passes the same checks.
    let check = |token: &str, nonce: &str| {
        let body = lark.seal(
            &serde_json::json!({"type": "url_verification", "challenge": "c-123", "token": token}),
            [3; 16],
        );
        lark.post(&url, &body, now_secs(), nonce, Signing::Good)
    };
    assert_eq!(
        check(TOKEN, "n-check"),
        (200, serde_json::json!({"challenge": "c-123"}))
    );
    assert_eq!(check("guessed", "n-check-2").0, 401);
    // Refused, each for its own reason, and the question stays open.
    let now = now_secs();
    for (body, at, nonce, signing, why) in [
        (
            press("ou_ann"),
            now,
            "n-unsigned",
            Signing::None,
            "not signed",
        ),
        (press("ou_ann"), now, "n-wrong", Signing::Wrong, "signature"),
        (
            press("ou_ann"),
            now - 600,
            "n-stale",
            Signing::Good,
            "timestamp",
        ),
        (press("ou_eve"), now, "n-eve", Signing::Good, "not one of"),
    ] {
        let (status, answer) = lark.post(&url, &body, at, nonce, signing);
        assert_eq!(status, 401, "{why}: {answer}");
        assert!(
            answer["error"].as_str().is_some_and(|e| e.contains(why)),
            "{why}: {answer}"
        );
        assert!(open(), "{why} changed nothing");
    }
    let forged = Presser {
        verification_token: "guessed".into(),
        encrypt_key: KEY.into(),
    };
    let body = forged.seal(
        &forged.button_event(
            "ou_ann",
            &message,
            &serde_json::json!({"gate": "q1", "option": 2}),
        ),
        [9; 16],
    );
    let (status, answer) = lark.post(&url, &body, now, "n-token", Signing::Good);
    assert_eq!(
        (
            status,
            answer["error"]
                .as_str()
                .is_some_and(|e| e.contains("Verification Token"))
        ),
        (401, true),
        "{answer}"
    );
    assert!(open());

    // Ann's press, as Lark sends it: the answer is hers, and the run goes on.
    let body = press("ou_ann");
    let (status, answer) = lark.post(&url, &body, now, "n-ann", Signing::Good);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    run.wait_for("the answered todo's slice", |e| {
        e["event"] == "slice_started" && e["todo"] == "t1"
    });
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(gate["gate"]["answer"]["by"], "human:lark:ou_ann", "{gate}");
    assert_eq!(gate["gate"]["answer"]["option"], 1, "{gate}");
    // The same press again is a replay.
    let (status, answer) = lark.post(&url, &body, now, "n-ann", Signing::Good);
    assert_eq!(status, 401, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("replay")),
        "{answer}"
    );
    // The card shows the answer, and the board the todo done.
    eventually("the card closed", || {
        server.state().messages[&message]
            .card
            .to_string()
            .contains("human:lark:ou_ann")
    });
    let (code, _) = run.finish();
    assert_eq!(code, 0);
    let status = loopx.ok(&["status"]).stdout;
    assert!(status.contains("Lark board: in step"), "{status}");
    let json = loopx.ok(&["status", "--json"]).json();
    assert_eq!(json["projections"][0]["name"], "lark", "{json}");
    eventually("t1 done on the board", || {
        status_on_board(&server, "t1").as_deref() == Some("Done")
    });
}

#[test]
fn an_approval_is_shown_in_lark_but_answered_only_at_the_machine() {
    use loopx_lark_server::{Presser, Signing};
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    // A `full` profile: the run asks for the approval of its exact content (q1).
    let loopx = crate::permissions::danger_project();
    let (out, _) = crate::permissions::run_once(&loopx);
    assert_eq!(
        (&out["decision"], &out["gate"]["id"]),
        (&Value::from("ask"), &Value::from("q1")),
        "{out}"
    );
    let (port, run) = run_listening(&loopx, &server);
    eventually("the approval's card", || {
        server.state().card_of("q1").is_some()
    });
    let (message, card) = server.state().card_of("q1").expect("the card");
    let text = card.to_string();
    assert!(
        text.contains("answered at the machine") && !text.contains("\"option\""),
        "shown, with no button: {card}"
    );
    // A press forged for it (an allowed person, signed, a fresh nonce) is refused all the same.
    let lark = Presser {
        verification_token: TOKEN.into(),
        encrypt_key: KEY.into(),
    };
    let body = lark.seal(
        &lark.button_event(
            "ou_ann",
            &message,
            &serde_json::json!({"gate": "q1", "option": 1}),
        ),
        [5; 16],
    );
    let url = format!("http://127.0.0.1:{port}/lark/callback");
    let (status, answer) = lark.post(&url, &body, now_secs(), "n-approve", Signing::Good);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["toast"]["type"], "error", "{answer}");
    assert!(
        answer["toast"]["content"]
            .as_str()
            .is_some_and(|t| t.contains("q1 is an approval")),
        "{answer}"
    );
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    assert_eq!(gate["gate"]["state"], "open", "{gate}");
    run.signal(nix::sys::signal::Signal::SIGINT);
    let (code, _) = run.finish();
    assert_eq!(code, 0);
}

#[test]
fn while_lark_is_down_the_run_goes_on_status_says_so_and_the_board_catches_up() {
    use crate::support::{Background, demo_project};
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = demo_project(&["exec"]);
    loopx.ok(&["todo", "add", "Choose the format [demo:ask]"]);
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\n",
        server.url()
    ));
    server.fail_next(&[Failure::Outage; 500]);
    let mut run = Background::start_env(&loopx, &[], &[("LOOPX_LARK_APP_SECRET", SECRET)]);
    run.wait_for("the question, Lark or not", |e| e["event"] == "question");
    let projection = || loopx.ok(&["status", "--json"]).json()["projections"][0].clone();
    eventually("the failure in status", || {
        !projection()["failing_since"].is_null()
    });
    let status = loopx.ok(&["status"]).stdout;
    assert!(status.contains("Lark board: failing since"), "{status}");
    server.recover();
    eventually("the board in step again", || {
        projection()["failing_since"].is_null()
            && status_on_board(&server, "t1").as_deref() == Some("Blocked by a question")
    });
    run.signal(nix::sys::signal::Signal::SIGINT);
    let (code, _) = run.finish();
    assert_eq!(code, 0);
}

#[test]
fn doctor_names_what_is_missing_in_lark_and_creates_nothing() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = project(&server, None);
    loopx.write_config(format!(
        "[lark]\nbase_url = \"{}\"\napp_id = \"cli_test\"\n[lark.board]\napp_token = \"bascnTest\"\n[lark.questions]\nchat_id = \"oc_team\"\nanswerers = [\"ou_ann\"]\n",
        server.url()
    ));
    let lark_checks = |env: &[(&str, &str)]| {
        let run = loopx.run_env(&["doctor", "--json"], env);
        let checks: Vec<Value> = run.json()["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .filter(|c| c["name"] == "lark")
            .cloned()
            .collect();
        (run.code, checks)
    };
    let (code, checks) = lark_checks(&[]);
    assert_eq!(code, 3, "{checks:?}");
    assert!(
        checks[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("LOOPX_LARK_APP_SECRET")),
        "{checks:?}"
    );
    let env = [("LOOPX_LARK_APP_SECRET", SECRET)];
    let (code, checks) = lark_checks(&env);
    assert_eq!(code, 3, "{checks:?}");
    let detail = |i: usize| checks[i]["detail"].as_str().unwrap_or_default().to_owned();
    assert!(
        checks[0]["warning"] == true && detail(0).contains("first sync creates it"),
        "{checks:?}"
    );
    assert!(
        checks[1]["ok"] == false && detail(1).contains("add the app's bot to the chat"),
        "{checks:?}"
    );
    assert!(
        checks[2]["warning"] == true && detail(2).contains("LOOPX_LARK_ENCRYPT_KEY"),
        "{checks:?}"
    );
    assert!(server.state().tables.is_empty(), "doctor created nothing");
    server
        .state()
        .chats
        .insert("oc_team".into(), "Release team".into());
    sync(&loopx);
    let env = [
        ("LOOPX_LARK_APP_SECRET", SECRET),
        ("LOOPX_LARK_VERIFICATION_TOKEN", TOKEN),
        ("LOOPX_LARK_ENCRYPT_KEY", KEY),
    ];
    let (code, checks) = lark_checks(&env);
    assert_eq!(code, 0, "{checks:?}");
    assert!(
        checks
            .iter()
            .all(|c| c["ok"] == true && c["warning"] == false),
        "{checks:?}"
    );
    assert!(
        checks[1]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Release team")),
        "{checks:?}"
    );
}

/// Issue 46, hole 4: one agent's slices opened 3,000 questions, each posted as a card. An
/// agent keeps at most 20 open (the kernel's cap), and the chat gets at most 5 cards of one
/// agent's questions in 10 minutes: the rest are listed on one digest card. A person's
/// question is never held back.
#[test]
fn an_agent_s_flood_of_questions_is_a_few_cards_and_a_digest() {
    let server = LarkServer::start("cli_test", SECRET, "bascnTest").expect("server");
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Ship the retry client"]);
    let script = format!(
        "cat > /dev/null\n\
         i=0; while [ $i -lt 30 ]; do i=$((i+1)); '{loopx}' report ask \"Should the parser accept option $i of 30?\" --option yes --option no > /dev/null 2>&1; done\n\
         printf '%s\\n' '```loopx-report' '{{\"status\":\"progress\",\"summary\":\"asked\"}}' '```'\n",
        loopx = crate::support::LOOPX,
    );
    crate::support::script_agent(&loopx, "exec", &script, "max_time = \"1m\"");
    loopx.ok(&["todo", "add", "Parse the options"]);
    let run = run_listening_on(&loopx, &server, free_port(), &["--for", "40s"]);
    eventually("the agent's cards and the digest", || {
        let state = server.state();
        state.messages.values().any(|m| {
            m.card
                .to_string()
                .contains("15 more questions from agents wait")
        })
    });
    loopx.ok(&[
        "gate",
        "ask",
        "Deploy the retry client to production now?",
        "--option",
        "yes",
        "--option",
        "no",
    ]);
    eventually("the person's card", || {
        server.state().card_of("q21").is_some()
    });
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let _ = run.finish();
    let state = server.state();
    let asked: Vec<String> = (1..=20)
        .filter(|n| state.card_of(&format!("q{n}")).is_some())
        .map(|n| format!("q{n}"))
        .collect();
    assert_eq!(asked, ["q1", "q2", "q3", "q4", "q5"], "one agent's cards");
    assert_eq!(
        state.messages.len(),
        8,
        "5 cards, the digest, the person's, the goal's"
    );
}
