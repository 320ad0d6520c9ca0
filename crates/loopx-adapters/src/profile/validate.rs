//! Stage two for profiles: raw shape → [`Profile`], checked against its adapter.

use std::ops::Range;
use std::path::{Component, PathBuf};

use super::raw::{RawEnv, RawLimits, RawProfile, RawQuota, RawWindow};
use super::spec::{
    DEFAULT_ENV_ALLOW, DEFAULT_PROMPT_TEMPLATE, EnvPolicy, PROMPT_PLACEHOLDERS, Profile,
    QuotaSettings, QuotaWindow, SliceLimits,
};
use crate::DoneWhen;
use crate::adapter::{Adapter, AdapterCatalog, check_placeholders};
use crate::adapter::{duration, duration_field, env_names, one_of};
use crate::config::{
    Checked, Problems, SizeValue, did_you_mean, is_env_name, is_id, parse_byte_size, take,
};
use crate::errors::LoadError;
use crate::permission::{PermissionLevel, find_bypass};

/// Validate a parsed profile. `Err` only when its adapter file itself cannot be loaded.
pub(crate) fn validate(
    name: &str,
    mut raw: RawProfile,
    catalog: &AdapterCatalog,
    p: &mut Problems,
) -> Result<Option<(Profile, Adapter)>, LoadError> {
    let Some((adapter_name, span)) = take(raw.adapter.take(), "adapter", p) else {
        p.push(
            0..0,
            Some("adapter"),
            "missing key `adapter`",
            Some(format!(
                "add e.g. `adapter = \"claude-code\"` (available: {})",
                catalog.names().join(", ")
            )),
        );
        // The rest is checked all the same, so one run reports every problem.
        check(name, raw, None, p);
        return Ok(None);
    };
    let adapter = resolve_adapter(&adapter_name, span, catalog, p)?;
    Ok(check(name, raw, adapter, p))
}

/// The profile's keys, checked against `adapter` when it loaded.
fn check(
    name: &str,
    raw: RawProfile,
    adapter: Option<Adapter>,
    p: &mut Problems,
) -> Option<(Profile, Adapter)> {
    let permission = permission(take(raw.permission, "permission", p), adapter.as_ref(), p);
    let description = take(raw.description, "description", p)
        .map(|(v, _)| v)
        .unwrap_or_default();
    let model = take(raw.model, "model", p);
    let role = id_value(take(raw.role, "role", p), "role", p);
    let capabilities = capabilities(take(raw.capabilities, "capabilities", p), p);
    let program = take(raw.program, "program", p);
    if let Some(adapter) = &adapter {
        can_run(adapter, model.as_ref(), program.is_some(), p);
    }
    let extra = take(raw.extra_args, "extra_args", p);
    let extra_span = extra.as_ref().map(|(_, span)| span.clone());
    let extra_args = extra_args(extra, p);
    if let (Some(adapter), Some(extra), Some(span)) = (&adapter, &extra_args, extra_span) {
        live_input_kept(adapter, extra, span, p);
    }
    let workdir = workdir(take(raw.workdir, "workdir", p), p);
    let done_when = done_when(
        take(raw.done_when, "done_when", p),
        take(raw.done_pattern, "done_pattern", p),
        p,
    );
    let template = take(raw.prompt.and_then(|r| r.template), "prompt.template", p);
    let prompt_template = template.map_or(DEFAULT_PROMPT_TEMPLATE.to_owned(), |(text, span)| {
        check_placeholders(&text, &PROMPT_PLACEHOLDERS, "prompt.template", &span, p);
        text
    });
    let limits = limits(raw.limits, adapter.as_ref(), p);
    let default_account = adapter
        .as_ref()
        .map_or_else(String::new, |a| a.name.clone());
    let quota = quota(raw.quota, default_account, p);
    let env = env(raw.env, p);
    let sandbox = sandbox(raw.sandbox, p);
    let (Some(adapter), Some((permission, _))) = (adapter, permission) else {
        return None;
    };
    let profile = Profile {
        name: name.to_owned(),
        description,
        adapter: adapter.name.clone(),
        model: model.map(|(m, _)| m),
        role,
        capabilities,
        permission,
        program: program.map(|(v, _)| v),
        extra_args: extra_args.unwrap_or_default(),
        workdir,
        done_when,
        prompt_template,
        limits,
        quota,
        env,
        sandbox,
        file: String::new(),
    };
    Some((profile, adapter))
}

/// What the profile asks of its adapter that the adapter cannot give: a model it cannot
/// choose, or no program named by either.
fn can_run(
    adapter: &Adapter,
    model: Option<&(String, Range<usize>)>,
    has_program: bool,
    p: &mut Problems,
) {
    if let Some((_, span)) = model.filter(|_| adapter.options.model.is_empty()) {
        p.push(
            span.clone(),
            Some("model"),
            format!("adapter `{}` has no way to choose a model", adapter.name),
            Some("remove `model`, or add `[options] model = [...]` to the adapter".to_owned()),
        );
    }
    if adapter.program.is_none() && !has_program {
        p.push(
            0..0,
            Some("program"),
            format!(
                "adapter `{}` names no program, so the profile must",
                adapter.name
            ),
            Some("add e.g. `program = \"aider\"`".to_owned()),
        );
    }
}

/// An adapter that takes live input keeps what that needs after the profile's `extra_args`
/// (they come after the adapter's own flags, and a later `--input-format` wins).
fn live_input_kept(adapter: &Adapter, extra: &[String], span: Range<usize>, p: &mut Problems) {
    if adapter.prompt_delivery != crate::adapter::PromptDeliveryKind::StreamJson {
        return;
    }
    let combined: Vec<String> = adapter.args.iter().chain(extra).cloned().collect();
    let missing = crate::live::missing_flags(&combined);
    if !missing.is_empty() {
        p.push(
            span,
            Some("extra_args"),
            format!(
                "`extra_args` leaves `{}` without `{}`, which a person's messages need",
                adapter.name,
                missing.join("` and `")
            ),
            Some("remove the `--input-format` or `--` from `extra_args`".to_owned()),
        );
    }
}

/// `extra_args`, without a bypass flag that would apply at every permission level.
fn extra_args(field: Option<(Vec<String>, Range<usize>)>, p: &mut Problems) -> Option<Vec<String>> {
    field.map(|(args, span)| {
        if let Some(marker) = find_bypass(&args) {
            p.push(span, Some("extra_args"), format!("`extra_args` contains the bypass flag `{marker}`, which would apply at every permission level"), Some("use `permission = \"full\"` with an adapter that maps it".to_owned()));
        }
        args
    })
}

/// `capabilities`, each an id.
fn capabilities(field: Option<(Vec<String>, Range<usize>)>, p: &mut Problems) -> Vec<String> {
    let Some((caps, span)) = field else {
        return Vec::new();
    };
    for cap in caps.iter().filter(|c| !is_id(c)) {
        p.push(
            span.clone(),
            Some("capabilities"),
            format!("capability `{cap}` is not an id"),
            Some("ids match `^[a-z][a-z0-9-]{0,63}$`".to_owned()),
        );
    }
    caps
}

/// The profile's permission level, which its adapter must be able to express.
fn permission(
    raw: Option<(String, Range<usize>)>,
    adapter: Option<&Adapter>,
    p: &mut Problems,
) -> Option<(PermissionLevel, Range<usize>)> {
    let permission = match raw {
        Some((v, span)) => one_of(
            &v,
            &span,
            "permission",
            &PermissionLevel::ALL.map(|l| (l, l.as_str())),
            p,
        )
        .map(|l| (l, span)),
        None => {
            p.push(
                0..0,
                Some("permission"),
                "missing key `permission`",
                Some(
                    "add `permission = \"read-only\"` (or \"workspace-write\", \"full\")"
                        .to_owned(),
                ),
            );
            None
        }
    };
    if let (Some(adapter), Some((level, span))) = (adapter, &permission)
        && !adapter.permissions.contains_key(level)
    {
        let supported = adapter
            .supported_levels()
            .iter()
            .map(|l| format!("`{l}`"))
            .collect::<Vec<_>>()
            .join(", ");
        p.push(
            span.clone(),
            Some("permission"),
            format!(
                "adapter `{}` cannot express permission level `{level}`",
                adapter.name
            ),
            Some(format!("`{}` supports {supported}", adapter.name)),
        );
    }
    permission
}

fn resolve_adapter(
    name: &str,
    span: Range<usize>,
    catalog: &AdapterCatalog,
    p: &mut Problems,
) -> Result<Option<Adapter>, LoadError> {
    if let Some(adapter) = catalog.load(name)? {
        return Ok(Some(adapter));
    }
    let names = catalog.names();
    let help = match did_you_mean(name, names.iter().map(String::as_str)) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("available adapters: {}", names.join(", ")),
    };
    p.push(
        span,
        Some("adapter"),
        format!("unknown adapter `{name}`"),
        Some(help),
    );
    Ok(None)
}

fn id_value(field: Option<(String, Range<usize>)>, key: &str, p: &mut Problems) -> Option<String> {
    let (value, span) = field?;
    if !is_id(&value) {
        p.push(
            span,
            Some(key),
            format!("`{value}` is not a valid {key}"),
            Some("ids match `^[a-z][a-z0-9-]{0,63}$`, e.g. \"executor\"".to_owned()),
        );
    }
    Some(value)
}

fn workdir(field: Option<(String, Range<usize>)>, p: &mut Problems) -> PathBuf {
    let Some((dir, span)) = field else {
        return PathBuf::from(".");
    };
    let path = PathBuf::from(&dir);
    if path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        p.push(
            span,
            Some("workdir"),
            format!("`workdir = \"{dir}\"` leaves the project"),
            Some("use a path relative to the project root, without `..`".to_owned()),
        );
    }
    path
}

/// `done_when = "report" | "exit-0" | "pattern"`, the last with `done_pattern`.
fn done_when(
    when: Option<(String, Range<usize>)>,
    pattern: Option<(String, Range<usize>)>,
    p: &mut Problems,
) -> DoneWhen {
    let help = || {
        Some(
            "use \"report\" (the default), \"exit-0\", or \"pattern\" with `done_pattern`"
                .to_owned(),
        )
    };
    let (name, when_span) = match &when {
        Some((name, span)) => (name.trim(), span.clone()),
        None => ("report", 0..0),
    };
    match (name, pattern) {
        ("report", None) => DoneWhen::Report,
        ("exit-0", None) => DoneWhen::ExitZero,
        ("pattern", Some((text, span))) => match regex::Regex::new(&format!("(?m){text}")) {
            Ok(re) => DoneWhen::Pattern(re),
            Err(e) => {
                p.push(
                    span,
                    Some("done_pattern"),
                    format!("`done_pattern` is not a valid regular expression: {e}"),
                    Some("it is matched against each line of the agent's final message, e.g. '^ALL TESTS PASS$'".to_owned()),
                );
                DoneWhen::Report
            }
        },
        ("pattern", None) => {
            p.push(
                when_span,
                Some("done_when"),
                "`done_when = \"pattern\"` needs a `done_pattern`",
                Some("add e.g. `done_pattern = '^ALL TESTS PASS$'`".to_owned()),
            );
            DoneWhen::Report
        }
        ("report" | "exit-0", Some((_, span))) => {
            p.push(
                span,
                Some("done_pattern"),
                format!("`done_pattern` is set but `done_when` is \"{name}\""),
                Some("set `done_when = \"pattern\"`, or remove `done_pattern`".to_owned()),
            );
            DoneWhen::Report
        }
        (other, _) => {
            p.push(
                when_span,
                Some("done_when"),
                format!("unknown `done_when` value \"{other}\""),
                help(),
            );
            DoneWhen::Report
        }
    }
}

fn limits(raw: Option<RawLimits>, adapter: Option<&Adapter>, p: &mut Problems) -> SliceLimits {
    let mut limits = SliceLimits::default();
    let Some(raw) = raw else { return limits };
    for (field, key, slot) in [
        (raw.max_time, "limits.max_time", &mut limits.max_time),
        (
            raw.idle_timeout,
            "limits.idle_timeout",
            &mut limits.idle_timeout,
        ),
        (raw.grace, "limits.grace", &mut limits.grace),
    ] {
        if let Some(d) = duration_field(field, key, p) {
            *slot = d;
        }
    }
    let kept = "no output could be kept";
    if let Some(bytes) = size(raw.max_output, "limits.max_output", kept, p) {
        limits.max_output_bytes = bytes;
    }
    let resources = &mut limits.resources;
    let cannot_run = "the agent could not run";
    resources.memory_bytes = size(raw.memory, "limits.memory", cannot_run, p);
    let cannot_write = "the agent could not write a file";
    resources.file_size_bytes = size(raw.file_size, "limits.file_size", cannot_write, p);
    resources.memory_total_bytes = size(raw.memory_total, "limits.memory_total", cannot_run, p);
    let tools = "its CLI, a shell, the tools it runs";
    if let Some(n) = at_least(raw.processes, "limits.processes", 8, tools, p) {
        resources.processes = n;
    }
    let files = "its terminal, libraries, pipes";
    resources.open_files = at_least(raw.open_files, "limits.open_files", 16, files, p);
    if let Some(d) = duration_field(raw.cpu_time, "limits.cpu_time", p) {
        resources.cpu_seconds = Some(d.as_secs().max(1));
    }
    if let Some((kill, _)) = take(raw.kill_on_output, "limits.kill_on_output", p) {
        limits.kill_on_output = kill;
    }
    if let Some((turns, span)) = take(raw.max_turns, "limits.max_turns", p) {
        let key = Some("limits.max_turns");
        if turns == 0 {
            let zero = "`limits.max_turns` is 0, so the agent could not act";
            p.push(span.clone(), key, zero, None);
        }
        if let Some(adapter) = adapter.filter(|a| a.options.max_turns.is_empty()) {
            let why = format!("adapter `{}` cannot limit turns", adapter.name);
            let hint = "remove `max_turns`; `max_time` still bounds the slice";
            p.push(span, key, why, Some(hint.to_owned()));
        }
        limits.max_turns = Some(turns);
    }
    limits
}

/// A size in bytes, not 0 (`zero` says what 0 would mean).
fn size(field: Option<Checked<SizeValue>>, key: &str, zero: &str, p: &mut Problems) -> Option<u64> {
    let (size, span) = take(field, key, p)?;
    let parsed = match size {
        SizeValue::Bytes(b) => Ok(b),
        SizeValue::Text(t) => parse_byte_size(&t),
    };
    match parsed {
        Ok(0) => p.push(span, Some(key), format!("`{key}` is 0, so {zero}"), None),
        Ok(bytes) => return Some(bytes),
        Err(why) => p.push(
            span,
            Some(key),
            format!("invalid size for `{key}`: {why}"),
            Some("use a size like \"16MiB\" or a number of bytes".to_owned()),
        ),
    }
    None
}

/// A count of at least `min` (`needs`: what an agent needs them for).
fn at_least(
    field: Option<Checked<u64>>,
    key: &str,
    min: u64,
    needs: &str,
    p: &mut Problems,
) -> Option<u64> {
    let (n, span) = take(field, key, p)?;
    if n >= min {
        return Some(n);
    }
    let why = format!("`{key}` is {n}; an agent needs at least {min} ({needs})");
    p.push(span, Some(key), why, None);
    None
}

fn quota(raw: Option<RawQuota>, default_account: String, p: &mut Problems) -> QuotaSettings {
    let mut quota = QuotaSettings {
        account: default_account,
        slices_per_hour: None,
        burst: 1,
        windows: Vec::new(),
    };
    let Some(raw) = raw else { return quota };
    if let Some(account) = id_value(take(raw.account, "quota.account", p), "quota.account", p) {
        quota.account = account;
    }
    if let Some((rate, span)) = take(raw.slices_per_hour, "quota.slices_per_hour", p) {
        if rate == 0 {
            p.push(
                span,
                Some("quota.slices_per_hour"),
                "`quota.slices_per_hour = 0` would never run a slice",
                Some("to pause an agent use `loopx quota pause`".to_owned()),
            );
        }
        quota.slices_per_hour = Some(rate);
    }
    if let Some((burst, span)) = take(raw.burst, "quota.burst", p) {
        if burst == 0 {
            let key = Some("quota.burst");
            p.push(span, key, "`quota.burst` must be at least 1", None);
        }
        quota.burst = burst;
    }
    for (i, w) in raw.windows.unwrap_or_default().into_iter().enumerate() {
        if let Some(window) = window(i, w, &quota.windows, p) {
            quota.windows.push(window);
        }
    }
    quota
}

/// Entry `i` of `[[quota.windows]]`, unless it is invalid or repeats a period of `before`.
fn window(i: usize, w: RawWindow, before: &[QuotaWindow], p: &mut Problems) -> Option<QuotaWindow> {
    let key = |k: &str| format!("quota.windows.{i}.{k}");
    let window = take(w.window, &key("window"), p);
    let tokens = take(w.tokens, &key("tokens"), p).map(|(t, _)| t);
    let cost = take(w.cost_usd, &key("cost_usd"), p);
    if let Some((_, span)) = cost.as_ref().filter(|(c, _)| !c.is_finite() || *c < 0.0) {
        let why = "`cost_usd` must be a non-negative number";
        p.push(span.clone(), Some(&key("cost_usd")), why, None);
    }
    let Some((text, span)) = window else {
        p.push(
            0..0,
            Some(&key("window")),
            format!("`[[quota.windows]]` entry {} has no `window`", i + 1),
            Some("add e.g. `window = \"5h\"`".to_owned()),
        );
        return None;
    };
    let key = key("window");
    if tokens.is_none() && cost.is_none() {
        p.push(
            span.clone(),
            Some(&key),
            "a quota window limits nothing without `tokens` or `cost_usd`",
            Some("add e.g. `tokens = 2_000_000`".to_owned()),
        );
    }
    let window = duration(&text.0, span.clone(), &key, p)?;
    // Windows are kept per account and period: two with one period would share (and
    // overwrite) one usage record, and a zero-length one would never let time pass.
    if window.is_zero() {
        p.push(
            span,
            Some(&key),
            "a quota window must last longer than zero",
            Some("use e.g. `window = \"5h\"`".to_owned()),
        );
        return None;
    }
    if before.iter().any(|w| w.window == window) {
        p.push(
            span,
            Some(&key),
            format!("a second quota window of `{}`", text.0),
            Some(
                "put `tokens` and `cost_usd` in one `[[quota.windows]]` entry per period"
                    .to_owned(),
            ),
        );
        return None;
    }
    Some(QuotaWindow {
        window,
        tokens,
        cost_usd: cost.map(|(c, _)| c),
    })
}

fn env(raw: Option<RawEnv>, p: &mut Problems) -> EnvPolicy {
    let default_allow = || DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect();
    let Some(raw) = raw else {
        return EnvPolicy {
            allow: default_allow(),
            secrets: Vec::new(),
            set: Default::default(),
        };
    };
    let allow = if raw.allow.is_some() {
        env_names(raw.allow, "env.allow", false, p)
    } else {
        default_allow()
    };
    let secrets = env_names(raw.secrets, "env.secrets", true, p);
    let set = take(raw.set, "env.set", p).map(|(set, span)| {
        for name in set.keys() {
            if !is_env_name(name) {
                p.push(
                    span.clone(),
                    Some("env.set"),
                    format!("`{name}` is not an environment variable name"),
                    None,
                );
            } else if name.starts_with("LOOPX_") {
                p.push(
                    span.clone(),
                    Some("env.set"),
                    format!("`{name}` is set by loopx itself"),
                    None,
                );
            }
        }
        set
    });
    EnvPolicy {
        allow,
        secrets,
        set: set.unwrap_or_default(),
    }
}

fn sandbox(raw: Option<super::raw::RawSandbox>, p: &mut Problems) -> crate::SandboxPolicy {
    use crate::SandboxMode;
    let Some(raw) = raw else {
        return crate::SandboxPolicy::default();
    };
    let mode = take(raw.mode, "sandbox.mode", p)
        .and_then(|(mode, span)| {
            crate::adapter::one_of(
                &mode,
                &span,
                "sandbox.mode",
                &[
                    (SandboxMode::Auto, "auto"),
                    (SandboxMode::Required, "required"),
                    (SandboxMode::Off, "off"),
                ],
                p,
            )
        })
        .unwrap_or_default();
    let writable = take(raw.writable, "sandbox.writable", p)
        .map(|(paths, span)| crate::sandbox::check_paths(paths, &span, "sandbox.writable", p))
        .unwrap_or_default();
    crate::SandboxPolicy { mode, writable }
}
