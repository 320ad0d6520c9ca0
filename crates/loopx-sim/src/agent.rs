//! Simulated agents: what one slice of an agent prints, how long it takes and how it ends,
//! and the `loopx report` calls it makes meanwhile. The output is Claude Code's stream-json
//! (the shapes of `shared/fixtures/claude/`), read by loopx's real parser.

use std::time::Duration;

use loopx_kernel::Timestamp;
use loopx_kernel::model::SliceKind;
use loopx_pty::SliceExit;
use serde::Serialize;
use serde_json::json;

/// What an agent does in one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Act {
    /// Finishes its todo (or, planning, declares the goal met).
    Completes,
    /// Makes progress and hands off.
    Progress,
    /// Hits the vendor's usage limit, with a reset in hours.
    UsageLimit,
    /// Finds its credentials refused.
    NotLoggedIn,
    /// Meets server errors it retries, then gives up.
    Transient,
    /// Prints nothing more after starting, until loopx stops it.
    Hangs,
    /// Dies of a signal halfway.
    Crashes,
    /// Prints bytes that are no stream at all.
    Garbage,
    /// Tries to write reports it may not: under an old epoch, as another agent, about another
    /// todo, and after its slice ended. Each must be refused.
    ForgedReport,
    /// Asks a person a question (`loopx report ask`).
    Asks,
}

impl Act {
    pub fn as_str(self) -> &'static str {
        match self {
            Act::Completes => "completes",
            Act::Progress => "progress",
            Act::UsageLimit => "usage_limit",
            Act::NotLoggedIn => "not_logged_in",
            Act::Transient => "transient",
            Act::Hangs => "hangs",
            Act::Crashes => "crashes",
            Act::Garbage => "garbage",
            Act::ForgedReport => "forged_report",
            Act::Asks => "asks",
        }
    }
}

/// A `loopx report` the agent makes while its slice runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Evidence,
    Handoff,
    /// `loopx report done`.
    Done,
    Ask,
    /// A write the kernel must refuse.
    Forged(Forgery),
}

/// How a forged report lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgery {
    /// Its own todo under the epoch before the current one.
    StaleEpoch,
    /// Its own slice, in another agent's name.
    OtherAgent,
    /// Its own slice, about a todo it does not hold.
    OtherTodo,
    /// After its slice ended (a process the agent left behind).
    AfterEnd,
}

/// One slice of a simulated agent, decided when it starts.
#[derive(Debug, Clone)]
pub struct Script {
    /// From the start to the agent's end (or to loopx stopping it).
    pub duration: Duration,
    pub output: Vec<u8>,
    pub exit: SliceExit,
    /// Tokens the stream reports (what loopx can charge).
    pub tokens: u64,
    /// `loopx report` calls, at offsets from the start (an offset past `duration` is made by a
    /// process the agent left behind).
    pub reports: Vec<(Duration, Report)>,
    /// The vendor's reset, for a usage limit (true time).
    pub reset: Option<Timestamp>,
    /// loopx stopped the slice at its token ceiling, before the agent finished.
    pub cut_at_ceiling: bool,
}

/// What a script needs to know about its slice and the world.
#[derive(Debug, Clone)]
pub struct Setting {
    pub kind: SliceKind,
    pub has_todo: bool,
    pub max_time: Duration,
    pub idle: Duration,
    /// The true time now (the vendor's clock).
    pub now: Timestamp,
    /// A slice on an experiment's todo: what it does there.
    pub experiment: Option<crate::experiments::Step>,
    /// The slice's token ceiling (the decision's), if any.
    pub max_tokens: Option<u64>,
    /// People change the code under the agents (`[people] edit_per_day`): an agent on a todo
    /// then runs the tests only in some slices, and may say done on the tests it ran before.
    pub edits: bool,
    /// Where people amend the goal (`[people] amend_per_day`): the open todos the agent may
    /// name in `drop_todos` and `rewrite_todos`, and whether this is the planning slice that
    /// re-plans (the only one whose are taken; any other slice's must be refused).
    pub replan: Option<Replan>,
    /// With executor/reviewer pairs: the next round this slice's todo proposes once finished
    /// (a `next_todos` entry, `handbacks.rs`).
    pub handback: Option<serde_json::Value>,
}

/// What an agent may re-plan, where people amend the goal.
#[derive(Debug, Clone)]
pub struct Replan {
    /// The planning slice after an amendment, while re-planning is due.
    pub replanning: bool,
    /// Open todos other than the slice's own, by number.
    pub open: Vec<u64>,
}

/// Where people amend the goal, the share of finished todos whose agent proposes a follow-up
/// for itself (`next_todos` with `same_agent`), and of slices other than the re-planning one
/// that try to drop or rewrite a todo anyway.
const CONTINUE_PERCENT: u32 = 20;
const STRAY_REPLAN_PERCENT: u32 = 10;

/// Draws the script of one slice.
pub fn script(
    act: Act,
    setting: &Setting,
    behaviour: &crate::scenario::Behaviour,
    reset: Option<Timestamp>,
    rng: &mut fastrand::Rng,
) -> Script {
    let work =
        Duration::from_secs(60 * rng.u64(behaviour.work_minutes[0]..=behaviour.work_minutes[1]))
            .max(Duration::from_secs(20));
    let tokens = rng.u64(behaviour.tokens[0]..=behaviour.tokens[1]);
    let mut out = Stream::new(setting);
    let mut script = Script {
        duration: work,
        output: Vec::new(),
        exit: SliceExit::Exited(0),
        tokens,
        reports: Vec::new(),
        reset: None,
        cut_at_ceiling: false,
    };
    let half = work / 2;
    match act {
        Act::Completes | Act::Progress | Act::Asks | Act::ForgedReport => {
            let done = act == Act::Completes;
            out.text("Working on it.");
            if setting.has_todo {
                script.reports.push((half, Report::Evidence));
                match act {
                    Act::Progress => script.reports.push((work * 3 / 4, Report::Handoff)),
                    Act::Asks => script.reports.push((work * 3 / 4, Report::Ask)),
                    Act::ForgedReport => {
                        let lies = [Forgery::StaleEpoch, Forgery::OtherAgent, Forgery::OtherTodo];
                        script
                            .reports
                            .push((work * 3 / 4, Report::Forged(lies[rng.usize(..lies.len())])));
                        script.reports.push((
                            work + Duration::from_secs(60),
                            Report::Forged(Forgery::AfterEnd),
                        ));
                    }
                    // Half of the finishers say so through the CLI too, before the end.
                    _ if rng.bool() => script.reports.push((work * 9 / 10, Report::Done)),
                    _ => {}
                }
            }
            let status = if done { "done" } else { "progress" };
            // Drawn only where people change the code: the other scenarios' seeds replay as
            // before.
            let tested = !(setting.edits && setting.has_todo) || rng.u32(0..100) < TESTED_PERCENT;
            let mut report = final_report(status, proposed(setting, done), tested);
            if let (true, true, Some(next)) = (done, setting.has_todo, &setting.handback) {
                report["next_todos"]
                    .as_array_mut()
                    .expect("next_todos is a list")
                    .push(next.clone());
            }
            if let Some(replan) = &setting.replan {
                replanned(&mut report, replan, done && setting.has_todo, rng);
            }
            out.result(&final_message(&report), tokens);
        }
        Act::UsageLimit => {
            script.duration = work.min(Duration::from_secs(120));
            let hours = rng.u64(behaviour.limit_reset_hours[0]..=behaviour.limit_reset_hours[1]);
            // Vendors report resets to the second; a limit already in force keeps its reset.
            let reset = reset.unwrap_or(Timestamp((setting.now.0 / 1000 + hours * 3600) * 1000));
            script.reset = Some(reset);
            script.tokens = tokens / 20;
            out.limit(reset, script.tokens);
        }
        Act::NotLoggedIn => {
            script.duration = Duration::from_secs(5);
            script.tokens = 0;
            out.line(
                json!({"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,
                "retry_delay_ms":600,"error_status":401,"error":"authentication_failed"}),
            );
        }
        Act::Transient => {
            script.duration = work.min(Duration::from_secs(180));
            script.tokens = 0;
            for attempt in 1..=3 {
                out.line(
                    json!({"type":"system","subtype":"api_retry","attempt":attempt,
                    "max_retries":3,"retry_delay_ms":600,"error_status":529,"error":"overloaded"}),
                );
            }
            out.line(json!({"type":"result","subtype":"success","is_error":true,
                "api_error_status":529,"duration_ms":1000,"num_turns":1,
                "result":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
                "session_id":SESSION,"total_cost_usd":0.0,
                "usage":{"input_tokens":0,"output_tokens":0}}));
            script.exit = SliceExit::Exited(1);
        }
        Act::Hangs => {
            script.tokens = 0;
            // loopx stops it at its idle limit or its wall time, whichever comes first.
            (script.duration, script.exit) = match setting.idle < setting.max_time {
                true => (setting.idle, SliceExit::Idle),
                false => (setting.max_time, SliceExit::TimedOut),
            };
        }
        Act::Crashes => {
            script.duration = half.max(Duration::from_secs(10));
            script.tokens = 0;
            out.text("Let me look at the failing test.");
            script.exit = SliceExit::Signaled(nix::sys::signal::Signal::SIGSEGV);
        }
        Act::Garbage => {
            script.tokens = 0;
            let len = rng.usize(100..20_000);
            let bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            out.bytes.extend_from_slice(&bytes);
            script.exit = SliceExit::Exited(rng.i32(0..3));
        }
    }
    // A slice cannot outlast its wall-time limit: loopx stops it there.
    if script.duration > setting.max_time {
        script.duration = setting.max_time;
        script.exit = SliceExit::TimedOut;
        out.truncate_to_start();
        script.tokens = 0;
    }
    // loopx stops a slice once the usage it reports reaches its token ceiling. An agent spends
    // as it works, evenly: it gets that far in that share of its time, and says no more.
    if let Some(max) = setting.max_tokens
        && matches!(
            act,
            Act::Completes | Act::Progress | Act::Asks | Act::ForgedReport
        )
        && script.exit == SliceExit::Exited(0)
        && script.tokens >= max
    {
        let share = max as f64 / script.tokens.max(1) as f64;
        script.duration = script.duration.mul_f64(share).max(Duration::from_secs(1));
        script.tokens = max;
        script.exit = SliceExit::Stopped(loopx_pty::StopReason::Requested);
        script.cut_at_ceiling = true;
        out.truncate_to_start();
        out.spent(max);
    }
    // A stopped agent reports nothing more; only a process it left behind could.
    let end = script.duration;
    script
        .reports
        .retain(|(at, r)| *at < end || *r == Report::Forged(Forgery::AfterEnd));
    script.output = out.bytes;
    script
}

const SESSION: &str = "5e1d6c2a-77b0-4f51-9c0e-5b2a8d4f1e90";

/// The todos a finished `Run experiment N` proposes: its evaluation, after a monitor of the
/// job (loopx) or as a plain todo (the timer baseline).
fn proposed(setting: &Setting, done: bool) -> serde_json::Value {
    use crate::experiments::{Step, check_of, evaluate_title};
    match setting.experiment {
        Some(Step::Run { n, every }) if done => {
            let evaluate = json!({"title": evaluate_title(n)});
            match every {
                Some(every) => json!([{
                    "title": format!("Wait for experiment {n}'s job"),
                    "check": check_of(n),
                    "every": format!("{}s", every.as_secs()),
                    "then": [evaluate],
                }]),
                None => json!([evaluate]),
            }
        }
        _ => json!([]),
    }
}

/// Where people change the code, the share of an agent's slices on a todo that run the tests.
const TESTED_PERCENT: u32 = 60;

/// The agent's report block, with a test result when the agent ran the tests in this slice.
fn final_report(status: &str, next_todos: serde_json::Value, tested: bool) -> serde_json::Value {
    let evidence = match tested {
        true => json!([{"kind": "test", "summary": "simulated tests pass"}]),
        false => json!([]),
    };
    json!({
        "status": status,
        "summary": format!("Simulated work ({status})."),
        "evidence": evidence,
        "handoff": "Continue from the simulated notes.",
        "next_todos": next_todos,
    })
}

/// Where people amend the goal: the re-planning slice drops one open todo and rewrites
/// another; now and then another slice tries the same (loopx must refuse it); and an agent
/// that finished its todo sometimes proposes a follow-up for itself.
fn replanned(
    report: &mut serde_json::Value,
    replan: &Replan,
    finished: bool,
    rng: &mut fastrand::Rng,
) {
    let tries = replan.replanning || rng.u32(0..100) < STRAY_REPLAN_PERCENT;
    if tries && !replan.open.is_empty() {
        let drop = replan.open[rng.usize(..replan.open.len())];
        report["drop_todos"] =
            json!([{"todo": format!("t{drop}"), "why": "the amended goal no longer needs it"}]);
        if let Some(&rewrite) = replan.open.iter().find(|&&t| t != drop) {
            report["rewrite_todos"] = json!([{"todo": format!("t{rewrite}"),
                "title": format!("Simulated todo {rewrite}, re-planned"), "priority": 1,
                "why": "the amended goal asks for it differently"}]);
        }
    }
    if finished && rng.u32(0..100) < CONTINUE_PERCENT {
        let next = report["next_todos"]
            .as_array_mut()
            .expect("next_todos is a list");
        next.push(json!({"title": "Simulated follow-up", "same_agent": true}));
    }
}

/// The agent's final message: a sentence and its report block.
fn final_message(report: &serde_json::Value) -> String {
    format!("Done for this slice.\n\n```loopx-report\n{report}\n```")
}

/// Claude Code's stream-json, line by line.
struct Stream {
    bytes: Vec<u8>,
    /// Where the lines after `system/init` begin.
    start: usize,
}

impl Stream {
    fn new(setting: &Setting) -> Stream {
        let mut s = Stream {
            bytes: Vec::new(),
            start: 0,
        };
        s.line(
            json!({"type":"system","subtype":"init","cwd":"/sim","session_id":SESSION,
            "tools":["Bash","Read","Edit"],"model":"claude-sim","permissionMode":"acceptEdits",
            "apiKeySource":"none","claude_code_version":"2.1.260",
            "kind": format!("{:?}", setting.kind)}),
        );
        s.start = s.bytes.len();
        s
    }

    fn line(&mut self, value: serde_json::Value) {
        self.bytes.extend_from_slice(value.to_string().as_bytes());
        self.bytes.extend_from_slice(b"\r\n");
    }

    fn text(&mut self, text: &str) {
        self.line(
            json!({"type":"assistant","message":{"id":"msg_sim","type":"message",
            "role":"assistant","model":"claude-sim","content":[{"type":"text","text":text}],
            "usage":{"input_tokens":0,"output_tokens":0}},"session_id":SESSION}),
        );
    }

    fn result(&mut self, message: &str, tokens: u64) {
        self.text(message);
        let input = tokens * 3 / 4;
        self.line(json!({"type":"result","subtype":"success","is_error":false,
            "duration_ms":1000,"num_turns":3,"result":message,"stop_reason":"end_turn",
            "session_id":SESSION,"total_cost_usd":0.0,
            "usage":{"input_tokens":input,"output_tokens":tokens - input,
                "cache_creation_input_tokens":0,"cache_read_input_tokens":0}}));
    }

    fn limit(&mut self, reset: Timestamp, tokens: u64) {
        let secs = reset.0 / 1000;
        self.line(
            json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected",
            "resetsAt":secs,"rateLimitType":"five_hour","overageStatus":"rejected",
            "isUsingOverage":false},"session_id":SESSION}),
        );
        let input = tokens * 3 / 4;
        self.line(json!({"type":"result","subtype":"success","is_error":true,
            "api_error_status":429,"duration_ms":1000,"num_turns":1,
            "result":"You've hit your session limit","stop_reason":"stop_sequence",
            "session_id":SESSION,"total_cost_usd":0.0,
            "usage":{"input_tokens":input,"output_tokens":tokens - input,
                "cache_creation_input_tokens":0,"cache_read_input_tokens":0}}));
    }

    /// An assistant message that used `tokens`, and nothing final (Claude Code reports each
    /// message's usage as it comes).
    fn spent(&mut self, tokens: u64) {
        let input = tokens * 3 / 4;
        self.line(
            json!({"type":"assistant","message":{"id":"msg_sim_spent","type":"message",
            "role":"assistant","model":"claude-sim","content":[{"type":"text","text":"Still working."}],
            "usage":{"input_tokens":input,"output_tokens":tokens - input}},"session_id":SESSION}),
        );
    }

    /// Keeps only `system/init`: a slice stopped at its wall time printed nothing final.
    fn truncate_to_start(&mut self) {
        self.bytes.truncate(self.start);
    }
}

#[cfg(test)]
mod tests {
    use loopx_adapters::{AdapterCatalog, DoneWhen, Outcome, Parser, classify_for};

    use super::*;

    fn classify(script: &Script) -> Outcome {
        let adapter = AdapterCatalog::builtin()
            .load("claude-code")
            .expect("loads")
            .expect("the shipped adapter");
        let mut parser = Parser::for_adapter(&adapter);
        let now = jiff::Timestamp::from_millisecond(1_790_000_000_000).expect("time");
        parser.feed(&script.output, now, &mut |_| {});
        parser.finish(now);
        let code = match script.exit {
            SliceExit::Exited(code) => Some(code),
            _ => None,
        };
        classify_for(&parser.into_summary(), code, &DoneWhen::Report).outcome
    }

    /// Each act reads, through loopx's own parser and classifier, as what it stands for: the
    /// simulation drives the real judging, so a script that said something else would test
    /// nothing.
    #[test]
    fn each_act_classifies_as_what_it_stands_for() {
        let setting = Setting {
            kind: SliceKind::Work,
            has_todo: true,
            max_time: Duration::from_secs(3600),
            idle: Duration::from_secs(300),
            now: Timestamp(1_790_000_000_000),
            experiment: None,
            max_tokens: None,
            edits: false,
            replan: None,
            handback: None,
        };
        let behaviour = crate::scenario::Behaviour::default();
        let mut rng = fastrand::Rng::with_seed(7);
        for (act, expected) in [
            (Act::Completes, Some(Outcome::Completed)),
            (Act::Progress, Some(Outcome::Progress)),
            (Act::UsageLimit, Some(Outcome::UsageLimited)),
            (Act::NotLoggedIn, Some(Outcome::AuthFailed)),
            (Act::Transient, Some(Outcome::Transient)),
            (Act::Crashes, None),
            (Act::Garbage, None),
            (Act::Asks, Some(Outcome::Progress)),
        ] {
            let s = script(act, &setting, &behaviour, None, &mut rng);
            let got = classify(&s);
            match expected {
                Some(want) => assert_eq!(got, want, "{act:?}"),
                None => assert_eq!(got, Outcome::Failed, "{act:?}"),
            }
        }
        let hang = script(Act::Hangs, &setting, &behaviour, None, &mut rng);
        assert_eq!(hang.exit, SliceExit::Idle);
        assert_eq!(hang.duration, setting.idle);
    }
}
