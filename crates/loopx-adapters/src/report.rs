//! The agent's ```` ```loopx-report ```` block, read from its final message (the protocol:
//! `docs/agents.md`, "What the program must do"; how it is read: `docs/design/classification.md`,
//! "Report block").

use serde::{Deserialize, Serialize};

/// Largest report block read; beyond it the block is malformed (it is evidence, not a log).
const MAX_REPORT_BYTES: usize = 256 << 10;

/// What the agent says about its slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    /// The todo is done.
    Done,
    /// Progress was made; more remains.
    Progress,
    /// It cannot go on without a decision.
    Blocked,
}

/// One piece of evidence the agent reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportEvidence {
    /// `test`, `diff`, `note`, …
    #[serde(default)]
    pub kind: Option<String>,
    /// What it shows.
    pub summary: String,
}

/// A todo the agent proposes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReportTodo {
    /// Title.
    pub title: String,
    /// Detail.
    #[serde(default)]
    pub detail: Option<String>,
    /// The role that should take it (`reviewer`, …).
    #[serde(default)]
    pub role: Option<String>,
    /// Ids of todos that must be finished first (`["t7"]`).
    #[serde(default)]
    pub after: Vec<String>,
    /// A monitor: the check loopx polls (exit 0 met, 1 not yet), with `every`.
    #[serde(default)]
    pub check: Option<String>,
    /// A monitor's cadence (`10m`).
    #[serde(default)]
    pub every: Option<String>,
    /// How long until a person is asked about a monitor not met (`48h`).
    #[serde(default)]
    pub expires: Option<String>,
    /// `changed`: a monitor met when its check's output changes.
    #[serde(default)]
    pub until: Option<String>,
    /// Todos that wait for this one, added with it: the work after a monitor.
    #[serde(default)]
    pub then: Vec<ReportTodo>,
    /// A continuation: held for the agent that proposes it, which takes it next.
    #[serde(default)]
    pub same_agent: bool,
}

/// An open todo that the planning slice re-planning an amended goal drops: it no longer fits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportDrop {
    /// Its id (`t3`).
    pub todo: String,
    /// Why it no longer fits.
    pub why: String,
}

/// An open todo that the planning slice re-planning an amended goal rewrites to fit it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportRewrite {
    /// Its id (`t3`).
    pub todo: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub priority: Option<i32>,
    /// Why.
    pub why: String,
}

impl ReportTodo {
    /// The monitor the item describes, in words; `None` without a `check`.
    pub fn monitor_words(&self) -> Option<loopx_vocab::MonitorWords> {
        Some(loopx_vocab::MonitorWords {
            check: self.check.clone()?,
            every: self.every.clone(),
            expires: self.expires.clone(),
            until: self.until.clone(),
        })
    }
}

/// A question for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportQuestion {
    /// The question.
    pub text: String,
    /// Suggested answers.
    #[serde(default)]
    pub options: Vec<String>,
}

/// A well-formed report. Unknown fields are ignored: agents embellish, and a report is still
/// worth reading when they do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Status.
    pub status: ReportStatus,
    /// One-paragraph summary.
    pub summary: String,
    /// Evidence.
    #[serde(default)]
    pub evidence: Vec<ReportEvidence>,
    /// Measurements: `[{"name": "accuracy", "value": 0.913, "unit": "%"}]` (or `{"accuracy":
    /// 0.913}`), each recorded as `metric` evidence on the slice's todo (`docs/history.md`,
    /// "Metrics"). Kept as the agent wrote it and read item by item ([`Report::measurements`]):
    /// one item that does not read costs only itself, never the rest of the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<serde_json::Value>,
    /// What the next agent on this todo needs.
    #[serde(default)]
    pub handoff: Option<String>,
    /// Proposed todos.
    #[serde(default)]
    pub next_todos: Vec<ReportTodo>,
    /// A question for a human.
    #[serde(default)]
    pub question: Option<ReportQuestion>,
    /// A change to the goal, for a person to accept (`docs/goals.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propose_goal: Option<ReportGoalProposal>,
    /// Re-planning an amended goal: open todos that no longer fit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_todos: Vec<ReportDrop>,
    /// Re-planning an amended goal: open todos rewritten to fit it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewrite_todos: Vec<ReportRewrite>,
}

/// A change to the goal an agent proposes: a person accepts or rejects it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportGoalProposal {
    /// What the objective should say.
    #[serde(default)]
    pub objective: Option<String>,
    /// The whole scope it should have.
    #[serde(default)]
    pub scope: Vec<String>,
    /// Why.
    pub why: String,
}

/// A report block that could not be read: kept as evidence of what the agent wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MalformedReport {
    /// Why it could not be read.
    pub error: String,
    /// The block's text (bounded).
    pub raw: String,
}

const FENCE: &str = "```loopx-report";

/// The last `loopx-report` block in `message`: `None` without one, `Err` when it is not a
/// valid report. Never panics, whatever the text.
pub fn parse_report(message: &str) -> Option<Result<Report, MalformedReport>> {
    // The last block that is not the prompt's own example: an agent that echoes its prompt
    // (a text CLI reading stdin through a terminal does) shows the example before its report,
    // or instead of one.
    let mut end = message.len();
    loop {
        let at = message[..end].rfind(FENCE)?;
        let body = block_body(&message[at + FENCE.len()..]);
        if !body.contains(PROTOCOL_EXAMPLE) {
            return Some(parse_body(body));
        }
        end = at;
    }
}

/// What the report protocol's example block says in place of a status.
const PROTOCOL_EXAMPLE: &str = r#""status":"done|progress|blocked""#;

/// The text of a block that starts right after its opening fence.
fn block_body(after_fence: &str) -> &str {
    // The fence line may carry trailing spaces; the block ends at the next fence (or the end,
    // when the agent was cut off).
    let body = after_fence.split_once('\n').map_or("", |(_, rest)| rest);
    let body = match body.find("```") {
        Some(end) => &body[..end],
        None => body,
    };
    body.trim()
}

fn parse_body(body: &str) -> Result<Report, MalformedReport> {
    if body.len() > MAX_REPORT_BYTES {
        return Err(MalformedReport {
            error: format!(
                "report block is {} bytes, over the {MAX_REPORT_BYTES} limit",
                body.len()
            ),
            raw: head(body),
        });
    }
    serde_json::from_str::<Report>(body).map_err(|err| MalformedReport {
        error: err.to_string(),
        raw: head(body),
    })
}

fn head(text: &str) -> String {
    let mut end = text.len().min(4096);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

impl Report {
    /// The measurements in `metrics`, each read on its own: those that read, and for each
    /// that does not, what it was and why (the writeback notes it).
    pub fn measurements(&self) -> (Vec<loopx_vocab::Metric>, Vec<(String, String)>) {
        use serde_json::Value;
        let mut read = Vec::new();
        let mut dropped = Vec::new();
        let mut one = |name: &str, item: &Value| {
            let (value, unit) = match item {
                Value::Object(fields) => (fields.get("value"), fields.get("unit")),
                value => (Some(value), None),
            };
            let unit = match unit {
                None | Some(Value::Null) => Some(""),
                Some(Value::String(unit)) => Some(unit.as_str()),
                Some(_) => None,
            };
            let metric = match (value.and_then(Value::as_f64), unit) {
                (Some(value), Some(unit)) => loopx_vocab::Metric {
                    name: name.to_owned(),
                    value,
                    unit: unit.to_owned(),
                },
                _ => {
                    let why = "a metric is {\"name\": \"…\", \"value\": NUMBER, \"unit\": \"…\"}";
                    dropped.push((clipped(item), why.to_owned()));
                    return;
                }
            };
            match metric.check() {
                Ok(()) => read.push(metric),
                Err(e) => dropped.push((clipped(item), e.to_string())),
            }
        };
        match &self.metrics {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                    one(name, item);
                }
            }
            Some(Value::Object(by_name)) => {
                for (name, item) in by_name {
                    one(name, item);
                }
            }
            Some(other) => dropped.push((
                clipped(other),
                "`metrics` is a list of {\"name\", \"value\", \"unit\"} or an object of NAME: VALUE".to_owned(),
            )),
        }
        (read, dropped)
    }
}

/// A JSON value an agent wrote, short enough for a note.
fn clipped(value: &serde_json::Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echoed_protocol_example_is_not_a_report() {
        let example =
            "```loopx-report\n{\"status\":\"done|progress|blocked\",\"summary\":\"…\"}\n```\n";
        assert!(parse_report(&format!("Your task…\n{example}looked, changed nothing\n")).is_none());
        let real = "```loopx-report\n{\"status\":\"done\",\"summary\":\"ok\"}\n```\n";
        let both = format!("{example}work\n{real}");
        let report = parse_report(&both).expect("a block").expect("valid");
        assert_eq!(report.status, ReportStatus::Done);
    }

    #[test]
    fn a_metric_that_does_not_read_costs_only_itself() {
        let block = |metrics: &str| {
            let msg = format!(
                "```loopx-report\n{{\"status\":\"done\",\"summary\":\"s\",\"next_todos\":[{{\"title\":\"t\"}}],\"metrics\":{metrics}}}\n```\n"
            );
            parse_report(&msg).expect("a block").expect("well formed")
        };
        let report = block(
            r#"[{"name":"acc","value":0.9,"unit":"%"},{"name":"acc","value":"0.9"},{"name":"lat","value":3,"unit":null},{"name":"1x","value":1}]"#,
        );
        assert_eq!(report.next_todos.len(), 1, "the rest of the report is kept");
        let (read, dropped) = report.measurements();
        let shown: Vec<String> = read.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["acc = 0.9 %", "lat = 3"]);
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(dropped[1].1.contains("is not a name"), "{dropped:?}");
        let (read, dropped) =
            block(r#"{"acc":0.9,"loss":{"value":1.5,"unit":"nats"}}"#).measurements();
        assert_eq!(read.len(), 2, "{dropped:?}");
        for odd in ["null", "\"0.9\"", "5"] {
            let (read, dropped) = block(odd).measurements();
            assert!(read.is_empty(), "{odd}");
            assert_eq!(dropped.len(), usize::from(odd != "null"), "{odd}");
        }
    }

    #[test]
    fn reads_the_full_shape() {
        let msg = "Done.\n```loopx-report\n{\"status\":\"blocked\",\"summary\":\"s\",\"evidence\":[{\"kind\":\"test\",\"summary\":\"41 passed\"}],\"handoff\":\"h\",\"next_todos\":[{\"title\":\"t\",\"detail\":\"d\",\"role\":\"reviewer\"}],\"question\":{\"text\":\"Which?\",\"options\":[\"a\",\"b\"]}}\n```\n";
        let report = parse_report(msg).expect("a block").expect("well formed");
        assert_eq!(report.status, ReportStatus::Blocked);
        assert_eq!(report.next_todos[0].role.as_deref(), Some("reviewer"));
        assert_eq!(report.question.map(|q| q.options.len()), Some(2));
    }

    #[test]
    fn last_block_wins() {
        let msg = "```loopx-report\n{\"status\":\"progress\",\"summary\":\"first\"}\n```\nlater\n```loopx-report\n{\"status\":\"done\",\"summary\":\"second\"}\n```";
        assert_eq!(
            parse_report(msg).expect("a block").expect("ok").summary,
            "second"
        );
    }

    #[test]
    fn malformed_json_is_a_value_not_a_crash() {
        let malformed =
            parse_report("```loopx-report\n{\"status\":\"done\",\n```").expect("a block");
        let err = malformed.expect_err("truncated JSON");
        assert!(err.raw.contains("status"));
        let bad_status =
            parse_report("```loopx-report\n{\"status\":\"finished\",\"summary\":\"x\"}\n```")
                .expect("a block");
        assert!(bad_status.is_err());
    }

    #[test]
    fn no_block_is_none() {
        assert_eq!(parse_report("all done, no report"), None);
    }

    #[test]
    fn unclosed_block_reads_to_the_end() {
        let msg = "```loopx-report\n{\"status\":\"done\",\"summary\":\"cut\"}";
        assert_eq!(
            parse_report(msg).expect("a block").expect("ok").summary,
            "cut"
        );
    }
}
