//! `loopx board --all` (issue 49): every registered project on one page, behind the same
//! session and checks as one project's board; a change names its project by the id the board
//! gave it and lands in that project's store alone.

use serde_json::Value;

use std::time::Duration;

use crate::board::BoardProcess;
use crate::browser::{Browser, output_dir};
use crate::projects::{path, project_of};
use crate::support::Loopx;

/// A change to the project `id`, with the page's headers and `session`.
fn change(board: &BoardProcess, session: &str, target: &str, body: &str) -> (u16, String) {
    board.request(
        &format!(
            "POST {target} HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: application/json"
        ),
        body,
    )
}

/// The registered project at `loopx`'s root, as `loopx projects --json` sees it now.
fn glance_of(state: &std::path::Path, loopx: &Loopx) -> Value {
    let listed =
        Loopx::empty().run_env(&["projects", "--json"], &[("XDG_STATE_HOME", path(state))]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let root = loopx.path().canonicalize().expect("root");
    listed.json()["projects"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|p| p["root"] == path(&root))
        .cloned()
        .expect("registered")
}

/// Two registered projects, goals "Ship A" and "Ship B", each with the same question open
/// as q1: only the project's id tells them apart.
fn two_asking(state: &std::path::Path) -> (Loopx, Loopx) {
    let env = [("XDG_STATE_HOME", path(state))];
    let (a, b) = (project_of(state), project_of(state));
    for (loopx, goal) in [(&a, "Ship A"), (&b, "Ship B")] {
        assert_eq!(loopx.run_env(&["goal", "start", goal], &env).code, 0);
        let asked = loopx.run_env(
            &[
                "gate",
                "ask",
                "Should the project be MIT (a) or Apache-2.0 (b)?",
                "--global",
            ],
            &env,
        );
        assert_eq!(asked.code, 0, "{asked:?}");
    }
    (a, b)
}

#[test]
fn the_all_board_serves_every_project_and_a_change_lands_in_its_own_store() {
    let state = tempfile::tempdir().expect("temp dir");
    let env = [("XDG_STATE_HOME", path(state.path()))];
    let (a, b) = two_asking(state.path());
    let gone = project_of(state.path());
    drop(gone);

    // Started anywhere (no project here): it serves the registry.
    let anywhere = Loopx::empty();
    let board = BoardProcess::start_with(&anywhere, &["board", "--all", "--json"], &env);
    for request in ["GET /api/state HTTP/1.1", "GET /api/stream HTTP/1.1"] {
        assert_eq!(
            board.request(request, "").0,
            401,
            "{request} needs the session"
        );
    }
    let session = board.session();
    let (status, body) = board.request(
        &format!("GET /api/state HTTP/1.1\r\nX-Loopx-Session: {session}"),
        "",
    );
    assert_eq!(status, 200, "{body}");
    let view: Value = serde_json::from_str(&body).expect("JSON");
    let projects = view["projects"].as_array().expect("a list");
    assert_eq!(projects.len(), 3, "{view}");
    let root = |l: &Loopx| path(&l.path().canonicalize().expect("root")).to_owned();
    let (a_root, b_root) = (root(&a), root(&b));
    let entry = |root: &str| {
        projects
            .iter()
            .find(|p| p["glance"]["root"] == root)
            .cloned()
            .expect("listed")
    };
    let (a_entry, b_entry) = (entry(&a_root), entry(&b_root));
    assert_eq!(a_entry["glance"]["state"], "read");
    assert_eq!(a_entry["glance"]["questions"], 1);
    assert_eq!(a_entry["board"]["status"]["goal"]["objective"], "Ship A");
    assert_eq!(b_entry["board"]["status"]["goal"]["objective"], "Ship B");
    // The deleted project is shown as gone, without a board, and the page still serves.
    let third = projects
        .iter()
        .find(|p| p["glance"]["state"] == "gone")
        .expect("the gone project is listed");
    assert!(third["board"].is_null(), "{third}");
    let b_id = b_entry["id"].as_str().expect("an id");
    assert_ne!(a_entry["id"], b_entry["id"]);

    // A change naming no project, an unknown one, an index or a path is refused, and
    // nothing is answered anywhere.
    let answer = r#"{"gate":"q1","answer":"MIT"}"#;
    let other_id = format!(
        "{}{}",
        if b_id.starts_with('0') { '1' } else { '0' },
        &b_id[1..]
    );
    let encoded_root = b_root.replace('/', "%2F");
    for target in [
        "/api/answer".to_owned(),
        format!("/api/projects/{other_id}/answer"),
        "/api/projects/1/answer".to_owned(),
        "/api/projects/3/answer".to_owned(),
        format!("/api/projects/{encoded_root}/answer"),
        format!("/api/projects/{b_id}/../answer"),
    ] {
        let (status, body) = change(&board, &session, &target, answer);
        assert_eq!(status, 404, "{target}: {body}");
    }
    assert_eq!(glance_of(state.path(), &a)["questions"], 1);
    assert_eq!(glance_of(state.path(), &b)["questions"], 1);
    // Without the board's header, a change is refused as on one project's board.
    let (status, _) = board.request(
        &format!(
            "POST /api/projects/{b_id}/answer HTTP/1.1\r\nX-Loopx-Session: {session}\r\nContent-Type: application/json"
        ),
        answer,
    );
    assert_eq!(status, 403);

    // B's gate answered from the page: B's store holds the answer, A's question still waits.
    let (status, body) = change(
        &board,
        &session,
        &format!("/api/projects/{b_id}/answer"),
        answer,
    );
    assert_eq!(status, 200, "{body}");
    let answered: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(answered["gate"]["id"], "q1", "{answered}");
    assert_eq!(glance_of(state.path(), &b)["questions"], 0);
    assert_eq!(glance_of(state.path(), &a)["questions"], 1);
    let a_gates = a.run_env(&["gate", "list", "--json"], &env);
    assert!(
        a_gates
            .stdout
            .contains("Should the project be MIT (a) or Apache-2.0 (b)?"),
        "{a_gates:?}"
    );
    // The History page of B's goal, from B's store alone; a bad goal id, another project's id
    // or no session is refused.
    let history = |target: &str, session: &str| {
        board.request(
            &format!("GET {target} HTTP/1.1\r\nX-Loopx-Session: {session}"),
            "",
        )
    };
    let (status, page) = history(&format!("/api/projects/{b_id}/history/g1"), &session);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Ship B") && page.contains("<section id=\"lineage\">"));
    assert!(!page.contains("Ship A"));
    let bad = history(
        &format!("/api/projects/{b_id}/history/..%2Fanswer"),
        &session,
    );
    assert_eq!(bad.0, 400, "{bad:?}");
    let other = history(&format!("/api/projects/{other_id}/history/g1"), &session);
    assert_eq!(other.0, 404, "{other:?}");
    let (status, _) = history(&format!("/api/projects/{b_id}/history/g1"), "");
    assert_eq!(status, 401);
}

#[test]
fn the_list_is_read_again_while_the_board_serves_and_a_forgotten_project_takes_no_changes() {
    let state = tempfile::tempdir().expect("temp dir");
    let env = [("XDG_STATE_HOME", path(state.path()))];
    let a = project_of(state.path());
    let anywhere = Loopx::empty();
    let board = BoardProcess::start_with(&anywhere, &["board", "--all", "--json"], &env);
    let session = board.session();
    let (_, body) = board.request(
        &format!("GET /api/state HTTP/1.1\r\nX-Loopx-Session: {session}"),
        "",
    );
    let view: Value = serde_json::from_str(&body).expect("JSON");
    let id = view["projects"][0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let root = path(&a.path().canonicalize().expect("root")).to_owned();
    let forgot = anywhere.run_env(&["projects", "forget", &root], &env);
    assert_eq!(forgot.code, 0, "{forgot:?}");
    let (status, body) = change(
        &board,
        &session,
        &format!("/api/projects/{id}/todo/add"),
        r#"{"title":"After it was forgotten"}"#,
    );
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no registered project"), "{body}");
    let todos = a.run_env(&["todo", "list", "--json"], &env);
    assert!(
        !todos.stdout.contains("After it was forgotten"),
        "{todos:?}"
    ); // One registered since the board started is served from the next state on.
    let later = project_of(state.path());
    let (_, body) = board.request(
        &format!("GET /api/state HTTP/1.1\r\nX-Loopx-Session: {session}"),
        "",
    );
    let view: Value = serde_json::from_str(&body).expect("JSON");
    let later_root = path(&later.path().canonicalize().expect("root")).to_owned();
    assert_eq!(view["projects"].as_array().map(Vec::len), Some(1), "{view}");
    assert_eq!(view["projects"][0]["glance"]["root"], later_root, "{view}");
}

/// A raw request given at most 20 s: a store that blocks its reader must not hang the board.
fn bounded_request(board: &BoardProcess, head: &str, body: &str) -> (u16, String) {
    let (sent, answer) = std::sync::mpsc::channel();
    let (head, body) = (head.to_owned(), body.to_owned());
    let port = board.port;
    std::thread::spawn(move || {
        let (status, _, body) = crate::board::raw_request(port, &head, &body);
        let _ = sent.send((status, body));
    });
    answer
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the board answered within 20 s")
}

#[test]
fn planted_projects_are_shown_as_such_and_take_no_changes() {
    // The planted stores are files where a project's redb store belongs: a run of the suite on
    // PostgreSQL (`scripts/test-postgres.sh`) has no such file to plant.
    if crate::support::test_database().is_some() {
        return;
    }
    let state = tempfile::tempdir().expect("temp dir");
    let env = [("XDG_STATE_HOME", path(state.path()))];
    let good = project_of(state.path());
    // A FIFO where the store belongs (a reader would block on it for ever).
    let fifo = crate::projects::fifo_project();
    // A store that is a link to the good project's: a change must not reach it through the link.
    let linked = Loopx::new();
    std::fs::remove_file(linked.store_path()).expect("remove the store");
    std::os::unix::fs::symlink(good.store_path(), linked.store_path()).expect("symlink");
    // A `loopx.toml` naming a database that records whoever connects.
    let (db, remote, url) = crate::projects::database_project();
    let good_root = good.path().canonicalize().expect("root");
    let roots = [
        path(fifo.path()).to_owned(),
        path(linked.path()).to_owned(),
        path(remote.path()).to_owned(),
        path(&good_root).to_owned(),
    ];
    crate::projects::plant(
        state.path(),
        &roots.iter().map(String::as_str).collect::<Vec<_>>(),
    );

    // Even with the environment naming the database, as a person's shell might.
    let env_with_url = [env[0], ("LOOPX_STORE_URL", url.as_str())];
    let anywhere = Loopx::empty();
    let board = BoardProcess::start_with(&anywhere, &["board", "--all", "--json"], &env_with_url);
    let session = board.session();
    let (status, body) = bounded_request(
        &board,
        &format!("GET /api/state HTTP/1.1\r\nX-Loopx-Session: {session}"),
        "",
    );
    assert_eq!(status, 200, "{body}");
    let view: Value = serde_json::from_str(&body).expect("JSON");
    let shown = view["projects"].as_array().expect("a list");
    assert_eq!(shown.len(), 4, "{view}");
    let states: Vec<&str> = shown
        .iter()
        .map(|p| p["glance"]["state"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        states,
        ["unreadable", "unreadable", "database", "read"],
        "{view}"
    );
    assert!(
        shown[0]["glance"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("FIFO")),
        "{view}"
    );
    assert!(
        shown[1]["glance"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("symbolic link")),
        "{view}"
    );
    assert!(shown[3]["board"]["status"].is_object(), "{view}");

    // A change to each planted project is refused; nothing reaches the good store or the
    // database.
    let add = r#"{"title":"Planted change"}"#;
    for (n, expected) in [(0, 409), (1, 409), (2, 403)] {
        let id = shown[n]["id"].as_str().expect("an id");
        let (status, body) = bounded_request(
            &board,
            &format!(
                "POST /api/projects/{id}/todo/add HTTP/1.1\r\nX-Loopx-Session: {session}\r\nX-Loopx-Board: 1\r\nContent-Type: application/json"
            ),
            add,
        );
        assert_eq!(status, expected, "{}: {body}", roots[n]);
    }
    assert!(db.accept().is_err(), "nobody connected to the database");
    let todos = good.run_env(&["todo", "list", "--json"], &env);
    assert!(!todos.stdout.contains("Planted change"), "{todos:?}");
}

#[test]
fn the_all_page_lists_the_projects_and_answers_the_chosen_one_s_question() {
    let state = tempfile::tempdir().expect("temp dir");
    let env = [("XDG_STATE_HOME", path(state.path()))];
    let (a, b) = two_asking(state.path());
    let anywhere = Loopx::empty();
    let board = BoardProcess::start_with(&anywhere, &["board", "--all", "--json"], &env);
    let mut browser = Browser::start();
    browser.open(&board.url);
    let within = Duration::from_secs(20);
    browser.wait_for(
        "both projects listed, the first one's board shown",
        r#"document.querySelectorAll('#project-list li[data-project]').length === 2
            && document.getElementById('goal').textContent.includes('Ship A')
            && document.querySelector('#gates [data-gate="q1"]')"#,
        within,
    );
    assert_eq!(browser.eval("document.title"), "(2) loopx board --all");
    let b_root =
        serde_json::to_string(path(&b.path().canonicalize().expect("root"))).expect("JSON");
    browser.eval(&format!(
        "[...document.querySelectorAll('#project-list li')].find((li) => li.textContent.includes({b_root})).querySelector('button').click()"
    ));
    browser.wait_for(
        "B's board",
        r#"document.getElementById('goal').textContent.includes('Ship B')
            && document.querySelector('#gates [data-gate="q1"] form')"#,
        within,
    );
    browser.screenshot(&output_dir("board").join("board-all.png"));
    // The CLI's answer command says which project it is run in.
    let hint = browser.eval(
        r#"[...document.querySelectorAll('#gates [data-gate="q1"] .meta')].pop().textContent"#,
    );
    assert!(
        hint.as_str().is_some_and(|h| h.contains(&format!(
            "or, in {}: loopx gate answer q1",
            path(&b.path().canonicalize().expect("root"))
        ))),
        "{hint}"
    );
    browser.eval(
        r#"(() => {
            const gate = document.querySelector('#gates [data-gate="q1"]');
            gate.querySelector('input').value = 'MIT';
            gate.querySelector('form').requestSubmit();
        })()"#,
    );
    browser.wait_for(
        "B's question answered, A's still counted",
        r#"!document.querySelector('#gates [data-gate="q1"]')
            && document.title === '(1) loopx board --all'"#,
        within,
    );
    assert_eq!(glance_of(state.path(), &b)["questions"], 0);
    assert_eq!(glance_of(state.path(), &a)["questions"], 1);
}
