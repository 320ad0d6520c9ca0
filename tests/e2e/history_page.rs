//! `loopx goal history --html FILE` (docs/history.md): a goal run by two agents, with a
//! question, a dropped todo whose title is markup, and a todo resting on stale evidence, makes
//! one self-contained page that a real Chromium draws: lanes, the charts (todos done, a
//! metric with its bests so far), the lineage with its dead end and stale marks, and no markup
//! of the agents' own.

use serde_json::Value;

use crate::browser::{Browser, output_dir};
use crate::history::two_agents_one_goal;
use crate::support::Loopx;

const INJECTED: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";

#[test]
fn goal_history_html_writes_one_page_chromium_draws_with_lanes_lineage_and_a_chart() {
    let loopx = Loopx::new();
    two_agents_one_goal(&loopx, INJECTED);
    // Three measurements, the middle one no better: three dots, two of them bests so far.
    loopx.write_config("[metrics.accuracy]\nbetter = \"higher\"\n");
    for value in ["0.8", "0.78", "0.9"] {
        let pair = format!("accuracy={value}");
        let add = [
            "evidence", "add", &pair, "--kind", "metric", "--unit", "%", "--todo", "t1",
        ];
        loopx.ok(&add);
    }
    let history = loopx.ok(&["goal", "history", "--json"]).json();
    let file = loopx.path().join("history.html");
    let file_arg = file.to_str().expect("utf-8 path");
    let wrote = loopx.ok(&["goal", "history", "--html", file_arg]).stdout;
    assert!(wrote.starts_with("wrote "), "{wrote}");
    let wrote = loopx
        .ok(&["goal", "history", "--html", file_arg, "--json"])
        .json();
    assert_eq!(wrote["wrote"], file_arg, "{wrote}");
    let page = std::fs::read_to_string(&file).expect("the page");

    // Self-contained: no script, no link, no fetch; the agent's markup is text.
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    for absent in ["<script", "<img", "<link", " src=\"", " href=\"", "url("] {
        assert!(!page.contains(absent), "{absent} in the page");
    }
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img"));
    assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
    assert_eq!(page.matches("<g ").count(), page.matches("</g>").count());
    assert_eq!(
        page.matches("<table").count(),
        page.matches("</table>").count()
    );

    let slices: usize = history["lanes"]
        .as_array()
        .expect("lanes")
        .iter()
        .map(|l| l["slices"].as_array().map_or(0, Vec::len))
        .sum();
    let nodes = history["lineage"]["nodes"].as_array().expect("nodes").len();
    assert!(slices >= 2, "{history:#}");

    let mut browser = Browser::start();
    browser.open(&format!("file://{}", file.display()));
    let count = |b: &mut Browser, selector: &str| -> u64 {
        b.eval(&format!("document.querySelectorAll('{selector}').length"))
            .as_u64()
            .expect("a count")
    };
    browser.wait_for(
        "the lineage",
        "document.querySelector('#lineage-svg g.node')",
        std::time::Duration::from_secs(20),
    );
    assert_eq!(
        count(&mut browser, "#lanes-svg rect.slice") as usize,
        slices
    );
    assert_eq!(
        count(&mut browser, "#lanes-svg g.lane"),
        4,
        "two agents, the questions, the monitors"
    );
    assert_eq!(count(&mut browser, "#lineage-svg g.node") as usize, nodes);
    assert!(count(&mut browser, "#lineage-svg path.edge") >= nodes as u64 - 1);
    assert!(count(&mut browser, "#progress-chart rect.done-bar") >= 1);
    assert_eq!(count(&mut browser, "svg.metric-chart circle.point"), 3);
    assert_eq!(count(&mut browser, "svg.metric-chart circle.best"), 2);
    assert_eq!(
        count(&mut browser, "svg.metric-chart polyline.best-line"),
        1
    );
    assert_eq!(count(&mut browser, "script, img, iframe, object"), 0);
    assert_eq!(
        count(&mut browser, "#n-t3.dead"),
        1,
        "the dropped todo is a dead end"
    );
    assert_eq!(
        count(&mut browser, "#n-t4.stale"),
        1,
        "t4 rests on stale evidence"
    );
    assert_eq!(
        count(&mut browser, "#n-t6.stale"),
        1,
        "and so does its successor"
    );
    let title = browser.eval("document.querySelector('#n-t3 title').textContent");
    assert!(
        title
            .as_str()
            .is_some_and(|t| t.contains("<script>alert(1)</script>")),
        "{title}"
    );
    // The bars have a size: the lanes and the lineage are drawn, not just present.
    let drawn = browser.eval(
        "[...document.querySelectorAll('#lanes-svg rect.slice, #lineage-svg g.node rect, svg.metric-chart circle')]\
         .every(r => r.getBBox().width >= 1 && r.getBBox().height >= 1)",
    );
    assert_eq!(drawn, Value::Bool(true));
    // Each SVG, as the file has it, is well-formed XML (Chromium's own XML parser says so).
    for svg in page.split("<svg").skip(1) {
        let svg = format!("<svg{}</svg>", svg.split("</svg>").next().expect("an end"));
        let source = serde_json::to_string(&svg).expect("a JSON string");
        let errors = browser.eval(&format!(
            "new DOMParser().parseFromString({source}, 'image/svg+xml')\
             .getElementsByTagName('parsererror').length"
        ));
        assert_eq!(errors, Value::from(0), "not well-formed: {svg}");
    }
    browser.screenshot(&output_dir("history").join("history-page.png"));
}

#[test]
fn goal_history_html_names_a_file_it_cannot_write() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the notes"]);
    let missing = loopx.path().join("no-such-dir").join("page.html");
    let out = loopx.run(&[
        "goal",
        "history",
        "--html",
        missing.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(!missing.with_extension("html.partial").exists());
    assert!(
        out.stderr.contains("cannot write the history page to")
            && out.stderr.contains("no-such-dir"),
        "{}",
        out.stderr
    );
}
