//! Which agent runs, and its settings: the kernel's record plus its profile.

use loopx_adapters::{AdapterCatalog, LoadedProfile, find_profile};
use loopx_kernel::model::Agent;
use loopx_kernel::store::QuotaRequest;
use loopx_kernel::{Project, Timestamp};
use loopx_quota::{AgentView, Pacing, WindowLimit};

/// Why an agent cannot be decided on: none is registered, the one named is not, or its
/// profile does not load.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no agent is registered\n(hint: `loopx agent add NAME --profile PROFILE`)")]
    NoAgent,
    #[error("agent `{name}` is not registered\n(hint: `loopx agent add {name} --profile PROFILE`)")]
    UnknownAgent { name: String },
    #[error(
        "agent `{agent}` uses profile `{profile}`, which cannot be loaded\n(hint: `loopx profile check`)"
    )]
    Profile {
        agent: String,
        profile: String,
        #[source]
        source: loopx_adapters::LoadError,
    },
}

impl AgentError {
    /// What kind of failure it is: a name to correct, or a profile to fix.
    pub fn class(&self) -> loopx_vocab::ErrorClass {
        match self {
            AgentError::NoAgent | AgentError::UnknownAgent { .. } => loopx_vocab::ErrorClass::Usage,
            AgentError::Profile { .. } => loopx_vocab::ErrorClass::Config,
        }
    }
}

/// An agent ready to be decided on and launched.
#[derive(Debug, Clone)]
pub struct AgentSetup {
    pub agent: Agent,
    pub loaded: LoadedProfile,
    pub view: AgentView,
}

impl AgentSetup {
    /// A quota request for this agent's slice on `goal`: an admission (zero usage) or a
    /// charge.
    pub fn quota_request(
        &self,
        (tokens, cost_usd): (u64, f64),
        busy: Option<(Timestamp, Timestamp)>,
        goal: Option<loopx_kernel::GoalId>,
    ) -> QuotaRequest {
        crate::account::request(&self.view, tokens, cost_usd, busy, goal)
    }
}

/// The named agent, or the first registered one in name order.
///
/// `agents` is every registered agent in name order (`Snapshot::agents`).
pub fn load_agent(
    project: &Project,
    agents: Vec<Agent>,
    name: Option<&str>,
) -> Result<AgentSetup, AgentError> {
    let agent = match name {
        Some(name) => agents
            .into_iter()
            .find(|a| a.name.as_str() == name)
            .ok_or_else(|| AgentError::UnknownAgent {
                name: name.to_owned(),
            })?,
        None => agents.into_iter().next().ok_or(AgentError::NoAgent)?,
    };
    let state = project.state_dir();
    let catalog = AdapterCatalog::with_dir(state.join("adapters"));
    let loaded =
        find_profile(&state.join("profiles"), &agent.profile, &catalog).map_err(|source| {
            AgentError::Profile {
                agent: agent.name.to_string(),
                profile: agent.profile.clone(),
                source,
            }
        })?;
    let view = agent_view(&agent, &loaded);
    Ok(AgentSetup {
        agent,
        loaded,
        view,
    })
}

/// What the quota model knows of an agent: its record's capabilities and role (the profile's
/// role when the record has none), and the profile's account, pacing and windows, and the file
/// they are set in (`find_profile` reads `<profile>.toml` under the state directory's
/// `profiles/`).
pub fn agent_view(agent: &Agent, loaded: &LoadedProfile) -> AgentView {
    let quota = &loaded.profile.quota;
    AgentView {
        name: agent.name.clone(),
        capabilities: agent.capabilities.clone(),
        // The agent record alone: `agent add` stores the profile's role there, and the claim
        // checks the same record.
        role: agent.role.clone(),
        writes: loaded.profile.permission != loopx_adapters::PermissionLevel::ReadOnly,
        account: quota.account.clone(),
        pacing: quota.slices_per_hour.map(|n| Pacing {
            slices_per_hour: f64::from(n),
            burst: quota.burst,
        }),
        windows: quota
            .windows
            .iter()
            .map(|w| WindowLimit {
                period_ms: u64::try_from(w.window.as_millis()).unwrap_or(u64::MAX),
                tokens: w.tokens,
                cost_usd: w.cost_usd,
            })
            .collect(),
        profile_file: Some(format!(
            "{}/profiles/{}.toml",
            loopx_kernel::project::STATE_DIR,
            agent.profile
        )),
    }
}
