//! Filling the model: the store read through the application layer's snapshots (the `status`
//! and `quota status` documents, `--goal` narrowing them as it narrows `status`), and each
//! pane's screen from its slice's log.

use std::collections::HashMap;
use std::time::Duration;

use loopx_app::quota::QuotaStatus;
use loopx_app::status::{MonitorNow, Status};
use loopx_app::{App, AppError};
use loopx_kernel::model::SliceRecord;
use loopx_kernel::redact::Redactor;
use loopx_kernel::time::{relative, short_duration};
use loopx_kernel::{GoalId, SliceId, Timestamp};

use crate::model::{Model, Pane, Question};
use crate::screen::LiveScreen;

/// The title of each pane's slice's todo, by slice.
type Titles = HashMap<SliceId, String>;

/// The newest slices looked at for each agent's newest.
const SLICES_SEEN: usize = 512;

/// What watch follows: the project, and a screen per slice with a pane.
#[derive(Debug)]
pub struct Follower {
    app: App,
    goal: Option<GoalId>,
    screens: HashMap<String, LiveScreen>,
    redactor: Redactor,
}

impl Follower {
    pub fn new(app: App, goal: Option<GoalId>) -> Follower {
        Follower {
            app,
            goal,
            screens: HashMap::new(),
            redactor: Redactor::for_process_env(&[]),
        }
    }

    pub fn app(&self) -> &App {
        &self.app
    }

    /// Reads the store into the model: questions, monitors, accounts, and the panes (a new
    /// slice opens one, replacing its agent's last; a slice that ended keeps its pane).
    pub fn read_store(&mut self, model: &mut Model) -> Result<(), AppError> {
        let status = self.app.status_of(self.goal)?;
        let quota = self.app.quota_status()?;
        model.now = self.app.now();
        model.questions = questions(&status);
        model.monitors = status
            .monitors
            .iter()
            .map(|m| monitor_line(m, model.now))
            .collect();
        model.accounts = account_lines(&quota, model.now);
        self.panes(model, &status)?;
        model.clamp();
        Ok(())
    }

    /// A pane per agent, for its newest slice: running, or ended (its last screen stays until
    /// the agent's next slice), so a slice shorter than a look at the store has one too.
    fn panes(&mut self, model: &mut Model, status: &Status) -> Result<(), AppError> {
        let selected = model.selected_pane().map(|p| p.agent.clone());
        let (newest, titles) = self.newest_slices(status)?;
        for slice in newest {
            let id = slice.id.to_string();
            let agent = slice.agent.to_string();
            let title = || {
                titles
                    .get(&slice.id)
                    .cloned()
                    .unwrap_or_else(|| format!("{} slice", slice.kind))
            };
            let i = match model.panes.iter().position(|p| p.agent == agent) {
                Some(i) if model.panes[i].slice == id => i,
                // The agent's next slice takes the place of its last.
                Some(i) => {
                    self.screens.remove(&model.panes[i].slice);
                    model.panes[i] = self.open_pane(&slice, title());
                    i
                }
                None => {
                    model.panes.push(self.open_pane(&slice, title()));
                    model.panes.len() - 1
                }
            };
            let pane = &mut model.panes[i];
            pane.orphaned = status
                .running
                .iter()
                .any(|r| r.orphaned && r.slice.id == slice.id);
            if slice.ended_at.is_some() && pane.ended.is_none() {
                self.end_pane(pane, &slice);
            }
        }
        // In agent order, so panes stay where they were as others come; the selection stays
        // on its agent.
        model.panes.sort_by(|a, b| a.agent.cmp(&b.agent));
        if let Some(agent) = selected {
            model.pane = model
                .panes
                .iter()
                .position(|p| p.agent == agent)
                .unwrap_or(0);
        }
        Ok(())
    }

    /// Each agent's newest slice (of the goal, with `--goal`), and the titles of their todos
    /// (cleaned), in one snapshot.
    fn newest_slices(&self, status: &Status) -> Result<(Vec<SliceRecord>, Titles), AppError> {
        let goal = self.goal;
        self.app.read(|s| {
            let mut newest: HashMap<String, SliceRecord> = HashMap::new();
            let tail = s.slices_tail(SLICES_SEEN)?;
            let tail = tail
                .into_iter()
                .filter(|r| goal.is_none_or(|g| r.goal == Some(g)));
            // Oldest first, the running ones (as `status` narrowed them) last: each agent ends
            // with its newest.
            for slice in tail.chain(status.running.iter().map(|r| r.slice.clone())) {
                newest.insert(slice.agent.to_string(), slice);
            }
            let mut titles = HashMap::new();
            for slice in newest.values() {
                if let Some(todo) = slice.todo
                    && let Some(t) = s.todo(todo)?
                {
                    // An agent may have written the title: its control characters are shown,
                    // never sent to the person's terminal.
                    let title = loopx_vocab::clean_text(t.title.as_bytes());
                    titles.insert(slice.id, format!("{} {title}", t.id));
                }
            }
            Ok((newest.into_values().collect(), titles))
        })
    }

    fn open_pane(&mut self, slice: &SliceRecord, todo: String) -> Pane {
        let path = crate::screen::log_path(self.app.project(), &slice.id.to_string());
        // The agent's adapter reads the tokens it reports; an unreadable profile only loses
        // the count.
        let profile = self
            .app
            .read(|s| s.agent(slice.agent.as_str()))
            .ok()
            .flatten()
            .and_then(|a| self.app.profile(&a.profile).ok());
        let tokens = profile.map(|p| loopx_adapters::Parser::for_adapter(&p.adapter));
        self.screens
            .insert(slice.id.to_string(), LiveScreen::new(path, tokens));
        Pane {
            agent: slice.agent.to_string(),
            slice: slice.id.to_string(),
            todo,
            started_at: slice.started_at,
            limit_secs: slice.limit_secs,
            tokens: None,
            ended: None,
            orphaned: false,
            screen: Vec::new(),
            focus_row: 0,
        }
    }

    /// The slice ended: its last output read, its outcome and its tokens as recorded.
    fn end_pane(&mut self, pane: &mut Pane, record: &SliceRecord) {
        if let Some(screen) = self.screens.get_mut(&pane.slice) {
            while screen.read_new() {}
            (pane.screen, pane.focus_row) = screen.lines(&self.redactor);
            pane.tokens = screen.tokens().or(pane.tokens);
        }
        pane.ended = Some(record.outcome.map_or("ended".to_owned(), |o| o.to_string()));
        if record.tokens > 0 {
            pane.tokens = Some(record.tokens);
        }
    }

    /// Reads what each running slice printed since the last look; whether a pane changed.
    pub fn read_screens(&mut self, model: &mut Model) -> bool {
        let mut changed = false;
        for pane in model.panes.iter_mut().filter(|p| p.ended.is_none()) {
            let Some(screen) = self.screens.get_mut(&pane.slice) else {
                continue;
            };
            if screen.read_new() {
                (pane.screen, pane.focus_row) = screen.lines(&self.redactor);
                pane.tokens = screen.tokens().or(pane.tokens);
                changed = true;
            }
        }
        changed
    }
}

fn questions(status: &Status) -> Vec<Question> {
    status
        .needs_you
        .iter()
        .map(|n| Question {
            gate: n.gate.id,
            question: loopx_vocab::clean_text(n.gate.question.as_bytes()),
            options: n
                .gate
                .options
                .iter()
                .map(|o| loopx_vocab::clean_text(o.as_bytes()))
                .collect(),
            asked_by: n.gate.asked_by.clone(),
        })
        .collect()
}

/// `t4 CI is green · next poll in 30s · last: not yet (2m ago)`.
fn monitor_line(m: &MonitorNow, now: Timestamp) -> String {
    let next = match (m.next_poll, m.gate) {
        (_, Some(gate)) => format!("waits on {gate}"),
        (Some(at), None) => format!("next poll {}", relative(now, at)),
        (None, None) => "not polled".to_owned(),
    };
    let last = match (m.last, m.last_at) {
        (Some(v), Some(at)) => format!("last: {} ({})", v.as_str(), relative(now, at)),
        _ => "not polled yet".to_owned(),
    };
    let title = loopx_vocab::clean_text(m.title.as_bytes());
    format!("{} {title} · {next} · {last}", m.todo)
}

/// The holds first (a person may be the one to lift them), then each account's windows once
/// (its agents share them).
fn account_lines(quota: &QuotaStatus, now: Timestamp) -> Vec<String> {
    let mut lines = Vec::new();
    for hold in &quota.holds {
        // A hold whose end passed holds nothing, though its record stays until lifted.
        let until = match hold.ends(now) {
            None => "until resumed".to_owned(),
            Some(end) if end <= now => continue,
            Some(end) => format!("ends {}", relative(now, end)),
        };
        lines.push(format!("hold {} · {until} · by {}", hold.key, hold.set_by));
    }
    let mut seen = Vec::new();
    for agent in &quota.agents {
        if seen.contains(&agent.account) {
            continue;
        }
        seen.push(agent.account.clone());
        let windows: Vec<String> = agent
            .windows
            .iter()
            .map(|w| {
                let period = short_duration(Duration::from_secs(w.period_secs));
                let left = match (w.tokens_left, w.cost_left_usd) {
                    (Some(t), _) => format!("{t} tokens left"),
                    (None, Some(usd)) => format!("${usd:.2} left"),
                    (None, None) => "no limit".to_owned(),
                };
                let resets = w.resets_at.map_or(String::new(), |at| {
                    format!(", resets {}", relative(now, at))
                });
                format!("{period} window: {left}{resets}")
            })
            .collect();
        let windows = match windows.is_empty() {
            true => "no windows".to_owned(),
            false => windows.join(" · "),
        };
        lines.push(format!("{} · {windows}", agent.account));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopx_kernel::model::QuotaHold;

    fn hold(key: &str, until: Option<Timestamp>) -> QuotaHold {
        QuotaHold {
            key: key.to_owned(),
            until,
            reason: "a reason".to_owned(),
            source: loopx_vocab::kinds::HoldSource::Manual,
            set_by: "human:ana".to_owned(),
            set_at: Timestamp(1_000),
        }
    }

    #[test]
    fn holds_in_force_come_first_and_a_hold_whose_end_passed_is_not_shown() {
        let now = Timestamp(1_000_000);
        let quota = QuotaStatus {
            format_version: 1,
            agents: Vec::new(),
            holds: vec![
                hold("agent:a", None),
                hold("acct", Some(Timestamp(now.0 + 60_000))),
                hold("old", Some(Timestamp(now.0 - 60_000))),
            ],
            problems: Vec::new(),
        };
        let lines = account_lines(&quota, now);
        assert_eq!(
            lines,
            [
                "hold agent:a · until resumed · by human:ana",
                "hold acct · ends in 1m · by human:ana"
            ]
        );
    }
}
