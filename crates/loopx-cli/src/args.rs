//! The command line, as clap sees it. Every argument has a doc line: it is the `--help` text.

use std::path::PathBuf;

use std::str::FromStr;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use loopx_vocab::{EvidenceKind, Spelled, UnknownWord};

mod work;
pub use work::*;

/// The heading of the flags every command takes: under their own heading, after a command's
/// own options, so that `loopx todo add --help` starts with what `todo add` itself takes.
const GLOBAL: &str = "Global options";

/// Supervise AI coding agents on goals that take days.
#[derive(Debug, Parser)]
#[command(name = "loopx", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// The project root (default: walk up from the current directory to one with `.loopx/`).
    #[arg(long, global = true, value_name = "DIR", env = "LOOPX_PROJECT", help_heading = GLOBAL)]
    pub project: Option<PathBuf>,
    /// Print results as JSON (one object; `log` prints JSON Lines).
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// When to colour the output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN", help_heading = GLOBAL)]
    pub color: ColorChoice,
    /// Log more on stderr: -v info, -vv debug, -vvv trace (`LOOPX_LOG`, a filter such as
    /// `debug` or `loopx_supervisor=debug`, takes precedence).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create `.loopx/` in the current directory (or `--project DIR`).
    Init(InitArgs),
    /// loopx in an existing repository in one step: `.loopx/` if absent, a profile for each
    /// agent CLI on PATH (and whether it shows a login), `loopx projects`, `loopx doctor`.
    Connect,
    /// Start, show and change goals.
    #[command(subcommand)]
    Goal(GoalCommand),
    /// Add, claim and finish todos.
    #[command(subcommand)]
    Todo(TodoCommand),
    /// Ask people questions and answer them.
    #[command(subcommand)]
    Gate(GateCommand),
    /// Record and list what slices and people showed.
    #[command(subcommand)]
    Evidence(EvidenceCommand),
    /// Show the newest handoff, or write one.
    Handoff(HandoffArgs),
    /// Register and list agents.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// What needs you, what runs, what waits, what is next (`--all`: in every project of
    /// `loopx projects`).
    Status(StatusArgs),
    /// The event history.
    Log(LogArgs),
    /// A worktree goal's todo: the diff of its branch against the goal's branch.
    Diff(DiffArgs),
    /// Check the sandbox, the store, its integrity and its permissions (read-only).
    Doctor(DoctorArgs),
    /// Remove what finished goals left: their worktrees, their todos' branches, and their
    /// branches once merged into yours (`--all`: also unmerged ones).
    Clean(CleanArgs),
    /// Every project you ran `loopx init` in, at a glance: its active goals, open questions,
    /// running slices, monitors waiting and last activity (see docs/projects.md).
    Projects(ProjectsArgs),
    /// The board in a browser: todos by state, questions first, live transcripts, and the
    /// same changes as the CLI (served on 127.0.0.1 with a token; see docs/board.md).
    Board(BoardArgs),
    /// Every running agent's screen in this terminal, with the open questions, monitors and
    /// accounts; answer, pause and resume with keys (see docs/watch.md).
    Watch(WatchArgs),
    /// List, show and check agent profiles (`.loopx/profiles/*.toml`).
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Test an adapter: replay recorded streams and run the installed CLI's health check.
    #[command(subcommand)]
    Adapter(AdapterCommand),
    /// Pacing, token and cost windows, holds, and the decision before a slice.
    #[command(subcommand)]
    Quota(QuotaCommand),
    /// Run agents: decide, run one bounded slice, write back what it did.
    Run(RunArgs),
    /// The whole loop in under a minute on the built-in simulated agent (no API key).
    Demo(DemoArgs),
    /// Deterministic simulation: the real loop on a virtual clock with simulated agents,
    /// people and faults, checking its invariants after every step.
    Sim(SimArgs),
    /// For agents inside a slice: record evidence, a handoff, a todo, a question, or done.
    #[command(subcommand)]
    Report(ReportCommand),
    /// The state store: copy a project to PostgreSQL (several hosts, one goal).
    #[command(subcommand)]
    Store(StoreCommand),
    /// The Lark (Feishu) board: the todos as records of a Lark Base table (`[lark]` in
    /// `.loopx/loopx.toml`; see docs/lark.md).
    #[command(subcommand)]
    Lark(LarkCommand),
    /// The command loopx runs when a person should hear of something (a question, a pause, a
    /// failed slice, the goal met): set by a person, approved as it is set (docs/cli.md,
    /// "Notifications").
    #[command(subcommand)]
    Notify(NotifyCommand),
    /// Send an agent a message: into its running session when its CLI takes input while it runs
    /// (Claude Code), else it heads the agent's next slice's prompt (see
    /// docs/watch.md, "Messages").
    Say(SayArgs),
    /// Print a shell completion script (`loopx completions bash > ~/.local/share/bash-completion/completions/loopx`).
    Completions(CompletionsArgs),
    /// Print the man page, loopx(1), in roff (`loopx man > ~/.local/share/man/man1/loopx.1`).
    Man,
}

#[derive(Debug, clap::Args)]
pub struct SayArgs {
    /// The agent (`exec`).
    pub agent: String,
    /// What to say (several words are joined with spaces).
    #[arg(required = true, value_name = "TEXT")]
    pub text: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells `loopx completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Command {
    /// The command's name as typed (`status`, `gate`).
    pub fn name(&self) -> &'static str {
        match self {
            Command::Init(_) => "init",
            Command::Connect => "connect",
            Command::Store(_) => "store",
            Command::Goal(_) => "goal",
            Command::Todo(_) => "todo",
            Command::Gate(_) => "gate",
            Command::Evidence(_) => "evidence",
            Command::Handoff(_) => "handoff",
            Command::Agent(_) => "agent",
            Command::Status(_) => "status",
            Command::Log(_) => "log",
            Command::Diff(_) => "diff",
            Command::Doctor(_) => "doctor",
            Command::Clean(_) => "clean",
            Command::Projects(_) => "projects",
            Command::Board(_) => "board",
            Command::Watch(_) => "watch",
            Command::Profile(_) => "profile",
            Command::Adapter(_) => "adapter",
            Command::Quota(_) => "quota",
            Command::Run(_) => "run",
            Command::Demo(_) => "demo",
            Command::Sim(_) => "sim",
            Command::Report(_) => "report",
            Command::Lark(_) => "lark",
            Command::Notify(_) => "notify",
            Command::Say(_) => "say",
            Command::Completions(_) => "completions",
            Command::Man => "man",
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// List what would be removed, and remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also remove work found nowhere else: goal branches not merged into your branch, todo
    /// branches whose commits never landed, worktrees with uncommitted work.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Every project you ran `loopx init` in (`loopx projects`), one after another.
    #[arg(long, conflicts_with = "goal")]
    pub all: bool,
    /// Only this goal: its todos, its slices, the questions that hold it back (default: every
    /// active goal).
    #[arg(long, value_name = "GOAL")]
    pub goal: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ProjectsArgs {
    #[command(subcommand)]
    pub command: Option<ProjectsCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum ProjectsCommand {
    /// Remove a project from the list (its files stay as they are; `loopx init` in it adds it
    /// again).
    Forget {
        /// The project's directory, as `loopx projects` shows it.
        path: std::path::PathBuf,
    },
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Keep the state in this PostgreSQL database instead of `.loopx/state.redb`, so that
    /// supervisors on several hosts share it (recorded as `[store] url` in `.loopx/loopx.toml`;
    /// a database that already holds the project is joined). Give the password in
    /// `PGPASSWORD`, never in the URL. See docs/design/multi-host.md.
    #[arg(long, value_name = "postgres://USER@HOST:PORT/DB")]
    pub store: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum LarkCommand {
    /// Bring the Base table in step with the todos once: create the table's missing fields,
    /// create, update and delete records, and say what changed. The app secret comes from
    /// `LOOPX_LARK_APP_SECRET`.
    Sync,
}

#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Run COMMAND (with `sh -c`, in the project root, the event as JSON on stdin) when a person
    /// should hear of something. Written into `.loopx/loopx.toml` as `[notify]` and approved at
    /// once: you set it, so no separate approval question is asked. Refused inside a slice.
    Set {
        /// The shell command, e.g. 'notify-send loopx "$(jq -r .message)"'.
        command: String,
        /// Kill it after this long (default 10s).
        #[arg(long, value_name = "DURATION")]
        timeout: Option<String>,
    },
    /// Stop notifying: remove `[notify]` from `.loopx/loopx.toml`.
    Off,
    /// The command set, and whether a person approved it.
    Show,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy this project's store (every entity, index and event) into an empty PostgreSQL
    /// database, then check the copy row for row.
    Copy {
        /// The database to copy into: postgres://USER@HOST:PORT/DB (password in `PGPASSWORD`).
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// A parser that offers (in `--help` and completions) and accepts exactly the spellings of
/// `members`, giving the typed member: the words come from the vocabulary, not a list here.
pub(crate) fn spelled<T>(members: &'static [T]) -> impl TypedValueParser<Value = T>
where
    T: Spelled + FromStr<Err = UnknownWord> + Clone,
{
    PossibleValuesParser::new(members.iter().map(|m| m.spelling())).try_map(|s| s.parse::<T>())
}

/// `loopx report …`: the slice comes from `LOOPX_SLICE`, the agent from `LOOPX_AGENT`, and the
/// claim from `LOOPX_TODO` and `LOOPX_EPOCH`, as loopx set them for the slice.
#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Record evidence on the slice (and its todo).
    Evidence {
        /// test, diff, note, artifact or metric.
        #[arg(value_parser = spelled(&EvidenceKind::AGENT))]
        kind: EvidenceKind,
        /// What was shown, in one line (several words are joined with spaces); for a metric,
        /// `NAME=VALUE` first (`accuracy=0.913 on the held-out set`).
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
        /// A metric's unit (`%`, `ms`).
        #[arg(long, value_name = "U")]
        unit: Option<String>,
        /// Longer detail.
        #[arg(long, default_value = "")]
        detail: String,
        /// A file it refers to, pinned by its sha256 (repeatable).
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<PathBuf>,
    },
    /// Write a handoff for the next agent on the slice's todo.
    Handoff(HandoffText),
    /// Propose a follow-up todo for the current goal.
    Todo {
        /// A short title.
        title: String,
        /// Longer detail.
        #[arg(long, default_value = "")]
        detail: String,
        /// Higher runs first.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        priority: i32,
        /// The role of agent that should take it.
        #[arg(long, value_name = "ROLE")]
        role: Option<String>,
        /// A todo that must be finished first (repeatable): a monitor you reported, say.
        #[arg(long = "after", value_name = "ID")]
        after: Vec<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Ask a person a concrete question; blocks the slice's todo (or, without one, this agent).
    Ask(QuestionArgs),
    /// Mark the slice's todo done.
    Done {
        /// One line on what was done, recorded as a note.
        #[arg(long, value_name = "TEXT")]
        summary: Option<String>,
    },
    /// Propose a change to the goal: a person accepts it (it becomes the goal's next
    /// revision) or rejects it. Nothing changes until then.
    ProposeGoal {
        /// What the objective should say.
        #[arg(long, value_name = "TEXT")]
        objective: Option<String>,
        /// A path glob the goal's scope should have (repeatable; replaces the whole scope).
        #[arg(long = "scope", value_name = "GLOB")]
        scope: Vec<String>,
        /// Why, for the person who decides.
        #[arg(long, value_name = "TEXT")]
        why: String,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Decide once and run at most one slice of one agent, then exit.
    #[arg(long, conflicts_with_all = ["max_slices", "run_for", "on_gate"])]
    pub once: bool,
    /// An agent to run (repeatable; default: every registered agent, or with `--once` the
    /// first in name order).
    #[arg(long, value_name = "NAME")]
    pub agent: Vec<String>,
    /// Stop after N slices in all (every agent's together).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_slices: Option<u64>,
    /// Start no slice after this long (e.g. `8h`); running slices finish first.
    #[arg(long = "for", value_name = "DURATION")]
    pub run_for: Option<String>,
    /// When a person must answer: `wait` shows the question and keeps the other agents
    /// going; `exit` exits with code 7 once no agent can go on.
    #[arg(long, value_name = "WHAT", value_enum)]
    pub on_gate: Option<OnGateArg>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo project (default: a new temporary directory). It is kept.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// The scenario (TOML); default: the built-in 200-hour scenario (`tests/sim/200h.toml`).
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<std::path::PathBuf>,
    /// The seed: the same seed replays the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run this many seeds, from `--seed` on, one line each.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Simulate at most this many hours (overrides the scenario's `sim.hours`).
    #[arg(long)]
    pub hours: Option<f64>,
    /// Keep the simulated project in DIR, for `loopx status`, `loopx log`.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<std::path::PathBuf>,
    /// Write the history page of the simulated run's first goal to FILE (as `loopx goal
    /// history --html` does): a 200-hour arc in one page.
    #[arg(long, value_name = "FILE")]
    pub history: Option<std::path::PathBuf>,
    /// Also run a baseline on the same seed and compare (a scenario with `[experiments]`):
    /// `timer:15m` wakes each agent every 15 minutes to look, with no monitors.
    #[arg(long, value_name = "POLICY")]
    pub baseline: Option<String>,
}

/// `--on-gate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnGateArg {
    Wait,
    Exit,
}

#[derive(Debug, Subcommand)]
pub enum QuotaCommand {
    /// Per agent and account: what is left, what holds, until when.
    Status {
        /// Every account of your shared ledger (the account book), with the projects
        /// spending on it; needs no project.
        #[arg(long)]
        all: bool,
    },
    /// What the agent should do now: deliver, repair, ask, wait, quiet or stop. Reads only.
    ShouldRun {
        /// The agent to decide for.
        #[arg(long, value_name = "NAME", env = "LOOPX_AGENT")]
        agent: String,
    },
    /// Admit one slice for an agent (refused with exit 5 when quota says wait), or with
    /// `--charge` record usage after the fact.
    Spend {
        /// The agent spending.
        #[arg(long, value_name = "NAME", env = "LOOPX_AGENT")]
        agent: String,
        /// Tokens used (or about to be).
        #[arg(long, default_value_t = 0)]
        tokens: u64,
        /// US dollars spent (or about to be).
        #[arg(long, value_name = "USD", default_value_t = 0.0)]
        cost: f64,
        /// Record usage known after a slice ran: never refused; overspend becomes debt.
        #[arg(long)]
        charge: bool,
        /// How long the slice ran (counts toward the goal's share), with --charge.
        #[arg(long, value_name = "DURATION", requires = "charge")]
        ran: Option<String>,
    },
    /// Hold an account until a time: every agent on it waits.
    Hold {
        /// The account (see `loopx quota status`).
        #[arg(long, value_name = "ACCOUNT")]
        account: String,
        /// When the hold ends: RFC 3339 (`2026-11-30T15:00:00Z`) or a duration from now (`2h`).
        #[arg(long, value_name = "TIME")]
        until: String,
        /// Why, in a few words.
        #[arg(long, default_value = "held by a person")]
        reason: String,
    },
    /// Pause an agent or an account until resumed.
    Pause {
        /// The agent to pause.
        #[arg(
            long,
            value_name = "NAME",
            conflicts_with = "account",
            required_unless_present = "account"
        )]
        agent: Option<String>,
        /// The account to pause.
        #[arg(long, value_name = "ACCOUNT")]
        account: Option<String>,
    },
    /// Lift holds and pauses: of an agent, an account, or (without flags) all of them.
    Resume {
        /// The agent to resume.
        #[arg(long, value_name = "NAME", conflicts_with = "account")]
        agent: Option<String>,
        /// The account to resume.
        #[arg(long, value_name = "ACCOUNT")]
        account: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Every profile in `.loopx/profiles/`, valid or not.
    List,
    /// One profile: its adapter, permission, content hash and file.
    Show {
        /// The profile's name (its file name without `.toml`).
        name: String,
    },
    /// Validate a profile (default: every profile of the project); runs nothing.
    Check {
        /// A profile's name, as `profile show` takes it (`executor`, or `executor.toml`), or a
        /// path to a profile file, relative to the current directory.
        #[arg(value_name = "NAME|FILE")]
        profile: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdapterCommand {
    /// Replay the adapter's recorded streams through its parser and check the installed CLI.
    Test {
        /// The profile whose adapter to test.
        profile: String,
    },
}

/// A question for a person (`gate ask`, `report ask`).
#[derive(Debug, Args)]
pub struct QuestionArgs {
    /// The question: names the decision and ends with `?`.
    pub question: String,
    /// A choice (repeatable); a person answers with `--option N`.
    #[arg(long = "option", value_name = "TEXT")]
    pub options: Vec<String>,
    /// Background the person needs.
    #[arg(long, default_value = "")]
    pub context: String,
}

#[derive(Debug, Subcommand)]
pub enum GateCommand {
    /// Ask a person a concrete question; blocks work until answered.
    Ask {
        #[command(flatten)]
        ask: QuestionArgs,
        /// Block only these todos (repeatable).
        #[arg(long = "blocks", value_name = "ID", conflicts_with_all = ["agent", "global"])]
        blocks: Vec<String>,
        /// Block only this agent.
        #[arg(long, value_name = "NAME", conflicts_with = "global")]
        agent: Option<String>,
        /// Block every agent (the default outside a slice).
        #[arg(long)]
        global: bool,
        /// Block one goal's work: the other active goals go on.
        #[arg(long, value_name = "ID", conflicts_with_all = ["blocks", "agent", "global"])]
        goal: Option<String>,
    },
    /// List open gates (`--all` for answered and withdrawn too).
    List {
        /// Show answered and withdrawn gates too.
        #[arg(long)]
        all: bool,
        /// Only the gates that hold back this goal's work: its own, its todos', every global
        /// one.
        #[arg(long, value_name = "ID")]
        goal: Option<String>,
    },
    /// Show one gate.
    Show {
        /// The gate (`q1`).
        id: String,
    },
    /// Answer a gate (people only; refused inside a slice).
    Answer {
        /// The gate (`q1`).
        id: String,
        /// The answer, in words.
        #[arg(required_unless_present = "option", conflicts_with = "option")]
        answer: Option<String>,
        /// Choose option N (1-based).
        #[arg(long, value_name = "N")]
        option: Option<u32>,
        /// Guidance for the next slice, beside the chosen option (`1 --note "use the v2 API"`).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Withdraw a question that no longer matters.
    Withdraw {
        /// The gate (`q1`).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum EvidenceCommand {
    /// Record evidence.
    Add {
        /// One line: what was shown.
        summary: String,
        /// The todo it is about.
        #[arg(long, value_name = "ID", env = "LOOPX_TODO")]
        todo: Option<String>,
        /// The epoch of the claim this is written under (refused when stale).
        #[arg(long, value_name = "N", env = "LOOPX_EPOCH")]
        epoch: Option<u64>,
        /// slice, test, diff, note, artifact, quota, violation or metric (`NAME=VALUE` first in
        /// the summary).
        #[arg(long, default_value = "note", value_parser = spelled(&EvidenceKind::PERSON))]
        kind: EvidenceKind,
        /// A metric's unit (`%`, `ms`).
        #[arg(long, value_name = "U")]
        unit: Option<String>,
        /// Longer detail.
        #[arg(long, default_value = "")]
        detail: String,
        /// A file it refers to, pinned by its sha256 (repeatable).
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<PathBuf>,
    },
    /// List evidence, newest first.
    List {
        /// Only evidence about this todo.
        #[arg(long, value_name = "ID")]
        todo: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HandoffArgs {
    /// The todo whose newest handoff to show (default: the newest project-wide one).
    #[arg(long, value_name = "ID")]
    pub todo: Option<String>,
    #[command(subcommand)]
    pub write: Option<HandoffCommand>,
}

#[derive(Debug, Subcommand)]
pub enum HandoffCommand {
    /// Write a handoff for the next agent.
    Write {
        /// The todo it is about.
        #[arg(long, value_name = "ID", env = "LOOPX_TODO")]
        todo: Option<String>,
        /// The epoch of the claim this is written under (refused when stale).
        #[arg(long, value_name = "N", env = "LOOPX_EPOCH")]
        epoch: Option<u64>,
        #[command(flatten)]
        text: HandoffText,
    },
}

/// What a handoff says (`handoff write`, `report handoff`).
#[derive(Debug, Args)]
pub struct HandoffText {
    /// What was done.
    #[arg(long, default_value = "")]
    pub done: String,
    /// What comes next.
    #[arg(long, default_value = "")]
    pub next: String,
    /// A file touched (repeatable).
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// An open question (repeatable).
    #[arg(long = "question", value_name = "TEXT")]
    pub questions: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Register an agent.
    Add {
        /// The agent's name (`exec`, `reviewer-2`).
        name: String,
        /// The profile it runs with.
        #[arg(long, value_name = "PROFILE")]
        profile: String,
        /// A capability it has (repeatable).
        #[arg(long = "capability", value_name = "CAP")]
        capabilities: Vec<String>,
        /// Its role (`executor`, `reviewer`).
        #[arg(long, value_name = "ROLE")]
        role: Option<String>,
    },
    /// List registered agents.
    List,
    /// Change an agent's profile, capabilities or role (its next slice uses them).
    Set {
        /// The agent's name.
        name: String,
        /// The profile it runs with from now on.
        #[arg(long, value_name = "PROFILE")]
        profile: Option<String>,
        /// Its capabilities, replacing the old ones (repeatable).
        #[arg(long = "capability", value_name = "CAP")]
        capabilities: Vec<String>,
        /// Its role.
        #[arg(long, value_name = "ROLE")]
        role: Option<String>,
        /// The goals it works on, comma-separated (`g1,g3`); `all` for every goal (the
        /// default).
        #[arg(long, value_name = "GOALS")]
        goals: Option<String>,
    },
    /// Remove an agent that runs no slice now; the todos it holds go back to open.
    Remove {
        /// The agent's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The todo (`t3`).
    pub todo: String,
    /// Only which files changed, and how much.
    #[arg(long)]
    pub stat: bool,
}

#[derive(Debug, clap::Args)]
pub struct BoardArgs {
    /// The port on 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Every project you ran `loopx init` in (`loopx projects`), on one page; each change goes
    /// to its own project's store.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Only this goal's slices, the questions that hold it back and its monitors (default:
    /// every active goal).
    #[arg(long, value_name = "GOAL")]
    pub goal: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Let the database engine repair the store where it needs it (after an interrupted
    /// write); without it, doctor only reads and says what it would do.
    #[arg(long)]
    pub repair: bool,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Keep printing new events as they happen.
    #[arg(long, short)]
    pub follow: bool,
    /// Show this many of the newest events.
    #[arg(long, short = 'n', default_value_t = 50)]
    pub limit: usize,
    /// Only one slice: its events, then its recorded output as text (escape sequences
    /// removed, control characters shown).
    #[arg(long, value_name = "ID")]
    pub slice: Option<String>,
    /// Only the events about one goal: the goal's own, and those of its todos, its slices and
    /// the gates that hold it back.
    #[arg(long, value_name = "GOAL", conflicts_with = "slice")]
    pub goal: Option<String>,
    /// Only the events by or about one agent.
    #[arg(long, value_name = "NAME", conflicts_with = "slice")]
    pub agent: Option<String>,
    /// Only the events about one todo (and its slices).
    #[arg(long, value_name = "ID", conflicts_with = "slice")]
    pub todo: Option<String>,
    /// Only events of this kind (repeatable; `slice` keeps every `slice_…` kind).
    #[arg(long = "kind", value_name = "KIND", conflicts_with = "slice")]
    pub kinds: Vec<String>,
    /// Only events at or after this time: RFC 3339, or a duration ago (`2h`).
    #[arg(long, value_name = "TIME", conflicts_with = "slice")]
    pub since: Option<String>,
    /// Only events at or before this time: RFC 3339, or a duration ago (`30m`).
    #[arg(long, value_name = "TIME", conflicts_with = "slice")]
    pub until: Option<String>,
    /// With `--slice`: the recorded output byte for byte, escape sequences included.
    #[arg(long, requires = "slice")]
    pub raw: bool,
}
