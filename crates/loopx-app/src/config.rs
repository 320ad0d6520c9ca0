//! The project's configuration as operations use it: a profile by name, the project's budget,
//! and each agent's quota view. One policy for a file that does not load: an operation whose
//! result is acted on (the decision for an agent, adding an agent) fails with the file's own
//! diagnostic; an overview (`status`, `quota status`) shows what it can and names the problem.

use loopx_adapters::{AdapterCatalog, LoadedProfile};
use loopx_kernel::model::Agent;
use loopx_quota::AgentView;

use crate::{App, AppError, ConfigError};

impl App {
    /// A profile of the project, by name.
    pub fn profile(&self, name: &str) -> Result<LoadedProfile, AppError> {
        let state = self.project.state_dir();
        let catalog = AdapterCatalog::with_dir(state.join("adapters"));
        loopx_adapters::find_profile(&state.join("profiles"), name, &catalog).map_err(|why| {
            ConfigError::Profile {
                name: name.to_owned(),
                why,
            }
            .into()
        })
    }

    /// The names of every variable a registered agent's profile or adapter declares secret
    /// (`[env] secrets`), sorted: what loopx's own log hides besides the credential-like names
    /// (a secret need not be named like one). An agent whose profile does not load adds none;
    /// its slices cannot start either.
    pub fn secret_env_names(&self) -> Result<Vec<String>, AppError> {
        let agents = self.read(|s| s.agents())?;
        let mut names = std::collections::BTreeSet::new();
        for agent in &agents {
            if let Ok(loaded) = self.profile(&agent.profile) {
                names.extend(loaded.adapter.env_secrets);
                names.extend(loaded.profile.env.secrets);
            }
        }
        Ok(names.into_iter().collect())
    }

    /// `.loopx/loopx.toml`, or its diagnostic.
    pub(crate) fn project_config(&self) -> Result<loopx_adapters::ProjectConfig, AppError> {
        loopx_adapters::load_project_config(&self.project.state_dir())
            .map_err(|e| ConfigError::Project(e).into())
    }

    /// What an agent's `done` needs and how long evidence stays fresh (`[evidence]`).
    pub fn evidence_rules(&self) -> Result<loopx_adapters::EvidenceRules, AppError> {
        self.project_config().map(|config| config.evidence)
    }

    /// `[lark]`: the Lark (Feishu) board and questions, if the project has them.
    pub fn lark_config(&self) -> Result<Option<loopx_adapters::LarkConfig>, AppError> {
        self.project_config().map(|config| config.lark)
    }

    /// The project's configuration for an overview: a `loopx.toml` that does not load adds its
    /// diagnostic to `problems`, and the overview goes on with the defaults (no budget, no
    /// evidence rules).
    pub(crate) fn config_or_problem(
        &self,
        problems: &mut Vec<String>,
    ) -> loopx_adapters::ProjectConfig {
        self.project_config().unwrap_or_else(|e| {
            problems.push(e.to_string());
            loopx_adapters::ProjectConfig::default()
        })
    }

    /// The agent's quota settings, from its profile.
    pub fn agent_view(&self, agent: &Agent) -> Result<AgentView, AppError> {
        let loaded = self.profile(&agent.profile)?;
        Ok(loopx_domain::agent::agent_view(agent, &loaded))
    }
}
