//! The history page: what comes from the store is escaped, dead ends and stale work are
//! marked, and a 200-hour store makes a page of bounded size.

use loopx_kernel::Timestamp;
use loopx_kernel::model::TodoState;

use super::tests::{at, records, slice, todo};
use super::{MonitorSpan, Wait, build, render_html};

const INJECTED: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>";

#[test]
fn the_page_escapes_what_agents_wrote_and_marks_dead_ends_and_stale_work() {
    let mut r = records();
    r.todos[3].title = INJECTED.to_owned();
    r.goal.objective = format!("Ship \"it\" & {INJECTED}");
    let mut h = build(&r);
    h.lanes[0].waits.push(Wait {
        from: at(20),
        to: at(25),
        on: "question\"><script>".into(),
        reason: INJECTED.into(),
    });
    h.monitors.push(MonitorSpan {
        todo: loopx_kernel::TodoId(9),
        title: INJECTED.into(),
        state: TodoState::Open,
        polls: 3,
        first_poll: Some(at(30)),
        met_at: None,
    });
    let page = render_html(&h);
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    // The monitor polls from its first poll on, still open: its span runs to now.
    assert!(page.contains("<rect class=\"m-span\""), "{page}");
    assert!(page.contains("t9 &lt;script&gt;"), "{page}");
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("Ship &quot;it&quot; &amp; "), "{page}");
    // A wait word it does not know is drawn as `other`, never put into a class as it is.
    assert!(page.contains("class=\"wait w-other\""), "{page}");
    assert!(
        page.contains("class=\"node n-todo dead\" id=\"n-t4\""),
        "{page}"
    );
    assert!(
        page.contains("class=\"node n-todo stale\" id=\"n-t2\""),
        "{page}"
    );
    assert!(page.contains("class=\"node n-evidence stale\""), "{page}");
    for id in [
        "lanes-svg",
        "lineage-svg",
        "progress-chart",
        "cost-agent",
        "cost-day",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id}: {page}");
    }
    assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
    assert_eq!(page.matches("<g ").count(), page.matches("</g>").count());
}

#[test]
fn a_200_hour_store_makes_a_bounded_page_that_says_what_it_left_out() {
    let mut r = records();
    for i in 0..3000u64 {
        let minute = 60 + i * 4;
        let agent = if i % 2 == 0 { "ann" } else { "bob" };
        r.todos
            .push(todo(10 + i, minute, "agent:ann", TodoState::Done, &[]));
        r.slices
            .push(slice(10 + i, agent, Some(10 + i), minute, minute + 3, 2000));
    }
    r.now = at(12_100);
    let mut h = build(&r);
    // A wait every ten seconds for 200 hours: merged where they touch.
    h.lanes[0].waits = (0..72_000u64)
        .map(|i| Wait {
            from: Timestamp(at(0).0 + i * 10_000),
            to: Timestamp(at(0).0 + i * 10_000 + 9_000),
            on: "nothing".into(),
            reason: "nothing to take".into(),
        })
        .collect();
    let page = render_html(&h);
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    assert!(page.matches("class=\"wait ").count() <= 1200);
    assert!(
        page.contains("slices are not drawn"),
        "the lanes say what they left out"
    );
    assert!(
        page.contains("todos are not drawn"),
        "the lineage says what it left out"
    );
    assert!(page.matches("class=\"node ").count() <= 5 * 80);
}

#[test]
fn a_metric_chart_escapes_its_unit_and_draws_values_at_the_ends_of_f64() {
    use super::{MetricPoint, MetricSeries};
    let mut h = build(&records());
    let point = |value: f64, best: bool| MetricPoint {
        evidence: loopx_kernel::EvidenceId(1),
        todo: Some(loopx_kernel::TodoId(1)),
        slice: None,
        at: at(10),
        value,
        by: "agent:exec".into(),
        best,
        promoted: false,
    };
    h.metrics.push(MetricSeries {
        name: "accuracy".into(),
        unit: "<b>%".into(),
        better: Some(loopx_kernel::model::Better::Higher),
        points: vec![point(-f64::MAX, true), point(f64::MAX, true)],
    });
    let page = render_html(&h);
    assert!(page.contains("&lt;b&gt;%"), "{page}");
    assert!(!page.contains("<b>"), "{page}");
    let chart = &page[page.find("class=\"metric-chart\"").expect("a chart")..];
    let chart = &chart[..chart.find("</svg>").expect("its end")];
    assert!(!chart.contains("NaN") && !chart.contains("inf"), "{chart}");
    assert_eq!(chart.matches("<circle").count(), 2, "{chart}");
    // Two values a denormal apart: their span halves to nothing, and still draws.
    h.metrics[0].points = vec![point(0.0, true), point(5e-324, true)];
    let page = render_html(&h);
    let chart = &page[page.find("class=\"metric-chart\"").expect("a chart")..];
    assert!(
        !chart[..chart.find("</svg>").expect("its end")].contains("NaN"),
        "{chart}"
    );
}

#[test]
fn a_page_draws_at_most_fifty_metrics_and_says_how_many_are_left() {
    use super::{MetricPoint, MetricSeries};
    let mut h = build(&records());
    for i in 0..60 {
        h.metrics.push(MetricSeries {
            name: format!("m{i}"),
            unit: String::new(),
            better: None,
            points: vec![MetricPoint {
                evidence: loopx_kernel::EvidenceId(i),
                todo: None,
                slice: None,
                at: at(10),
                value: 1.0,
                by: "agent:exec".into(),
                best: false,
                promoted: false,
            }],
        });
    }
    let page = render_html(&h);
    assert_eq!(page.matches("class=\"metric-chart\"").count(), 50);
    assert!(page.contains("10 more metrics are not drawn"), "{page}");
}
