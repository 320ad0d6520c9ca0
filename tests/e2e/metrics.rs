//! Metric evidence (`docs/history.md`, "Metrics"): agents measure, a new best asks a person
//! whether to promote it, keep exploring or stop, and the history charts each metric with its
//! best so far.

use crate::support::{LOOPX, Loopx, script_agent, todo_state};

/// A campaign: each todo is a trial whose accuracy the agent measures, t2's through its report
/// block, the others through `loopx report evidence metric`.
fn campaign() -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Find the best learning rate"]);
    loopx.write_config(
        "[metrics.accuracy]\nbetter = \"higher\"\nask_on_best = true\n\n[metrics.loss]\nbetter = \"lower\"\n",
    );
    let script = format!(
        "cat > /dev/null\n\
         case \"$LOOPX_TODO\" in\n\
           t1) v=0.80 ;; t2) v=0.75 ;; t3) v=0.91 ;; t4) v=0.85 ;; *) v=0.95 ;;\n\
         esac\n\
         if [ \"$LOOPX_TODO\" = t2 ]; then\n\
           printf '%s\\n' '```loopx-report' '{{\"status\":\"done\",\"summary\":\"tried\",\"metrics\":[{{\"name\":\"accuracy\",\"value\":0.75,\"unit\":\"%\"}}]}}' '```'\n\
           exit 0\n\
         fi\n\
         '{LOOPX}' report evidence metric \"accuracy=$v\" on the held-out set --unit % > /dev/null\n\
         '{LOOPX}' report evidence metric loss=0.3 > /dev/null\n\
         '{LOOPX}' report done --summary tried > /dev/null"
    );
    script_agent(&loopx, "tuner", &script, "max_time = \"1m\"");
    for trial in ["lr 0.1", "lr 0.3", "lr 0.01", "lr 0.03", "lr 0.003"] {
        loopx.ok(&["todo", "add", &format!("Try {trial}")]);
    }
    loopx
}

#[test]
fn a_new_best_asks_a_person_who_promotes_it_then_stops_the_goal() {
    let loopx = campaign();
    let run = loopx.run(&["run", "--on-gate", "exit", "--max-slices", "10"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    // t1 is the baseline and t2 no better: nobody was asked. t3 beat them both, and the
    // question came before t4's slice.
    for done in ["t1", "t2", "t3"] {
        assert_eq!(todo_state(&loopx, done), "done", "{}", run.stderr);
    }
    assert_eq!(todo_state(&loopx, "t4"), "open", "{}", run.stderr);
    let gate = loopx.ok(&["gate", "show", "q1", "--json"]).json();
    let question = gate["gate"]["question"].as_str().unwrap_or_default();
    assert_eq!(
        question,
        "Promote t3's result, accuracy = 0.91 %, the best so far?"
    );
    assert_eq!(
        gate["gate"]["options"],
        serde_json::json!(["promote", "keep exploring", "stop"])
    );
    // A lower-is-better metric without `ask_on_best` asks nothing, and the question holds
    // the goal back (`should-run` says ask).
    assert_eq!(
        loopx.ok(&["gate", "list", "--json"]).json()["gates"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let should = loopx
        .ok(&["quota", "should-run", "--agent", "tuner", "--json"])
        .json();
    assert_eq!(should["decision"], "ask", "{should}");

    loopx.ok(&[
        "gate",
        "answer",
        "q1",
        "1",
        "--note",
        "make it the baseline",
    ]);
    let run = loopx.run(&["run", "--on-gate", "exit", "--max-slices", "10"]);
    assert_eq!(
        run.code,
        i32::from(loopx_cli::exit_code::HALTED_ON_GATE),
        "{}",
        run.stderr
    );
    // t4 (0.85) is no new best; t5 (0.95) is, and asks again.
    assert_eq!(todo_state(&loopx, "t4"), "done", "{}", run.stderr);
    assert_eq!(todo_state(&loopx, "t5"), "done", "{}", run.stderr);
    let gate = loopx.ok(&["gate", "show", "q2", "--json"]).json();
    assert!(
        gate["gate"]["question"]
            .as_str()
            .is_some_and(|q| q.contains("t5's result, accuracy = 0.95 %")),
        "{gate}"
    );
    loopx.ok(&["gate", "answer", "q2", "stop"]);
    let goal = loopx.ok(&["goal", "show", "--json"]).json();
    assert_eq!(goal["goal"]["status"], "paused", "{goal}");

    // The history charts both metrics: every measurement, the bests so far, the promoted one.
    let history = loopx.ok(&["goal", "history", "--json"]).json();
    let metrics = history["metrics"].as_array().expect("metrics");
    let accuracy = metrics
        .iter()
        .find(|m| m["name"] == "accuracy")
        .expect("accuracy");
    assert_eq!(accuracy["better"], "higher");
    let points = accuracy["points"].as_array().expect("points");
    let seen: Vec<(f64, bool, bool)> = points
        .iter()
        .map(|p| {
            (
                p["value"].as_f64().unwrap_or_default(),
                p["best"] == true,
                p["promoted"] == true,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (0.80, true, false),
            (0.75, false, false),
            (0.91, true, true),
            (0.85, false, false),
            (0.95, true, false),
        ]
    );
    let loss = metrics.iter().find(|m| m["name"] == "loss").expect("loss");
    assert_eq!(loss["points"].as_array().map(Vec::len), Some(4));
    let text = loopx.ok(&["goal", "history"]).stdout;
    assert!(
        text.contains("accuracy: 5 measured, best 0.95 % on t5"),
        "{text}"
    );
}

#[test]
fn a_measurement_that_does_not_read_is_refused_naming_it() {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Measure"]);
    loopx.ok(&["todo", "add", "Try it"]);
    let bad = loopx.run(&[
        "evidence",
        "add",
        "accuracy=high",
        "--kind",
        "metric",
        "--todo",
        "t1",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr
            .contains("metric value `high` is not a finite number"),
        "{}",
        bad.stderr
    );
    let unit = loopx.run(&["evidence", "add", "fine", "--unit", "%"]);
    assert!(
        unit.stderr.contains("`--unit` is for metric evidence"),
        "{}",
        unit.stderr
    );
    // A measurement names the todo it measures: else no goal's history would show it.
    let nowhere = loopx.run(&["evidence", "add", "accuracy=0.99", "--kind", "metric"]);
    assert_eq!(nowhere.code, 2, "{}", nowhere.stderr);
    assert!(
        nowhere.stderr.contains("name the todo"),
        "{}",
        nowhere.stderr
    );
    // A person's measurement is recorded with its unit.
    let ok = loopx
        .ok(&[
            "evidence",
            "add",
            "latency=120",
            "--kind",
            "metric",
            "--unit",
            "ms",
            "--todo",
            "t1",
            "--json",
        ])
        .json();
    assert_eq!(ok["evidence"]["summary"], "latency = 120 ms");
    assert_eq!(ok["evidence"]["metric"]["value"], 120.0);
    // Another unit is another series: 0.2 s is not compared with 120 ms.
    loopx.ok(&[
        "evidence",
        "add",
        "latency=0.2",
        "--kind",
        "metric",
        "--unit",
        "s",
        "--todo",
        "t1",
    ]);
    let history = loopx.ok(&["goal", "history", "--json"]).json();
    let units: Vec<&str> = history["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m["unit"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(units, ["ms", "s"], "{history}");
    loopx.write_config("[metrics.latency]\nbetter = \"faster\"\n");
    let config = loopx.run(&["goal", "history"]);
    assert!(
        config
            .stderr
            .contains("`better = \"faster\"` is not a direction")
            && config.stderr.contains("metrics.latency.better"),
        "{}",
        config.stderr
    );
}
