//! # Theory of operation
//!
//! `loopx-adapters` owns everything loopx knows about agent CLIs, and never spawns a process.
//!
//! - **Adapters** (`adapters/*.toml`, embedded; a project may add `.loopx/adapters/*.toml`)
//!   describe a runtime: program, argument template, prompt delivery, flags per
//!   [`PermissionLevel`], output format, extra signal rules, exit-code meanings, health check.
//! - **Profiles** (`profiles/*.toml` examples; a project's `.loopx/profiles/`) are one agent's
//!   settings: adapter, model, role, permission, limits, quota, environment, prompt template.
//!   Both load in two stages (`Raw*` serde shape with spans → validated types); every problem
//!   of a file is collected and reported at once with `file:line:column`, the key and a hint
//!   ([`InvalidConfig`]). A [`LoadedProfile`] carries a [`ContentHash`] over both files.
//! - **`.loopx/loopx.toml`** ([`load_project_config`]) loads the same way. Every file is read
//!   by the kernel's one reader of configuration files (`loopx_kernel::toml_file`: a regular
//!   file of at most 1 MiB, parsed once), the one the store's lookup of `[store] url` uses.
//! - [`render_launch`] turns profile + adapter + permission + prompt into a [`LaunchPlan`]
//!   (program, argv, environment allowlist, secret names, prompt delivery) for the PTY crate.
//! - [`Parser`] reads an agent's output incrementally (lines or bytes; `\r\n` and ANSI noise are
//!   tolerated; unknown events and non-JSON lines are skipped) into [`AgentEvent`]s and keeps a
//!   [`StreamSummary`]. [`classify`] turns the summary and the exit code into an [`Outcome`]:
//!   the stream first, the exit code last, because exit codes lie.
//! - [`parse_reset_time`] reads vendor reset wording ("resets 3am (Europe/London)", "try again
//!   in 5 days 22 hours", "reset after 8h44m7s") relative to a `now` it is given.
//! - [`parse_report`] reads the agent's `loopx-report` block from the final message.
//! - [`transcript::render`] turns a structured stream into a readable transcript for people
//!   (`loopx log --slice`, the board's live tail).
//! - [`inspect`] holds what `loopx profile list|show|check` and `loopx adapter test` need, as
//!   plain data for the CLI to render.
//!
//! Time is always a parameter (`now`), so everything here is a pure function of its input.
//! Classification rules and their sources are in `docs/design/classification.md`; the file
//! formats in `docs/profiles.md`.

mod adapter;
mod classify;
mod config;
mod errors;
mod event;
pub mod fixtures;
pub mod inspect;
mod launch;
pub mod live;
mod parse;
mod permission;
mod profile;
mod project;
mod project_edit;
mod report;
mod reset;
mod sandbox;
mod signals;
pub mod transcript;

pub use adapter::{
    Adapter, AdapterCatalog, AdapterOptions, BUILTIN_ADAPTERS, ExitMeaning, HealthCheck,
    OutputFormat, PromptDeliveryKind, SignalKind, SignalRule, SignalScope, StdinMode,
    load_adapter_file, load_adapter_str,
};
pub use classify::{
    Classification, DoneWhen, NO_REPORT_BLOCK, Outcome, Question, VendorLimit, classify,
    classify_for,
};
pub use config::{MAX_CONFIG_BYTES, open_regular, read_regular_text};
pub use errors::{ConfigKind, InvalidConfig, LaunchError, LoadError, Problem};
pub use event::{
    AgentEvent, Finish, FinishKind, LimitSignal, LimitStatus, LimitWindow, StreamSummary,
    TokenUsage, UsageScope, WaitKind,
};
pub use launch::{LaunchContext, LaunchPlan, MAX_ARG_BYTES, PromptDelivery, render_launch};
pub use parse::{MAX_LINE_BYTES, Parser};
pub use permission::{
    BYPASS_MARKERS, PermissionLevel, WRITE_MARKERS, find_bypass, find_write_grant,
};
pub use profile::{
    ContentHash, DEFAULT_ENV_ALLOW, DEFAULT_PROCESSES, DEFAULT_PROMPT_TEMPLATE, EnvPolicy,
    LoadedProfile, PROMPT_PLACEHOLDERS, Profile, ProfileEntry, QuotaSettings, QuotaWindow,
    ResourceLimits, SliceLimits, find_profile, load_profile_file, load_profile_str,
    load_profiles_dir, render_prompt,
};
pub use project::{
    DEFAULT_LARK_BASE_URL, DEFAULT_NOTIFY_TIMEOUT, EvidenceRules, LandCheck, LarkBoard, LarkConfig,
    LarkQuestions, MetricRule, NotifyConfig, PROJECT_CONFIG_FILE, ProjectConfig, WebhookConfig,
    load_project_config, project_config_str,
};
pub use project_edit::{EditError, set_notify};
pub use report::{
    MalformedReport, Report, ReportDrop, ReportEvidence, ReportQuestion, ReportRewrite,
    ReportStatus, ReportTodo, parse_report,
};
pub use reset::{epoch_to_timestamp, parse_reset_time};
pub use sandbox::{SandboxMode, SandboxPolicy, expand_path};
pub use signals::limit_from_text;
