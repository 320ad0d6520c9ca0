//! Rendering a launch: profile + adapter + permission + prompt → the exact program, argv and
//! environment policy the PTY crate spawns. Nothing here reads the environment or the clock.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::PermissionLevel;
use crate::adapter::{OutputFormat, PromptDeliveryKind, StdinMode};
use crate::config::fill_placeholders;
use crate::errors::LaunchError;
use crate::profile::{ContentHash, LoadedProfile, SliceLimits};

/// Linux `MAX_ARG_STRLEN`: the longest single argv element the kernel accepts.
pub const MAX_ARG_BYTES: usize = 128 * 1024 - 1;

/// Where things are, for placeholders.
#[derive(Debug, Clone)]
pub struct LaunchContext {
    /// The running loopx executable (`{loopx}`, used by the demo adapter).
    pub loopx_exe: PathBuf,
    /// The project root; the profile's `workdir` is relative to it.
    pub project_root: PathBuf,
    /// Where the supervisor will write the prompt when the adapter takes it by file.
    pub prompt_file: PathBuf,
}

/// How the prompt reaches the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PromptDelivery {
    /// Already in `args`.
    Argument,
    /// Write `contents` to `path` (mode 0600) before spawning.
    File {
        /// The file.
        path: PathBuf,
        /// The prompt.
        contents: String,
    },
    /// Write `contents` to the agent's stdin, then end-of-file.
    Stdin {
        /// The prompt.
        contents: String,
    },
    /// Write `contents` as the first stream-json line ([`crate::live::user_line`]) on a stdin
    /// pipe that stays open for a person's messages.
    StreamJson {
        /// The prompt.
        contents: String,
    },
}

/// Everything needed to spawn one slice of an agent.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchPlan {
    /// The executable (a name looked up on `PATH`, or a path).
    pub program: String,
    /// Arguments, without the program.
    pub args: Vec<String>,
    /// Working directory.
    pub workdir: PathBuf,
    /// Variables passed through from loopx's environment when present (nothing else passes).
    pub env_allowlist: Vec<String>,
    /// Credential variables passed when present; their values must be redacted everywhere.
    pub secret_env_names: Vec<String>,
    /// Fixed values to set.
    pub env_set: BTreeMap<String, String>,
    /// How the prompt is delivered.
    pub prompt_delivery: PromptDelivery,
    /// What stdin must be.
    pub stdin: StdinMode,
    /// Which parser reads the output.
    pub output: OutputFormat,
    /// The level this launch runs at.
    pub permission: PermissionLevel,
    /// Whether a human approval bound to `content_hash` is required first (`full`).
    pub requires_approval: bool,
    /// Hash of the profile and adapter files.
    pub content_hash: ContentHash,
    /// How the slice is contained: the profile's mode, and the adapter's then the profile's
    /// writable paths, as written (see [`crate::expand_path`]).
    pub sandbox: crate::SandboxPolicy,
    /// Limits loopx enforces.
    pub limits: SliceLimits,
}

/// A launch that takes live input keeps what that needs on its final command line.
fn live_input_kept(loaded: &LoadedProfile, args: &[String]) -> Result<(), LaunchError> {
    let adapter = &loaded.adapter;
    if adapter.prompt_delivery != PromptDeliveryKind::StreamJson {
        return Ok(());
    }
    let missing = crate::live::missing_flags(args);
    match missing.is_empty() {
        true => Ok(()),
        false => Err(LaunchError::LiveInputFlags {
            profile: loaded.profile.name.clone(),
            adapter: adapter.name.clone(),
            missing: missing.join("` and `"),
        }),
    }
}

/// Render the launch of `loaded` at `permission` with `prompt`.
pub fn render_launch(
    loaded: &LoadedProfile,
    permission: PermissionLevel,
    prompt: &str,
    ctx: &LaunchContext,
) -> Result<LaunchPlan, LaunchError> {
    let level_flags = checked(loaded, permission, prompt)?;
    let (profile, adapter) = (&loaded.profile, &loaded.adapter);
    let workdir = ctx.project_root.join(&profile.workdir);
    let mut values: BTreeMap<&str, String> = BTreeMap::from([
        ("loopx", ctx.loopx_exe.display().to_string()),
        ("workdir", workdir.display().to_string()),
        ("prompt_file", ctx.prompt_file.display().to_string()),
        ("prompt", prompt.to_owned()),
    ]);
    if let Some(model) = &profile.model {
        values.insert("model", model.clone());
    }
    if let Some(turns) = profile.limits.max_turns {
        values.insert("max_turns", turns.to_string());
    }
    let args = arguments(loaded, level_flags, &values);
    live_input_kept(loaded, &args)?;
    let program = profile
        .program
        .as_deref()
        .or(adapter.program.as_deref())
        .map(|p| substitute(p, &values))
        .unwrap_or_default();
    let prompt_delivery = match adapter.prompt_delivery {
        PromptDeliveryKind::Argument => PromptDelivery::Argument,
        PromptDeliveryKind::File => PromptDelivery::File {
            path: ctx.prompt_file.clone(),
            contents: prompt.to_owned(),
        },
        PromptDeliveryKind::Stdin => PromptDelivery::Stdin {
            contents: prompt.to_owned(),
        },
        PromptDeliveryKind::StreamJson => PromptDelivery::StreamJson {
            contents: prompt.to_owned(),
        },
    };
    let mut env_set = adapter.env_set.clone();
    env_set.extend(profile.env.set.clone());
    Ok(LaunchPlan {
        program,
        args,
        workdir,
        env_allowlist: union(&profile.env.allow, &adapter.env_pass),
        secret_env_names: union(&adapter.env_secrets, &profile.env.secrets),
        env_set,
        prompt_delivery,
        stdin: adapter.stdin,
        output: adapter.output,
        permission,
        requires_approval: permission == PermissionLevel::Full,
        content_hash: loaded.content_hash,
        sandbox: crate::SandboxPolicy {
            mode: profile.sandbox.mode,
            writable: union(&adapter.sandbox_writable, &profile.sandbox.writable),
        },
        limits: profile.limits.clone(),
    })
}

/// The flags that give `permission`, once the launch is allowed: a level the profile
/// permits and the adapter can express, a prompt that can be delivered.
fn checked<'a>(
    loaded: &'a LoadedProfile,
    permission: PermissionLevel,
    prompt: &str,
) -> Result<&'a Vec<String>, LaunchError> {
    let (profile, adapter) = (&loaded.profile, &loaded.adapter);
    if permission > profile.permission {
        return Err(LaunchError::AboveProfile {
            profile: profile.name.clone(),
            allowed: profile.permission,
            requested: permission,
        });
    }
    let level_flags =
        adapter
            .permissions
            .get(&permission)
            .ok_or_else(|| LaunchError::NotExpressible {
                adapter: adapter.name.clone(),
                requested: permission,
                supported: adapter
                    .supported_levels()
                    .iter()
                    .map(|l| format!("`{l}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
    if prompt.contains('\0') {
        return Err(LaunchError::NulInPrompt);
    }
    if adapter.prompt_delivery == PromptDeliveryKind::Argument && prompt.len() > MAX_ARG_BYTES {
        return Err(LaunchError::PromptTooLong {
            adapter: adapter.name.clone(),
            len: prompt.len(),
            limit: MAX_ARG_BYTES,
        });
    }
    Ok(level_flags)
}

/// The adapter's arguments with the profile's flags in place of `{flags}` (at the end when
/// it has none), every placeholder filled from `values`.
fn arguments(
    loaded: &LoadedProfile,
    level_flags: &[String],
    values: &BTreeMap<&str, String>,
) -> Vec<String> {
    let (profile, adapter) = (&loaded.profile, &loaded.adapter);
    let mut flags = level_flags.to_vec();
    if profile.model.is_some() {
        flags.extend(adapter.options.model.iter().cloned());
    }
    if profile.limits.max_turns.is_some() {
        flags.extend(adapter.options.max_turns.iter().cloned());
    }
    flags.extend(adapter.options.workdir.iter().cloned());
    flags.extend(profile.extra_args.iter().cloned());
    let flags: Vec<String> = flags.iter().map(|f| substitute(f, values)).collect();
    let mut args = Vec::with_capacity(adapter.args.len() + flags.len());
    let mut placed = false;
    for element in &adapter.args {
        if element == "{flags}" {
            args.extend(flags.iter().cloned());
            placed = true;
        } else {
            args.push(substitute(element, values));
        }
    }
    if !placed {
        args.extend(flags);
    }
    args
}

fn substitute(template: &str, values: &BTreeMap<&str, String>) -> String {
    fill_placeholders(template, |name| values.get(name).map(String::as_str))
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = a.iter().chain(b).cloned().collect();
    out.sort();
    out.dedup();
    out
}
