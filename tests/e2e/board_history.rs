//! The board's History page (docs/board.md, docs/history.md): the page `loopx goal history
//! --html` writes, served behind the board's session, refused without it and for anything
//! but a goal id, linked from the main page and drawn, styles and all, in its frame under the
//! board's Content-Security-Policy. Screenshots go to `target/test-output/board-history/`.

use std::time::Duration;

use serde_json::Value;

use crate::board::{BoardProcess, raw_request};
use crate::browser::{Browser, output_dir};
use crate::history::two_agents_one_goal;
use crate::support::Loopx;

const MARKUP: &str = "<b>bold</b><img src=x onerror=\"window.__pwned=1\">";

#[test]
fn the_board_shows_a_goal_s_history_behind_its_session_and_refuses_a_bad_goal_id() {
    let loopx = Loopx::new();
    two_agents_one_goal(&loopx, MARKUP);
    let cli = loopx.ok(&["goal", "history", "--json"]).json();
    let board = BoardProcess::start_with(&loopx, &["board", "--json"], &[]);

    let mut browser = Browser::start();
    browser.open(&board.url);
    browser.wait_for(
        "a History button for g1, linked from the header",
        r##"document.querySelector('header a[href="#history"]')
            && document.querySelector('#history-goals button[data-goal="g1"]')"##,
        Duration::from_secs(20),
    );
    let session = browser.eval("sessionStorage.getItem('loopx-session')");
    let session = session
        .as_str()
        .expect("the page traded its code")
        .to_owned();
    let get = |path: &str, session: Option<&str>| {
        let head = match session {
            Some(s) => format!("GET {path} HTTP/1.1\r\nX-Loopx-Session: {s}"),
            None => format!("GET {path} HTTP/1.1"),
        };
        raw_request(board.port, &head, "")
    };

    // With the session: the CLI's page, lanes and lineage, the agents' markup as text.
    let (status, head, page) = get("/api/history/g1", Some(&session));
    assert_eq!(status, 200, "{head}\n{page}");
    assert!(
        head.to_lowercase().contains("content-type: text/html"),
        "{head}"
    );
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    for part in [
        "<section id=\"lanes\">",
        "<section id=\"lineage\">",
        "id=\"lineage-svg\"",
    ] {
        assert!(page.contains(part), "{part} in the page");
    }
    for lane in cli["lanes"].as_array().expect("lanes") {
        let agent = lane["agent"].as_str().expect("agent");
        assert!(page.contains(agent), "{agent}'s lane");
    }
    for todo in cli["lineage"]["todos"].as_array().expect("todos") {
        let id = todo["todo"].as_str().expect("id");
        assert!(
            page.contains(&format!("id=\"n-{id}\"")),
            "{id} in the lineage"
        );
    }
    assert!(
        !page.contains("<img") && !page.contains("<script"),
        "{page}"
    );
    assert!(page.contains("&lt;b&gt;bold&lt;/b&gt;"));

    // Without the session, or with another, nothing; anything but a goal id is refused before
    // the store is read.
    assert_eq!(get("/api/history/g1", None).0, 401);
    assert_eq!(get("/api/history/g1", Some(&"0".repeat(32))).0, 401);
    for bad in [
        "/api/history/..%2Fstate",
        "/api/history/../state",
        "/api/history/g1/../../x",
        "/api/history/g01",
        "/api/history/x",
        "/api/history/",
    ] {
        let (status, _, body) = get(bad, Some(&session));
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("is not a goal id"), "{bad}: {body}");
    }
    let (status, _, body) = get("/api/history/g9", Some(&session));
    assert!((400..500).contains(&status), "{status}: {body}");
    assert!(body.contains("g9"), "{body}");

    // From the main page: the frame shows the page with its own style (the board's policy
    // allows that one stylesheet by its hash), and no script of an agent ran.
    browser.eval(r#"document.querySelector('#history-goals button[data-goal="g1"]').click()"#);
    browser.wait_for(
        "the history in its frame",
        r#"(() => { const d = document.getElementById('history-frame').contentDocument;
            return d && d.querySelector('#lanes svg') && d.querySelector('#lineage-svg g.node'); })()"#,
        Duration::from_secs(20),
    );
    let styled = browser.eval(
        r#"(() => { const d = document.getElementById('history-frame').contentDocument;
            return getComputedStyle(d.querySelector('h2')).borderBottomStyle; })()"#,
    );
    assert_eq!(
        styled,
        Value::from("solid"),
        "the page's stylesheet applies"
    );
    let stale = browser.eval(
        r#"document.getElementById('history-frame').contentDocument
            .querySelectorAll('#lineage-svg g.node.stale').length"#,
    );
    assert!(stale.as_u64().is_some_and(|n| n >= 2), "t4 and t6: {stale}");
    // The agent's markup ran neither in the board's window nor in the frame's.
    assert_eq!(browser.eval("typeof window.__pwned"), "undefined");
    let framed = "typeof document.getElementById('history-frame').contentWindow.__pwned";
    assert_eq!(browser.eval(framed), "undefined");
    browser.screenshot(&output_dir("board-history").join("board-history.png"));
}
