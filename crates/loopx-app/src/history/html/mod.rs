//! The history as one self-contained HTML page (`goal history --html FILE`,
//! `docs/history.md`): inline CSS and SVG, no network, no script. Every text that comes from
//! the store (titles, reasons, questions, answers: agent-written) goes through [`esc`], so an
//! agent cannot put markup into the page. The page stays small for a 200-hour store: waits
//! closer than a pixel are merged, and the lanes and the lineage draw at most a bounded number
//! of shapes, with a note of what was left out.

mod lanes;
mod lineage;
mod metrics;
mod tables;

use std::fmt::Write;
use std::time::Duration;

use super::GoalHistory;

/// The page, complete (`<!DOCTYPE html>` to `</html>`).
pub fn render_html(h: &GoalHistory) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = format!(
        "{} — {}",
        h.goal,
        loopx_kernel::limits::clip(&h.objective, 80)
    );
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title><style>{CSS}</style></head><body>\n",
        esc(&title)
    );
    let from = h.since.unwrap_or(h.started_at);
    let _ = writeln!(
        out,
        "<header><h1>Goal {} <span class=\"status\">{}</span></h1><p class=\"objective\">{}</p>\
         <p class=\"span\">From {} to {} ({})</p></header>",
        esc(&h.goal.to_string()),
        esc(h.status.as_str()),
        esc(&h.objective),
        esc(&from.to_string()),
        esc(&h.now.to_string()),
        esc(&ms(h.now.0.saturating_sub(from.0)))
    );
    section(&mut out, "lanes", "Lanes", &lanes::lanes(h));
    section(&mut out, "cost", "Cost", &tables::cost(&h.cost));
    section(
        &mut out,
        "progress",
        "Progress",
        &tables::progress(&h.progress),
    );
    section(
        &mut out,
        "metrics",
        "Metrics",
        &metrics::metrics(&h.metrics),
    );
    section(
        &mut out,
        "lineage",
        "Lineage",
        &lineage::lineage(&h.lineage),
    );
    section(&mut out, "questions", "Questions", &tables::questions(h));
    out.push_str("</body></html>\n");
    out
}

/// The page's one stylesheet, exactly as its `<style>` element holds it: a server that shows
/// the page under a Content-Security-Policy allows this text by its hash (the board), never
/// inline styles at large.
pub fn page_style() -> &'static str {
    CSS
}

fn section(out: &mut String, id: &str, title: &str, body: &str) {
    let _ = write!(
        out,
        "<section id=\"{id}\"><h2>{title}</h2>\n{body}</section>\n"
    );
}

/// Text made safe for HTML and SVG, in text and in quoted attributes alike.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newline are not allowed in HTML text.
            c if c.is_control() && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn ms(ms: u64) -> String {
    loopx_kernel::time::short_duration(Duration::from_millis(ms))
}

/// `12.3k`: a token count in a few characters.
fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// One stylesheet: the colours of outcomes, kinds, waits and lineage nodes live here only.
const CSS: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.4em;margin:0}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin-top:1.6em}
.status{font-size:.7em;background:#eee;border-radius:4px;padding:1px 6px;vertical-align:middle}
.objective{margin:.3em 0;white-space:pre-wrap}.span,.note{color:#666;font-size:.9em}
table{border-collapse:collapse;margin:.4em 1.5em .8em 0;display:inline-table;vertical-align:top}
caption{text-align:left;font-weight:600;padding-bottom:.2em}
td,th{border-bottom:1px solid #e4e4e4;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
td.words{text-align:left;white-space:pre-wrap}
.scroll{overflow-x:auto}svg text{font:11px system-ui,sans-serif;fill:#222}
.axis line{stroke:#ccc}.axis text{fill:#666}.lane-name{font-weight:600}
.slice{fill:#888;stroke:none}.o-completed{fill:#2e9d4a}.o-progress{fill:#4a7fd0}
.o-asked{fill:#9b59b6}.o-unchanged{fill:#b8b8b8}.o-unverified{fill:#d4b400}
.o-failed,.o-timed_out,.o-stalled,.o-spawn_failed,.o-auth_failed{fill:#d0413a}
.o-usage_limited,.o-transient,.o-context_overflow{fill:#e08a1e}.o-interrupted{fill:#6d4c41}
.o-running{fill:#9cc3ff}.k-plan{stroke:#111;stroke-width:1.5}.k-repair{stroke:#e0218a;stroke-width:2}
.wait{fill:#ccc}.w-question{fill:#c39bd3}.w-monitor{fill:#76c7c0}.w-window,.w-hold{fill:#f0b37e}
.w-share,.w-pacing{fill:#f5d76e}.w-backoff,.w-rest{fill:#e6a0a0}.w-nothing{fill:#ddd}
.q-span{fill:#c39bd3}.m-span{fill:#76c7c0}.q-open{fill:#e8d6f0}.amend{stroke:#333;stroke-dasharray:3 2}.landing{stroke:#2e9d4a;stroke-width:2}
.chart rect{fill:#4a7fd0}
.metric-chart .point{fill:#4a7fd0;opacity:.75}.metric-chart .best{fill:#2e9d4a;opacity:1}
.metric-chart .promoted{stroke:#111;stroke-width:2}.best-line{fill:none;stroke:#2e9d4a;stroke-width:1.5}
.node rect{fill:#fff;stroke:#555}.n-revision rect{fill:#f3f3f3}.n-todo rect{fill:#eef4ff}
.n-slice rect{fill:#fff;rx:9}.n-evidence rect{fill:#f6fbef}.n-landing rect{fill:#dff3e3;stroke:#2e9d4a}
.node.dead rect{stroke-dasharray:4 3;stroke:#aaa;fill:#f7f7f7}.node.dead text{fill:#999}
.node.stale rect{stroke:#c00;stroke-width:2;fill:#fdecec}.node.stale text{fill:#a00}
.edge{fill:none;stroke:#999;stroke-width:1}.e-dropped,.e-replanned{stroke-dasharray:5 4;stroke:#bbb}
.e-next,.e-after{stroke:#4a7fd0}.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:middle}
";
