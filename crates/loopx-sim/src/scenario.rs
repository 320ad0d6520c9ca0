//! The scenario file (TOML): the agents and their accounts, the todos, what agents and people
//! do, and which faults to inject. Every key is documented in `docs/design/simulation.md`.

use std::path::Path;
use std::time::Duration;

use loopx_kernel::Timestamp;
use serde::Deserialize;

use crate::errors::SimError;

/// A whole scenario, as read and checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub sim: SimSection,
    #[serde(rename = "account")]
    pub accounts: Vec<Account>,
    #[serde(rename = "agent")]
    pub agents: Vec<AgentSpec>,
    /// Required without `[[goal]]`; with goals it may be left out (it is then their sum).
    #[serde(default)]
    pub todos: Option<Todos>,
    /// Several active goals, each with its todos (`[[goal]]`); none: one goal with every todo.
    #[serde(rename = "goal", default)]
    pub goals: Vec<GoalSpec>,
    #[serde(default)]
    pub behaviour: Behaviour,
    #[serde(default)]
    pub people: People,
    #[serde(default)]
    pub faults: Faults,
    /// Long experiments: agents start jobs that run for hours, and wait for them.
    #[serde(default)]
    pub experiments: Option<Experiments>,
    /// Executor/reviewer pairs handing work back and forth (`handbacks.rs`).
    #[serde(default)]
    pub handbacks: Option<Handbacks>,
}

/// Executor/reviewer pairs (issue 50): the scenario's todos are the executors' (role
/// `executor`); each one finished is followed by its review (role `reviewer`, after it), and a
/// finished review hands a fix back to the executors in `back_percent` of cases, and so on.
/// The agents take the role given in their `[[agent]] role`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handbacks {
    /// The share of finished reviews that hand a fix back, in percent.
    pub back_percent: u32,
    /// `[limits] handbacks` in the project's `loopx.toml` (loopx's default: 4).
    #[serde(default = "default_handbacks")]
    pub limit: u32,
}

fn default_handbacks() -> u32 {
    4
}

/// Long experiments (issue 28): a todo per experiment, `Run experiment N`. The agent that runs
/// it starts a job that runs for hours (it may fail) and proposes `Evaluate experiment N` after
/// it: with loopx, as a monitor the agent reports (its check is the job's state, polled every
/// `every`) with the evaluation in its `then`; under a timer baseline as a plain todo, which the
/// agents look at each time their timer wakes them. An evaluation slice before its job ended
/// achieves nothing (a wasted look).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiments {
    pub count: u32,
    /// How long a job runs, in hours: `[min, max]`.
    pub job_hours: [f64; 2],
    /// The share of jobs that fail, in percent (the check reports the end either way).
    #[serde(default)]
    pub fail_percent: u32,
    /// How often the monitors the agents report are polled (`10m`).
    #[serde(default = "default_every")]
    pub every: String,
}

fn default_every() -> String {
    "10m".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimSection {
    /// How long to simulate, at most (the run ends sooner when the goal is done).
    pub hours: f64,
    /// The wall-clock time the simulation starts at (RFC 3339).
    pub start: String,
    /// The agents can finish the goal: not finishing it is a failure.
    pub expect_done: bool,
}

impl Default for SimSection {
    fn default() -> Self {
        SimSection {
            hours: 24.0,
            start: "2026-12-01T00:00:00Z".to_owned(),
            expect_done: true,
        }
    }
}

/// A vendor subscription shared by agents: loopx's window on it, and the vendor's own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    pub name: String,
    /// The window's period (`5h`).
    pub window: String,
    /// Tokens per window, as the profiles tell loopx.
    pub tokens: u64,
    /// What the vendor really allows per window (default: the same): a vendor stricter than
    /// the profile makes agents hit usage limits with a reset time.
    #[serde(default)]
    pub vendor_tokens: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    pub account: String,
    #[serde(default = "default_max_time")]
    pub max_time: String,
    #[serde(default = "default_idle")]
    pub idle_timeout: String,
    /// Pacing (`[quota] slices_per_hour`), if any.
    #[serde(default)]
    pub slices_per_hour: Option<u32>,
    /// The agent's role (`loopx agent set --role`): `executor` or `reviewer` with
    /// `[handbacks]`.
    #[serde(default)]
    pub role: Option<String>,
}

fn default_max_time() -> String {
    "30m".to_owned()
}

fn default_idle() -> String {
    "5m".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todos {
    pub count: u32,
}

/// One of several active goals (`[[goal]]`, issue 49): its priority and share (as `loopx goal
/// start --priority --share` sets them), its todos, and how often a person's question holds
/// it back (a gate blocking only this goal, answered after `[people] answer_after`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    #[serde(default)]
    pub priority: i32,
    #[serde(default = "default_share")]
    pub share: f64,
    pub todos: u32,
    #[serde(default)]
    pub hold_per_day: f64,
}

fn default_share() -> f64 {
    1.0
}

/// Relative weights of what an agent does in a slice, and how long and how much it takes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Behaviour {
    pub completes: u32,
    pub progress: u32,
    pub usage_limit: u32,
    pub not_logged_in: u32,
    pub transient: u32,
    pub hangs: u32,
    pub crashes: u32,
    pub garbage: u32,
    pub forged_report: u32,
    pub asks: u32,
    /// How long a slice's work takes, in minutes: `[min, max]`.
    pub work_minutes: [u64; 2],
    /// Tokens a slice uses: `[min, max]`.
    pub tokens: [u64; 2],
    /// When a usage limit the agent hits resets, in hours from the hit: `[min, max]`.
    pub limit_reset_hours: [u64; 2],
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            completes: 40,
            progress: 30,
            usage_limit: 2,
            not_logged_in: 1,
            transient: 4,
            hangs: 2,
            crashes: 2,
            garbage: 2,
            forged_report: 2,
            asks: 2,
            work_minutes: [3, 40],
            tokens: [2_000, 40_000],
            limit_reset_hours: [1, 5],
        }
    }
}

/// The people who answer gates.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct People {
    /// How long after a question is asked someone answers it: `[min, max]` durations.
    pub answer_after: [String; 2],
    /// How often, per day, a person takes a claimed todo back from its agent
    /// (`loopx todo release`).
    pub take_back_per_day: f64,
    /// How often, per day, a person amends the goal's objective (`loopx goal amend`).
    pub amend_per_day: f64,
    /// How often, per day, a person commits a change to a file in the goal's scope. Not zero:
    /// the project is a git repository, the goal's scope is `src/**`, and `loopx.toml` asks
    /// for a fresh test result before an agent's done is taken (`[evidence] done_needs`).
    pub edit_per_day: f64,
}

impl Default for People {
    fn default() -> Self {
        People {
            answer_after: ["5m".to_owned(), "3h".to_owned()],
            take_back_per_day: 0.0,
            amend_per_day: 0.0,
            edit_per_day: 0.0,
        }
    }
}

/// Faults, as probabilities per store write and rates per simulated day.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// A write finds the store busy.
    pub store_busy: f64,
    /// A write finds the disk full.
    pub disk_full: f64,
    /// The supervisor dies at one of its writes (before or after it commits).
    pub crash_per_write: f64,
    /// The supervisor is killed between steps, this many times a day.
    pub crashes_per_day: f64,
    /// How long a killed supervisor stays down: `[min, max]` durations.
    pub restart_after: [String; 2],
    /// The wall clock steps this many times a day.
    pub clock_steps_per_day: f64,
    /// The largest step, either way (`2h`).
    pub clock_step: String,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            store_busy: 0.0,
            disk_full: 0.0,
            crash_per_write: 0.0,
            crashes_per_day: 0.0,
            restart_after: ["10s".to_owned(), "10m".to_owned()],
            clock_steps_per_day: 0.0,
            clock_step: "1h".to_owned(),
        }
    }
}

/// A scenario with its durations read.
#[derive(Debug, Clone)]
pub struct Checked {
    pub scenario: Scenario,
    pub start: Timestamp,
    pub hours: f64,
    pub windows: Vec<Duration>,
    pub max_time: Vec<Duration>,
    pub idle: Vec<Duration>,
    pub answer_after: [Duration; 2],
    pub restart_after: [Duration; 2],
    pub clock_step: Duration,
    /// `[experiments] every`.
    pub monitor_every: Duration,
    /// `[experiments] job_hours`.
    pub job_hours: [Duration; 2],
    /// A timer baseline (`loopx sim --baseline timer:15m`): every agent wakes this often and
    /// runs a slice to look, with no monitors. `None`: loopx.
    pub baseline: Option<Duration>,
}

impl Scenario {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Checked, SimError> {
        let text = std::fs::read_to_string(path).map_err(|source| SimError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(&text, &path.display().to_string())
    }

    /// Reads and checks a scenario's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Checked, SimError> {
        let scenario: Scenario = toml::from_str(text).map_err(|e| SimError::Scenario {
            origin: origin.to_owned(),
            why: e.to_string(),
        })?;
        scenario.check(origin)
    }

    fn check(self, origin: &str) -> Result<Checked, SimError> {
        let bad = |why: String| SimError::Scenario {
            origin: origin.to_owned(),
            why,
        };
        let start = Timestamp::parse_rfc3339(&self.sim.start).ok_or_else(|| {
            bad(format!(
                "`sim.start` = \"{}\" is not an RFC 3339 time such as \"2026-12-01T00:00:00Z\"",
                self.sim.start
            ))
        })?;
        if !(self.sim.hours > 0.0 && self.sim.hours <= 10_000.0) {
            return Err(bad(format!(
                "`sim.hours` = {} must be more than 0 and at most 10000",
                self.sim.hours
            )));
        }
        let windows = self.check_accounts().map_err(bad)?;
        let [max_time, idle] = self.check_agents().map_err(bad)?;
        let (monitor_every, job_hours) = self.check_work().map_err(bad)?;
        self.check_rates().map_err(bad)?;
        self.check_handbacks().map_err(bad)?;
        let f = &self.faults;
        let answer_after = range("people.answer_after", &self.people.answer_after).map_err(bad)?;
        let restart_after = range("faults.restart_after", &f.restart_after).map_err(bad)?;
        let clock_step = duration("faults.clock_step", &f.clock_step).map_err(bad)?;
        Ok(Checked {
            start,
            hours: self.sim.hours,
            windows,
            max_time,
            idle,
            answer_after,
            restart_after,
            clock_step,
            monitor_every,
            job_hours,
            baseline: None,
            scenario: self,
        })
    }

    /// The accounts: their names, and each one's window.
    fn check_accounts(&self) -> Result<Vec<Duration>, String> {
        if self.accounts.is_empty() || self.agents.is_empty() {
            return Err("a scenario needs at least one [[account]] and one [[agent]]".to_owned());
        }
        let mut windows = Vec::new();
        for (i, a) in self.accounts.iter().enumerate() {
            check_id(&a.name).map_err(|why| format!("`account[{i}].name`: {why}"))?;
            let window = duration(&format!("account[{i}].window"), &a.window)?;
            if window < Duration::from_secs(60) || a.tokens == 0 {
                return Err(format!(
                    "`account[{i}]`: the window must be at least a minute and `tokens` more than 0"
                ));
            }
            windows.push(window);
        }
        Ok(windows)
    }

    /// The agents: their names, the account each uses, and each one's `max_time` and
    /// `idle_timeout`.
    fn check_agents(&self) -> Result<[Vec<Duration>; 2], String> {
        let (mut max_time, mut idle) = (Vec::new(), Vec::new());
        for (i, a) in self.agents.iter().enumerate() {
            check_id(&a.name).map_err(|why| format!("`agent[{i}].name`: {why}"))?;
            if !self.accounts.iter().any(|acct| acct.name == a.account) {
                return Err(format!(
                    "`agent[{i}].account` = \"{}\" names no [[account]]",
                    a.account
                ));
            }
            if self.agents[..i].iter().any(|b| b.name == a.name) {
                return Err(format!("`agent[{i}].name` = \"{}\" is used twice", a.name));
            }
            max_time.push(duration(&format!("agent[{i}].max_time"), &a.max_time)?);
            idle.push(duration(
                &format!("agent[{i}].idle_timeout"),
                &a.idle_timeout,
            )?);
        }
        Ok([max_time, idle])
    }

    /// The work: the todo count, and the experiments (how often their monitors look, and how
    /// long their jobs run).
    fn check_work(&self) -> Result<(Duration, [Duration; 2]), String> {
        self.check_goals()?;
        let least = u32::from(self.experiments.is_none());
        let count = self.todo_count();
        if count < least || count > 100_000 {
            return Err(format!(
                "`todos.count` = {count} must be between {least} and 100000"
            ));
        }
        let Some(e) = &self.experiments else {
            return Ok((Duration::from_secs(600), [Duration::ZERO; 2]));
        };
        let [lo, hi] = e.job_hours;
        if e.count == 0 || e.count > 10_000 || !(lo >= 0.0 && lo <= hi && hi <= 10_000.0) {
            return Err(format!(
                "`experiments`: `count` = {} must be between 1 and 10000 and `job_hours` = [{lo}, {hi}] a [min, max] of hours",
                e.count
            ));
        }
        if e.fail_percent > 100 {
            return Err(format!(
                "`experiments.fail_percent` = {} is more than 100",
                e.fail_percent
            ));
        }
        let every = duration("experiments.every", &e.every)?;
        Ok((every, [lo, hi].map(|h| Duration::from_secs_f64(h * 3600.0))))
    }

    /// The behaviour weights and ranges, the fault probabilities and the per-day rates.
    fn check_rates(&self) -> Result<(), String> {
        let b = &self.behaviour;
        if b.weights().iter().all(|(_, w)| *w == 0) {
            return Err("every `behaviour` weight is 0".to_owned());
        }
        for (key, [lo, hi]) in [
            ("work_minutes", b.work_minutes),
            ("tokens", b.tokens),
            ("limit_reset_hours", b.limit_reset_hours),
        ] {
            if lo > hi || hi == 0 {
                return Err(format!(
                    "`behaviour.{key}` = [{lo}, {hi}] must be [min, max] with max > 0"
                ));
            }
        }
        let f = &self.faults;
        for (key, p) in [
            ("store_busy", f.store_busy),
            ("disk_full", f.disk_full),
            ("crash_per_write", f.crash_per_write),
        ] {
            if !(0.0..=0.5).contains(&p) {
                return Err(format!(
                    "`faults.{key}` = {p} must be a probability between 0 and 0.5"
                ));
            }
        }
        for (key, rate) in [
            ("faults.crashes_per_day", f.crashes_per_day),
            ("faults.clock_steps_per_day", f.clock_steps_per_day),
            ("people.take_back_per_day", self.people.take_back_per_day),
            ("people.amend_per_day", self.people.amend_per_day),
            ("people.edit_per_day", self.people.edit_per_day),
        ] {
            if !(0.0..=1_000.0).contains(&rate) {
                return Err(format!("`{key}` = {rate} must be between 0 and 1000"));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// `[handbacks]`: a share, a limit loopx accepts, and an agent of each role to take them.
    fn check_handbacks(&self) -> Result<(), String> {
        use crate::handbacks::{EXECUTOR, REVIEWER};
        let Some(h) = &self.handbacks else {
            return Ok(());
        };
        if h.back_percent > 100 {
            return Err(format!(
                "`handbacks.back_percent` = {} is more than 100",
                h.back_percent
            ));
        }
        if !(1..=100).contains(&h.limit) {
            return Err(format!(
                "`handbacks.limit` = {} must be 1 to 100 (as `[limits] handbacks`)",
                h.limit
            ));
        }
        for role in [EXECUTOR, REVIEWER] {
            if !self.agents.iter().any(|a| a.role.as_deref() == Some(role)) {
                return Err(format!(
                    "`[handbacks]` needs an `[[agent]]` with `role = \"{role}\"` to take its todos"
                ));
            }
        }
        Ok(())
    }

    /// How many simulated todos there are in all (`[todos] count`, or the goals' sum).
    pub fn todo_count(&self) -> u32 {
        match &self.todos {
            Some(todos) => todos.count,
            None => self.goals.iter().map(|g| g.todos).sum(),
        }
    }

    /// The `[[goal]]` sections: each with a share in [0, 1], a rate a person can keep, and
    /// `[todos] count`, if given, their sum (or `[todos]` alone, without goals).
    fn check_goals(&self) -> Result<(), String> {
        if self.goals.is_empty() {
            return match self.todos {
                Some(_) => Ok(()),
                None => Err(
                    "a scenario needs `[todos] count`, or `[[goal]]` sections with their `todos`"
                        .to_owned(),
                ),
            };
        }
        if self.goals.len() > 100 {
            return Err(format!(
                "{} `[[goal]]` sections: at most 100",
                self.goals.len()
            ));
        }
        for (i, g) in self.goals.iter().enumerate() {
            if !(0.0..=1.0).contains(&g.share) {
                return Err(format!(
                    "`goal[{i}].share` = {} must be between 0 and 1",
                    g.share
                ));
            }
            if g.todos == 0 || g.todos > 100_000 {
                return Err(format!(
                    "`goal[{i}].todos` = {} must be between 1 and 100000",
                    g.todos
                ));
            }
            if !(0.0..=1_000.0).contains(&g.hold_per_day) {
                return Err(format!(
                    "`goal[{i}].hold_per_day` = {} must be between 0 and 1000",
                    g.hold_per_day
                ));
            }
        }
        let sum: u64 = self.goals.iter().map(|g| u64::from(g.todos)).sum();
        match &self.todos {
            Some(todos) if u64::from(todos.count) != sum => Err(format!(
                "`todos.count` = {} is not the sum of the goals' `todos` ({sum}): leave `[todos]` out with `[[goal]]`, or make it their sum",
                todos.count
            )),
            _ => Ok(()),
        }
    }
}

impl Behaviour {
    /// The weights, by name.
    pub fn weights(&self) -> [(crate::agent::Act, u32); 10] {
        use crate::agent::Act;
        [
            (Act::Completes, self.completes),
            (Act::Progress, self.progress),
            (Act::UsageLimit, self.usage_limit),
            (Act::NotLoggedIn, self.not_logged_in),
            (Act::Transient, self.transient),
            (Act::Hangs, self.hangs),
            (Act::Crashes, self.crashes),
            (Act::Garbage, self.garbage),
            (Act::ForgedReport, self.forged_report),
            (Act::Asks, self.asks),
        ]
    }
}

fn check_id(name: &str) -> Result<(), String> {
    name.parse::<loopx_kernel::AgentName>()
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A duration key, such as `"90s"`.
fn duration(key: &str, text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| {
        format!(
            "`{key}` = \"{text}\" is not a duration ({e}); write it like \"90s\", \"30m\" or \"5h\""
        )
    })
}

/// A `[min, max]` pair of durations.
fn range(key: &str, [lo, hi]: &[String; 2]) -> Result<[Duration; 2], String> {
    let (lo, hi) = (duration(key, lo)?, duration(key, hi)?);
    if lo > hi {
        return Err(format!("`{key}` must be [min, max]"));
    }
    Ok([lo, hi])
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
[[account]]
name = "acct"
window = "5h"
tokens = 100000

[[agent]]
name = "a"
account = "acct"

[todos]
count = 3
"#;

    #[test]
    fn a_minimal_scenario_reads_with_defaults() {
        let checked = Scenario::parse(MINIMAL, "minimal.toml").expect("reads");
        assert_eq!(checked.hours, 24.0);
        assert_eq!(checked.windows, vec![Duration::from_secs(5 * 3600)]);
        assert_eq!(checked.max_time, vec![Duration::from_secs(30 * 60)]);
    }

    #[test]
    fn goals_carry_the_todos_and_bad_ones_are_named() {
        let two = MINIMAL.replace(
            "[todos]\ncount = 3\n",
            "[[goal]]\npriority = 1\nshare = 0.6\ntodos = 2\nhold_per_day = 3\n\n[[goal]]\ntodos = 3\n",
        );
        let checked = Scenario::parse(&two, "g.toml").expect("reads");
        assert_eq!(checked.scenario.todo_count(), 5);
        assert_eq!(checked.scenario.goals[1].share, 1.0);
        // `[todos]` beside goals must be their sum.
        let both = format!("{two}\n[todos]\ncount = 5\n");
        assert!(Scenario::parse(&both, "g.toml").is_ok());
        let refused = |text: &str, key: &str| {
            let msg = Scenario::parse(text, "g.toml")
                .expect_err("refused")
                .to_string();
            assert!(msg.contains("g.toml") && msg.contains(key), "{msg}");
        };
        refused(&format!("{two}\n[todos]\ncount = 7\n"), "todos.count");
        refused(&two.replace("share = 0.6", "share = 1.5"), "goal[0].share");
        refused(&two.replace("todos = 3", "todos = 0"), "goal[1].todos");
        refused(
            &two.replace("hold_per_day = 3", "hold_per_day = -1"),
            "goal[0].hold_per_day",
        );
        refused(&two.replace("priority = 1", "colour = 1"), "colour");
        // Neither `[todos]` nor goals: the scenario says what it needs.
        refused(&MINIMAL.replace("[todos]\ncount = 3\n", ""), "[[goal]]");
    }

    #[test]
    fn handbacks_need_a_share_a_limit_and_both_roles() {
        let pairs = MINIMAL.replace(
            "account = \"acct\"\n",
            "account = \"acct\"\nrole = \"executor\"\n",
        ) + "\n[[agent]]\nname = \"b\"\naccount = \"acct\"\nrole = \"reviewer\"\n\n[handbacks]\nback_percent = 60\n";
        let checked = Scenario::parse(&pairs, "h.toml").expect("reads");
        assert_eq!(checked.scenario.handbacks.map(|h| h.limit), Some(4));
        let refused = |text: &str, key: &str| {
            let msg = Scenario::parse(text, "h.toml")
                .expect_err("refused")
                .to_string();
            assert!(msg.contains("h.toml") && msg.contains(key), "{msg}");
        };
        refused(&pairs.replace("= 60", "= 101"), "handbacks.back_percent");
        refused(&format!("{pairs}limit = 0\n"), "handbacks.limit");
        refused(
            &pairs.replace("\"reviewer\"", "\"tester\""),
            "role = \"reviewer\"",
        );
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let text = MINIMAL.replace("account = \"acct\"", "account = \"other\"");
        let err = Scenario::parse(&text, "s.toml").expect_err("refused");
        let msg = err.to_string();
        assert!(
            msg.contains("s.toml") && msg.contains("agent[0].account"),
            "{msg}"
        );

        let text = MINIMAL.replace("[todos]", "[todos]\ncolour = 1");
        let msg = Scenario::parse(&text, "s.toml")
            .expect_err("refused")
            .to_string();
        assert!(
            msg.contains("s.toml") && msg.contains("colour") && msg.contains("line"),
            "{msg}"
        );

        let text = MINIMAL.replace("window = \"5h\"", "window = \"five hours\"");
        let msg = Scenario::parse(&text, "s.toml")
            .expect_err("refused")
            .to_string();
        assert!(
            msg.contains("account[0].window") && msg.contains("five hours"),
            "{msg}"
        );
    }
}
