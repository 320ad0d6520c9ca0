//! The arguments of the commands on goals and todos: `goal …` and `todo …`.

use clap::{Args, Subcommand};
use loopx_vocab::{IsolationMode, PermissionLevel, TodoState};

use super::spelled;

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// What the agents work towards (with `--guided`, asked for when left out).
    #[arg(required_unless_present_any = ["guided", "goal_text"])]
    pub objective: Option<String>,
    /// The objective, as a flag (for `--guided` without a terminal).
    #[arg(long = "goal-text", value_name = "TEXT", conflicts_with = "objective")]
    pub goal_text: Option<String>,
    /// A path glob the agents may change (repeatable; default: everything).
    #[arg(long = "scope", value_name = "GLOB")]
    pub scope: Vec<String>,
    /// The most an agent may do: read-only, workspace-write (the default) or full.
    #[arg(long, value_name = "LEVEL", value_parser = spelled(&PermissionLevel::ALL))]
    pub permission: Option<PermissionLevel>,
    /// The goal's duty share of a rolling window, 0..1 (0 pauses it).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub share: f64,
    /// Which active goal the agents serve first: higher first (default 0). Goals of equal
    /// priority take turns by their share.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub priority: i32,
    /// Where agents work: `worktree` (a branch and worktree per todo; the default in a git
    /// repository) or `shared` (the project's own tree; the only choice outside git).
    #[arg(long, value_name = "MODE", value_parser = spelled(&IsolationMode::ALL))]
    pub isolation: Option<IsolationMode>,
    /// Start from the last commit although the work tree has uncommitted changes (they stay
    /// in your checkout; the agents do not see them).
    #[arg(long)]
    pub from_head: bool,
    /// Start the goal's branch from a finished goal's branch (`g1`: the tip of `loopx/g1`)
    /// instead of your checkout, so its agents build on work you have not merged yet.
    #[arg(long, value_name = "GOAL", conflicts_with = "from_head")]
    pub from: Option<String>,
    #[command(flatten)]
    pub guided: GuidedArgs,
}

/// `goal start --guided`: what it asks for, each answerable by a flag (docs/goals.md).
#[derive(Debug, clap::Args)]
pub struct GuidedArgs {
    /// Ask in the terminal for whatever the flags leave out: the objective, the scope (from
    /// the repository's top-level folders), the permission, agents to add for the agent CLIs
    /// `loopx connect` found, and first todos or a planning slice.
    #[arg(long)]
    pub guided: bool,
    /// With `--guided`: add an agent on a profile first (`NAME=PROFILE`, repeatable).
    #[arg(long = "add-agent", value_name = "NAME=PROFILE", requires = "guided")]
    pub add_agents: Vec<String>,
    /// With `--guided`: a first todo (repeatable).
    #[arg(
        long = "todo",
        value_name = "TITLE",
        requires = "guided",
        conflicts_with = "plan"
    )]
    pub todos: Vec<String>,
    /// With `--guided`: no first todos; the first slice plans them.
    #[arg(long, requires = "guided")]
    pub plan: bool,
}

#[derive(Debug, Subcommand)]
pub enum GoalCommand {
    /// Start a goal (several may be active; `--priority` says which the agents serve first).
    Start(StartArgs),
    /// Amend the current goal (a person's command): its objective, scope or permission. The
    /// goal gets a new revision; every slice after it is told the change, and the next one
    /// re-plans the open todos.
    Amend {
        /// The new objective.
        #[arg(long, value_name = "TEXT")]
        objective: Option<String>,
        /// The new scope: a path glob agents may change (repeatable; replaces the whole scope).
        #[arg(long = "scope", value_name = "GLOB")]
        scope: Vec<String>,
        /// The new permission ceiling: read-only, workspace-write or full.
        #[arg(long, value_name = "LEVEL", value_parser = spelled(&PermissionLevel::ALL))]
        permission: Option<PermissionLevel>,
        /// Why, for the revision and the agents.
        #[arg(long, value_name = "TEXT", default_value = "")]
        why: String,
        /// The goal (default: the current one).
        #[arg(long, value_name = "ID")]
        goal: Option<String>,
    },
    /// List every goal.
    List,
    /// Show a goal (default: the current one).
    Show {
        /// The goal (`g1`).
        id: Option<String>,
    },
    /// The course of a goal (default: the one a command means): its agents' slices, what it
    /// cost, how it progressed, and its lineage (docs/history.md).
    History {
        #[command(flatten)]
        pick: GoalPick,
        /// Only what happened from then on (RFC 3339, `2026-12-07T04:00:00Z`) or that long
        /// ago (`6h`, `3d`).
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Print the lineage alone as a graph: `mermaid` (a flowchart) or `dot` (Graphviz).
        #[arg(long, value_name = "FORMAT", value_parser = ["mermaid", "dot"])]
        graph: Option<String>,
        /// Write the whole history as one self-contained HTML page (inline SVG, no network,
        /// no script) to FILE.
        #[arg(long, value_name = "FILE", conflicts_with = "graph")]
        html: Option<std::path::PathBuf>,
    },
    /// Pause a goal: its agents stop starting slices.
    Pause(GoalPick),
    /// Resume a paused goal.
    Resume(GoalPick),
    /// Mark a goal done.
    Done(GoalPick),
}

/// The goal a status change is about: `loopx goal pause g2` or `--goal g2`; none names the
/// current one, and with several active the command asks which.
#[derive(Debug, Args)]
pub struct GoalPick {
    /// The goal (default: the one active goal, else the newest paused one).
    #[arg(value_name = "GOAL")]
    pub id: Option<String>,
    /// The goal, as every command that acts on one takes it.
    #[arg(long = "goal", value_name = "GOAL", conflicts_with = "id")]
    pub goal: Option<String>,
}

impl GoalPick {
    /// The goal named either way.
    pub fn named(self) -> Option<String> {
        self.id.or(self.goal)
    }
}

#[derive(Debug, Args)]
pub struct HolderArgs {
    /// The agent holding the claim.
    #[arg(long, value_name = "NAME", env = "LOOPX_AGENT")]
    pub agent: String,
    /// The epoch of the claim (printed by `todo claim`).
    #[arg(long, value_name = "N", env = "LOOPX_EPOCH")]
    pub epoch: u64,
}

#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The todo (`t3`).
    pub id: String,
    /// The agent holding the claim, when finishing under a claim.
    #[arg(long, value_name = "NAME", env = "LOOPX_AGENT")]
    pub agent: Option<String>,
    /// The epoch of the claim; needed while another holds a live lease.
    #[arg(long, value_name = "N", env = "LOOPX_EPOCH")]
    pub epoch: Option<u64>,
}

/// What a todo waits on besides other todos: a check loopx polls (a monitor), or a time.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WaitArgs {
    /// Make it a monitor: loopx runs this shell command every `--every`, with no agent and no
    /// quota; exit 0 means met (the todo is done), 1 not yet (docs/monitors.md).
    #[arg(long, value_name = "COMMAND")]
    pub check: Option<String>,
    /// How often a monitor's check runs (`10m`; at least `10s`).
    #[arg(long, value_name = "DURATION", requires = "check")]
    pub every: Option<String>,
    /// A person is asked when a monitor is not met after this long (`48h`).
    #[arg(long, value_name = "DURATION", requires = "check")]
    pub expires: Option<String>,
    /// `changed`: a monitor is met when its check's output differs from its first poll's.
    #[arg(long, value_name = "CONDITION", value_parser = ["changed"], requires = "check")]
    pub until: Option<String>,
    /// The profile whose environment (and secrets, and permission) a monitor's check runs
    /// with; without it the check runs read-only in the sandbox with loopx's base environment.
    #[arg(long, value_name = "PROFILE", requires = "check")]
    pub profile: Option<String>,
    /// No agent takes the todo before then: a time (`2026-12-05T09:00:00Z`) or a duration
    /// from now (`3h`).
    #[arg(long, value_name = "TIME")]
    pub not_before: Option<String>,
}

impl WaitArgs {
    /// The monitor these flags describe, in words; `None` without `--check`.
    pub fn words(&self) -> Option<loopx_vocab::MonitorWords> {
        Some(loopx_vocab::MonitorWords {
            check: self.check.clone()?,
            every: self.every.clone(),
            expires: self.expires.clone(),
            until: self.until.clone(),
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum TodoCommand {
    /// Add a todo to the current goal.
    Add(AddArgs),
    /// List todos (default: open and claimed).
    List {
        /// Only todos in this state.
        #[arg(long, value_parser = spelled(&TodoState::ALL))]
        state: Option<TodoState>,
        /// Every todo, finished ones too.
        #[arg(long, conflicts_with = "state")]
        all: bool,
        /// At most this many todos, in the order they were added (page with `--after`).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Only this goal's todos.
        #[arg(long, value_name = "ID")]
        goal: Option<String>,
        /// Only todos added after this one (`t120`), in the order they were added: give the
        /// last todo of a page to get the next.
        #[arg(long, value_name = "ID")]
        after: Option<String>,
    },
    /// Show one todo.
    Show {
        /// The todo (`t3`).
        id: String,
    },
    /// Claim a todo for an agent: grants a lease and prints its epoch.
    Claim {
        /// The todo (`t3`).
        id: String,
        /// The agent taking it.
        #[arg(long, value_name = "NAME", env = "LOOPX_AGENT")]
        agent: String,
        /// How long the lease lasts without renewal.
        #[arg(long, value_name = "DURATION", default_value = "30m")]
        ttl: String,
    },
    /// Extend a claim's lease.
    Renew {
        /// The todo (`t3`).
        id: String,
        #[command(flatten)]
        holder: HolderArgs,
        /// The new lease length, from now.
        #[arg(long, value_name = "DURATION", default_value = "30m")]
        ttl: String,
    },
    /// Give a claim back: the todo is open again.
    Release {
        /// The todo (`t3`).
        id: String,
        #[command(flatten)]
        holder: HolderArgs,
    },
    /// Change a todo's title, detail or priority (a person's command). A handoff written before
    /// the change is shown as stale, with what changed.
    Set {
        /// The todo (`t3`).
        id: String,
        /// The new title.
        #[arg(long)]
        title: Option<String>,
        /// The new detail.
        #[arg(long)]
        detail: Option<String>,
        /// The new priority (higher runs first).
        #[arg(long, allow_negative_numbers = true)]
        priority: Option<i32>,
    },
    /// Mark a todo done.
    Done(DoneArgs),
    /// Drop a todo: it will not be done.
    Drop(FinishArgs),
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// A short title.
    pub title: String,
    /// Longer detail.
    #[arg(long, default_value = "")]
    pub detail: String,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub priority: i32,
    /// A capability the agent needs (repeatable).
    #[arg(long = "needs", value_name = "CAP")]
    pub needs: Vec<String>,
    /// A todo that must be finished first (repeatable).
    #[arg(long = "after", value_name = "ID")]
    pub after: Vec<String>,
    /// The role of agent that should take it.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// The goal (default: the current one).
    #[arg(long, value_name = "ID")]
    pub goal: Option<String>,
    #[command(flatten)]
    pub wait: WaitArgs,
}

#[derive(Debug, Args)]
pub struct DoneArgs {
    #[command(flatten)]
    pub finish: FinishArgs,
    /// Create its successor in the same transaction: a todo with this title on the same goal,
    /// with the same role, needs and priority, after this one.
    #[arg(long, value_name = "TITLE")]
    pub next: Option<String>,
    /// Hold the successor for the agent that worked on this todo: that agent takes it next,
    /// another only if it has not within 15 minutes.
    #[arg(long, requires = "next")]
    pub same_agent: bool,
}
