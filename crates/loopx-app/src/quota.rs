//! Quota and agents: holds a person sets and lifts, spend an agent reports, the decision for an
//! agent, the quota overview; registering, changing and removing agents.

use std::sync::Arc;
use std::time::Duration;

use loopx_domain::decision::{DecisionState, SharedState};
use loopx_kernel::model::{Agent, HoldSource, QuotaHold, Spend};
use loopx_kernel::store::{
    AgentChange, ChangeAgent, NewAgent, NewHold, NewSpend, RemoveAgent, Resume,
};
use loopx_kernel::time::relative;
use loopx_kernel::{AgentName, Invalid, Timestamp};
use loopx_quota::{AgentView, Decision, DecisionKind, Pacing, WindowLimit, WindowState};
use serde::Serialize;

use crate::{App, AppError, UsageError};

/// What a hold or a resume names: one agent, or an account (every agent on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldTarget {
    Agent(AgentName),
    Account(String),
}

impl HoldTarget {
    /// The kernel's key: `agent:NAME`, or the account.
    pub fn key(&self) -> String {
        match self {
            HoldTarget::Agent(agent) => format!("agent:{agent}"),
            HoldTarget::Account(account) => account.clone(),
        }
    }
}

/// Spend an agent reports (`quota spend`).
#[derive(Debug, Clone)]
pub struct SpendReport {
    pub agent: AgentName,
    pub tokens: u64,
    pub cost_usd: f64,
    /// Charge usage known after the fact (may overspend) instead of admitting a slice.
    pub charge: bool,
    /// How long the work ran, ending now.
    pub ran: Option<Duration>,
}

/// An agent to register or change: the profile must load.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub name: AgentName,
    pub profile: String,
    /// Empty: the profile's.
    pub capabilities: Vec<String>,
    /// `None`: the profile's.
    pub role: Option<String>,
}

/// An agent added or changed, and why it cannot run yet when its profile's program is not
/// installed.
#[derive(Debug, Clone)]
pub struct AgentAdded {
    pub agent: Agent,
    pub cannot_run: Option<String>,
}

/// The decision for one agent now, and the state it was made from.
#[derive(Debug, Clone)]
pub struct ForAgent {
    pub state: DecisionState,
    pub decision: Decision,
}

/// The quota overview: each agent's decision and windows, the holds, and what could not be
/// read (an invalid profile, `loopx.toml`).
#[derive(Debug, Serialize)]
pub struct QuotaStatus {
    pub format_version: u32,
    pub agents: Vec<AgentQuota>,
    pub holds: Vec<QuotaHold>,
    pub problems: Vec<String>,
}

/// One agent's quota, as `quota status` shows it.
#[derive(Debug, Serialize)]
pub struct AgentQuota {
    pub agent: String,
    pub account: String,
    pub decision: DecisionKind,
    pub wake_at: Option<Timestamp>,
    pub reason: String,
    pub pacing: Option<Pacing>,
    pub next_slice_allowed_at: Option<Timestamp>,
    pub windows: Vec<WindowReport>,
}

#[derive(Debug, Serialize)]
pub struct WindowReport {
    pub period_secs: u64,
    pub tokens_limit: Option<u64>,
    pub tokens_left: Option<u64>,
    pub cost_limit_usd: Option<f64>,
    pub cost_left_usd: Option<f64>,
    pub resets_at: Option<Timestamp>,
}

impl App {
    /// Holds `target` until `until` (`None`: until resumed).
    pub fn hold(
        &self,
        target: &HoldTarget,
        until: Option<Timestamp>,
        reason: String,
    ) -> Result<QuotaHold, AppError> {
        self.run(NewHold {
            key: target.key(),
            until,
            reason,
            source: HoldSource::Manual,
        })
    }

    /// Holds `target` until a person resumes it.
    pub fn pause(&self, target: &HoldTarget) -> Result<QuotaHold, AppError> {
        self.hold(target, None, "paused by a person".to_owned())
    }

    /// Lifts the holds on `target`, or every hold; the keys lifted.
    pub fn resume(&self, target: Option<&HoldTarget>) -> Result<Vec<String>, AppError> {
        self.run(Resume {
            key: target.map(HoldTarget::key),
        })
    }

    /// A registered agent.
    pub fn agent(&self, name: &AgentName) -> Result<Agent, AppError> {
        self.read(|s| s.agent(name.as_str()))?.ok_or_else(|| {
            Invalid::Other(format!(
                "agent `{name}` is not registered\n(hint: `loopx agent add {name} --profile PROFILE`)"
            ))
            .into()
        })
    }

    pub fn agents(&self) -> Result<Vec<Agent>, AppError> {
        self.read(|s| s.agents())
    }

    /// Records spend an agent reports: a slice admitted against its quota, or usage charged.
    pub fn spend(&self, report: SpendReport) -> Result<Spend, AppError> {
        if !report.cost_usd.is_finite() || report.cost_usd < 0.0 {
            return Err(UsageError::InvalidCost(report.cost_usd).into());
        }
        let record = self.agent(&report.agent)?;
        let view = self.agent_view(&record)?;
        let now = self.now();
        let busy = report.ran.map(|ran| {
            let ran = u64::try_from(ran.as_millis()).unwrap_or(u64::MAX);
            (Timestamp(now.0.saturating_sub(ran)), now)
        });
        // The goal is the kernel's to resolve: the one active goal, else the spend is the
        // account's alone.
        let req = loopx_domain::account::request(&view, report.tokens, report.cost_usd, busy, None);
        let new = if report.charge {
            NewSpend::Charge(req)
        } else {
            NewSpend::Admit(req)
        };
        Ok(self.store()?.run(new, &self.caller().actor, now)?)
    }

    /// What `agent` would do now, as `loopx run` decides it: its profile and `loopx.toml` must
    /// load.
    pub fn decision_for(&self, agent: &AgentName) -> Result<ForAgent, AppError> {
        let store = self.store_read()?;
        let record = self.agent(agent)?;
        let view = self.agent_view(&record)?;
        let now = self.now();
        let config = self.project_config()?;
        let state = store.read(|s| {
            let shared = SharedState::read(s, now)?.under(&config);
            DecisionState::for_agent(Arc::new(shared), s, view)
        })?;
        let decision = state.decide();
        Ok(ForAgent { state, decision })
    }

    /// Each agent's quota and decision, and the holds. What cannot be read is listed in
    /// `problems`; the rest is shown.
    pub fn quota_status(&self) -> Result<QuotaStatus, AppError> {
        let store = self.store_read()?;
        let now = self.now();
        let (agents, holds) = store.read(|s| Ok((s.agents()?, s.quota_holds()?)))?;
        let mut views = Vec::new();
        let mut problems = Vec::new();
        for agent in &agents {
            match self.agent_view(agent) {
                Ok(view) => views.push(view),
                Err(e) => problems.push(e.to_string()),
            }
        }
        let config = self.config_or_problem(&mut problems);
        // One snapshot for every agent, with the shared part read once.
        let agents = store.read(|s| {
            let shared = Arc::new(SharedState::read(s, now)?.under(&config));
            views
                .into_iter()
                .map(|view| {
                    DecisionState::for_agent(shared.clone(), s, view)
                        .map(|state| agent_quota(&state, now))
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        Ok(QuotaStatus {
            format_version: 1,
            agents,
            holds,
            problems,
        })
    }

    /// Registers an agent. Its profile must load: an agent whose profile is missing or
    /// invalid could never run. Its role and capabilities default to the profile's, stored on
    /// the agent so that the decision and the claim judge by the same record.
    pub fn add_agent(
        &self,
        spec: AgentSpec,
        path: Option<&std::ffi::OsStr>,
    ) -> Result<AgentAdded, AppError> {
        let loaded = self.profile(&spec.profile)?;
        let capabilities = if spec.capabilities.is_empty() {
            loaded.profile.capabilities.clone()
        } else {
            spec.capabilities
        };
        let role = spec.role.or_else(|| loaded.profile.role.clone());
        let agent = self.run(NewAgent {
            name: spec.name,
            profile: spec.profile,
            capabilities,
            role,
        })?;
        Ok(AgentAdded {
            agent,
            cannot_run: loaded.program_missing(path),
        })
    }

    /// Changes an agent; a new profile must load.
    pub fn set_agent(
        &self,
        name: AgentName,
        change: AgentChange,
        path: Option<&std::ffi::OsStr>,
    ) -> Result<AgentAdded, AppError> {
        let loaded = match &change.profile {
            Some(profile) => Some(self.profile(profile)?),
            None => None,
        };
        if change == AgentChange::default() {
            return Err(UsageError::NothingToChange.into());
        }
        let agent = self.run(ChangeAgent { name, change })?;
        Ok(AgentAdded {
            agent,
            cannot_run: loaded.and_then(|l| l.program_missing(path)),
        })
    }

    /// Removes an agent that runs no slice.
    pub fn remove_agent(&self, name: AgentName) -> Result<Agent, AppError> {
        self.run(RemoveAgent { name })
    }
}

fn agent_quota(state: &DecisionState, now: Timestamp) -> AgentQuota {
    let d = state.decide();
    let next =
        state.agent.pacing.map(
            |p| match loopx_quota::pacing_check(p, state.pacing_tat, now.0) {
                Ok(_) => now,
                Err(at) => Timestamp(at),
            },
        );
    let windows = state
        .agent
        .windows
        .iter()
        .zip(&state.windows)
        .map(|(limit, s): (&WindowLimit, &WindowState)| {
            let (tokens_left, cost_left_usd) = s.remaining(limit, now.0);
            let rolled = s.rolled(limit, now.0);
            WindowReport {
                period_secs: limit.period_ms / 1000,
                tokens_limit: limit.tokens,
                tokens_left,
                cost_limit_usd: limit.cost_usd,
                cost_left_usd,
                resets_at: (rolled.start != 0).then(|| Timestamp(rolled.start + limit.period_ms)),
            }
        })
        .collect();
    AgentQuota {
        agent: state.agent.name.to_string(),
        account: state.agent.account.clone(),
        decision: d.kind(),
        wake_at: d.wake_at().map(Timestamp),
        reason: d.reason().to_owned(),
        pacing: state.agent.pacing,
        next_slice_allowed_at: next,
        windows,
    }
}

/// A decision in words: `deliver t3 (work): …`, `wait until … (in 2h): …`.
pub fn describe(d: &Decision, now: Timestamp) -> String {
    let word = serde_json::to_value(d.kind())
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let target = match (&d.todo(), &d.gate()) {
        (Some((id, _)), _) => format!(" {id}"),
        (None, Some((id, _))) => format!(" gate {id}"),
        _ => String::new(),
    };
    let kind = d
        .slice()
        .map(|k| format!(" ({})", k.as_str()))
        .unwrap_or_default();
    let when = match (d.kind(), d.wake_at()) {
        (DecisionKind::Wait, Some(at)) => {
            format!(
                " until {} ({})",
                Timestamp(at),
                relative(now, Timestamp(at))
            )
        }
        (DecisionKind::Wait, None) => " until resumed".to_owned(),
        _ => String::new(),
    };
    format!("{word}{target}{kind}{when}: {}", d.reason())
}

/// The view `decide()` is given for an agent, as `status` uses it (file I/O outside any read
/// transaction): the error in words when its profile does not load.
pub(crate) fn views_of(app: &App, agents: &[Agent]) -> Vec<(String, Result<AgentView, String>)> {
    let mut profiles: std::collections::HashMap<
        String,
        Result<loopx_adapters::LoadedProfile, String>,
    > = std::collections::HashMap::new();
    agents
        .iter()
        .map(|a| {
            let loaded = profiles
                .entry(a.profile.clone())
                .or_insert_with(|| app.profile(&a.profile).map_err(|e| e.to_string()));
            (
                a.name.to_string(),
                loaded
                    .as_ref()
                    .map(|l| loopx_domain::agent::agent_view(a, l))
                    .map_err(Clone::clone),
            )
        })
        .collect()
}
