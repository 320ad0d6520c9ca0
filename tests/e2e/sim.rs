//! `loopx sim`: the simulation as a person runs it — a report, a verdict in the exit code, and
//! a scenario error that names the file and the key.

use crate::support::Loopx;

const SHORT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/sim/short.toml");

#[test]
fn a_short_simulation_reports_what_happened_and_passes() {
    let loopx = Loopx::empty();
    let keep = loopx.path().join("kept");
    let keep = keep.to_str().expect("utf-8");
    let run = loopx.run(&[
        "sim", SHORT, "--seed", "2", "--hours", "6", "--keep", keep, "--json",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // The simulation's injected faults warn by design: a person running it sees its report,
    // not a warning per fault (`docs/logging.md`).
    assert!(!run.stderr.contains("WARN"), "{}", run.stderr);
    let first = run.stdout.lines().next().expect("a report");
    let report: serde_json::Value = serde_json::from_str(first).expect("JSON");
    let sim = &report["sim"];
    assert_eq!(sim["seed"], 2);
    assert!(sim["violation"].is_null(), "{sim}");
    assert!(sim["slices"].as_u64().is_some_and(|n| n > 0), "{sim}");
    assert!(
        sim["hours"]
            .as_f64()
            .is_some_and(|h| (5.9..6.2).contains(&h)),
        "{sim}"
    );
    // The kept project is a real one: loopx reads it like any other.
    let status = loopx.run(&["--project", keep, "todo", "list"]);
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(
        status.stdout.contains("Simulated todo"),
        "{}",
        status.stdout
    );
}

#[test]
fn a_broken_scenario_names_the_file_and_the_key() {
    let loopx = Loopx::empty();
    let path = loopx.path().join("bad.toml");
    let text = std::fs::read_to_string(SHORT)
        .expect("the scenario")
        .replace("[todos]\ncount = 8", "[todos]\ncount = 8\ncolour = \"red\"");
    std::fs::write(&path, text).expect("write");
    let run = loopx.run(&["sim", path.to_str().expect("utf-8")]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("bad.toml")
            && run.stderr.contains("colour")
            && run.stderr.contains("line"),
        "{}",
        run.stderr
    );
}

/// `--history FILE`: the simulated run's history page, as `goal history --html` writes it
/// (`docs/history.md`), without keeping the project.
#[test]
fn a_simulation_draws_its_history_page() {
    let loopx = Loopx::empty();
    let page = loopx.path().join("arc.html");
    let page_arg = page.to_str().expect("utf-8");
    loopx.ok(&[
        "sim",
        SHORT,
        "--seed",
        "2",
        "--hours",
        "6",
        "--history",
        page_arg,
    ]);
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..80.min(html.len())]
    );
    for section in ["id=\"lanes\"", "id=\"cost\"", "id=\"lineage\""] {
        assert!(html.contains(section), "no {section}");
    }
    assert!(html.contains("class=\"slice"), "slices are drawn");
    let twice = loopx.run(&["sim", SHORT, "--seeds", "2", "--history", page_arg]);
    assert_eq!(twice.code, 2, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("--history draws one run"),
        "{}",
        twice.stderr
    );
}
