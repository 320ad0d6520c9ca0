//! Stage two for adapters: raw shape → [`Adapter`], recording every problem.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use regex::Regex;

use super::raw::{RawAdapter, RawSignal, known_keys};
use super::spec::{
    Adapter, AdapterOptions, ExitMeaning, HealthCheck, OutputFormat, PromptDeliveryKind,
    SignalKind, SignalRule, SignalScope, StdinMode,
};
use crate::config::{
    ARG_PLACEHOLDERS, Checked, Problems, credential_word, did_you_mean, is_env_name,
    parse_document, parse_duration, placeholders, take,
};
use crate::errors::{ConfigKind, InvalidConfig};
use crate::permission::{PermissionLevel, find_bypass, find_write_grant};

/// Parse and validate one adapter file.
pub(crate) fn parse_adapter(
    name: &str,
    file: &str,
    text: &str,
) -> Result<Adapter, Box<InvalidConfig>> {
    // A supervisor loads its agents' profiles, and so their adapters, at every decision (an
    // edit counts at once); validating one compiles its patterns, which was the largest part
    // of loopx's own CPU per slice. The same text under the same name validates to the same
    // adapter: kept, by content, for as long as the process runs.
    type Key = (String, String, String);
    static VALID: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<Key, Adapter>>> =
        std::sync::LazyLock::new(Default::default);
    let key = (name.to_owned(), file.to_owned(), text.to_owned());
    if let Some(adapter) = VALID.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(adapter.clone());
    }
    let adapter = parse_adapter_uncached(name, file, text)?;
    let mut valid = VALID.lock().unwrap_or_else(|e| e.into_inner());
    // Bounded: a project that keeps rewriting its adapter files does not grow it forever.
    if valid.len() >= 64 {
        valid.clear();
    }
    valid.insert(key, adapter.clone());
    Ok(adapter)
}

fn parse_adapter_uncached(
    name: &str,
    file: &str,
    text: &str,
) -> Result<Adapter, Box<InvalidConfig>> {
    let mut p = Problems::new(file, text);
    let raw: Option<RawAdapter> = parse_document(text, known_keys, &mut p);
    let adapter = raw.and_then(|raw| validate(name, file, text, raw, &mut p));
    p.finish(ConfigKind::Adapter, name, adapter)
}

/// Record an error for each `{placeholder}` of `value` that is not in `allowed`.
pub(crate) fn check_placeholders(
    value: &str,
    allowed: &[&str],
    key: &str,
    span: &Range<usize>,
    p: &mut Problems,
) {
    for name in placeholders(value) {
        if !allowed.contains(&name) {
            let help = match did_you_mean(name, allowed.iter().copied()) {
                Some(best) => format!("did you mean `{{{best}}}`?"),
                None => format!(
                    "placeholders here: {}",
                    allowed
                        .iter()
                        .map(|a| format!("{{{a}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            p.push(
                span.clone(),
                Some(key),
                format!("unknown placeholder `{{{name}}}` in `{key}`"),
                Some(help),
            );
        }
    }
}

fn validate(
    name: &str,
    file: &str,
    text: &str,
    raw: RawAdapter,
    p: &mut Problems,
) -> Option<Adapter> {
    let before = p.is_empty();
    let login = command_hint(raw.login, "login", p);
    let login_files = login_files(raw.login_files, p);
    let install = command_hint(raw.install, "install", p);
    let description = take(raw.description, "description", p).map_or_else(String::new, |(v, _)| v);
    let program = program(take(raw.program, "program", p), p);
    let output = output(take(raw.output, "output", p), p);
    let (delivery, delivery_span) = delivery(raw.prompt.and_then(|r| r.delivery), p);
    let args = args(raw.args, delivery, p);
    let options = raw.options.map(|o| options(o, p));
    let permissions = permissions(raw.permissions, p);
    let health = health(raw.health, p);
    let (env_pass, env_secrets, env_set) = env(raw.env, p);
    let stdin = take(raw.process.and_then(|r| r.stdin), "process.stdin", p);
    if delivery == Some(PromptDeliveryKind::StreamJson) {
        live_input(
            output,
            stdin.as_ref().map(|(_, span)| span),
            args.as_deref(),
            delivery_span,
            p,
        );
    }
    let stdin = stdin.map_or(Some(StdinMode::Pty), |(v, span)| {
        let modes = [(StdinMode::Pty, "pty"), (StdinMode::Null, "null")];
        one_of(&v, &span, "process.stdin", &modes, p)
    });
    let writable = raw
        .sandbox
        .and_then(|s| take(s.writable, "sandbox.writable", p));
    let sandbox_writable = writable
        .map(|(paths, span)| crate::sandbox::check_paths(paths, &span, "sandbox.writable", p));
    let signals = raw.signals.unwrap_or_default().into_iter().enumerate();
    let signals = signals.filter_map(|(i, s)| signal(i, s, p)).collect();
    let exit_codes = exit_codes(raw.exit_codes.unwrap_or_default(), p);
    if !(before && p.is_empty()) {
        return None;
    }
    Some(Adapter {
        name: name.to_owned(),
        description,
        login,
        login_files,
        install,
        program,
        args: args?,
        output: output?,
        prompt_delivery: delivery?,
        options: options.unwrap_or_default(),
        permissions,
        health,
        env_pass,
        env_secrets,
        env_set,
        stdin: stdin?,
        sandbox_writable: sandbox_writable.unwrap_or_default(),
        signals,
        exit_codes,
        file: file.to_owned(),
        bytes: text.as_bytes().to_vec(),
    })
}

/// `[options]`: the flags that choose a model, limit turns and set the working directory.
fn options(o: super::raw::RawOptions, p: &mut Problems) -> AdapterOptions {
    AdapterOptions {
        model: fragment(o.model, "options.model", p),
        max_turns: fragment(o.max_turns, "options.max_turns", p),
        workdir: fragment(o.workdir, "options.workdir", p),
    }
}

/// `login_files`: each under the home (`~/…`) or a variable's directory (`$VAR/…`); a bare
/// path would name a file of the project, which says nothing of a login.
fn login_files(field: Option<Checked<Vec<String>>>, p: &mut Problems) -> Vec<String> {
    let Some((files, span)) = take(field, "login_files", p) else {
        return Vec::new();
    };
    if let Some(bad) = files
        .iter()
        .find(|f| !(f.starts_with("~/") || f.starts_with('$')))
    {
        p.push(
            span,
            Some("login_files"),
            format!("`{bad}` is neither under the home (~/…) nor a variable's directory ($VAR/…)"),
            Some("write where the CLI keeps its login, e.g. \"~/.codex/auth.json\"".to_owned()),
        );
    }
    files
}

/// `login` or `install`: a command a person runs, when the adapter names one.
fn command_hint(field: Option<Checked<String>>, key: &str, p: &mut Problems) -> Option<String> {
    take(field, key, p)
        .map(|(v, _)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `program`, not empty, with only `{loopx}` to fill.
fn program(field: Option<(String, Range<usize>)>, p: &mut Problems) -> Option<String> {
    field.map(|(v, span)| {
        if v.trim().is_empty() {
            p.push(
                span.clone(),
                Some("program"),
                "`program` is empty",
                Some("omit `program` to make profiles name it".to_owned()),
            );
        }
        check_placeholders(&v, &["loopx"], "program", &span, p);
        v
    })
}

/// `output`: required, one of the formats loopx reads.
fn output(field: Option<(String, Range<usize>)>, p: &mut Problems) -> Option<OutputFormat> {
    match field {
        Some((v, span)) => one_of(
            &v,
            &span,
            "output",
            &OutputFormat::ADAPTER_FORMATS.map(|f| (f, f.as_str())),
            p,
        ),
        None => {
            p.push(
                0..0,
                Some("output"),
                "missing key `output`",
                Some("add e.g. `output = \"text\"`".to_owned()),
            );
            None
        }
    }
}

/// Match `value` against the allowed spellings, recording a "did you mean" problem otherwise.
pub(crate) fn one_of<T: Copy>(
    value: &str,
    span: &Range<usize>,
    key: &str,
    allowed: &[(T, &str)],
    p: &mut Problems,
) -> Option<T> {
    if let Some((t, _)) = allowed.iter().find(|(_, s)| *s == value) {
        return Some(*t);
    }
    let names: Vec<&str> = allowed.iter().map(|(_, s)| *s).collect();
    let help = match did_you_mean(value, names.iter().copied()) {
        Some(best) => format!("did you mean `{best}`?"),
        None => format!("use one of: {}", names.join(", ")),
    };
    p.push(
        span.clone(),
        Some(key),
        format!("unknown value `{value}` for `{key}`"),
        Some(help),
    );
    None
}

/// `prompt.delivery = "stream-json"` needs the one stream that acknowledges input (Claude
/// Code's), and the agent's stdin for its pipe.
fn live_input(
    output: Option<OutputFormat>,
    stdin: Option<&Range<usize>>,
    args: Option<&[String]>,
    span: Range<usize>,
    p: &mut Problems,
) {
    let missing = args.map(crate::live::missing_flags).unwrap_or_default();
    if !missing.is_empty() {
        p.push(
            span.clone(),
            Some("args"),
            format!(
                "`prompt.delivery = \"stream-json\"` needs `{}` in `args`",
                missing.join("` and `")
            ),
            Some("add them to `args`, as the shipped `claude-code` adapter does".to_owned()),
        );
    }
    if let Some(stdin) = stdin {
        p.push(
            stdin.clone(),
            Some("process.stdin"),
            "`process.stdin` cannot be set with `prompt.delivery = \"stream-json\"`: the agent's stdin is the pipe loopx writes the prompt and messages to",
            Some("remove `process.stdin`".to_owned()),
        );
    }
    if output.is_some_and(|o| o != OutputFormat::ClaudeStreamJson) {
        p.push(
            span,
            Some("prompt.delivery"),
            "`prompt.delivery = \"stream-json\"` needs `output = \"claude-stream-json\"`: loopx knows a message reached the agent by the echo in that stream",
            Some("use `delivery = \"argument\"` for another CLI".to_owned()),
        );
    }
}

fn delivery(
    field: Option<Checked<String>>,
    p: &mut Problems,
) -> (Option<PromptDeliveryKind>, Range<usize>) {
    let allowed = [
        (PromptDeliveryKind::Argument, "argument"),
        (PromptDeliveryKind::File, "file"),
        (PromptDeliveryKind::Stdin, "stdin"),
        (PromptDeliveryKind::StreamJson, "stream-json"),
    ];
    match take(field, "prompt.delivery", p) {
        Some((v, span)) => (one_of(&v, &span, "prompt.delivery", &allowed, p), span),
        None => (Some(PromptDeliveryKind::Argument), 0..0),
    }
}

fn args(
    field: Option<Checked<Vec<String>>>,
    delivery: Option<PromptDeliveryKind>,
    p: &mut Problems,
) -> Option<Vec<String>> {
    let (args, span) = take(field, "args", p).unwrap_or_else(|| (Vec::new(), 0..0));
    for arg in &args {
        check_placeholders(arg, &ARG_PLACEHOLDERS, "args", &span, p);
        if arg != "{flags}" && placeholders(arg).contains(&"flags") {
            p.push(
                span.clone(),
                Some("args"),
                "`{flags}` must be a whole element of `args`",
                Some("write it as its own element: \"{flags}\"".to_owned()),
            );
        }
    }
    if let Some(marker) = find_bypass(&args) {
        p.push(span.clone(), Some("args"), format!("`args` contains the bypass flag `{marker}`, which would apply at every permission level"), Some("put it under `[permissions] full`".to_owned()));
    }
    let uses = |name: &str| args.iter().any(|a| placeholders(a).contains(&name));
    let needed = match delivery? {
        PromptDeliveryKind::Argument => Some("prompt"),
        PromptDeliveryKind::File => Some("prompt_file"),
        PromptDeliveryKind::Stdin | PromptDeliveryKind::StreamJson => None,
    };
    if let Some(needed) = needed.filter(|n| !uses(n)) {
        p.push(
            span.clone(),
            Some("args"),
            format!("`args` never uses `{{{needed}}}`, so the prompt would not reach the agent"),
            Some(format!(
                "add \"{{{needed}}}\" to `args`, or change `prompt.delivery`"
            )),
        );
    }
    for (other, mode) in [("prompt", "argument"), ("prompt_file", "file")] {
        if Some(other) != needed && uses(other) {
            p.push(
                span.clone(),
                Some("args"),
                format!("`{{{other}}}` is only available with `prompt.delivery = \"{mode}\"`"),
                None,
            );
        }
    }
    Some(args)
}

fn fragment(field: Option<Checked<Vec<String>>>, key: &str, p: &mut Problems) -> Vec<String> {
    let Some((values, span)) = take(field, key, p) else {
        return Vec::new();
    };
    for v in &values {
        check_placeholders(v, &["model", "max_turns", "workdir"], key, &span, p);
    }
    if let Some(marker) = find_bypass(&values) {
        p.push(
            span,
            Some(key),
            format!("`{key}` contains the bypass flag `{marker}`"),
            Some("put it under `[permissions] full`".to_owned()),
        );
    }
    values
}

fn permissions(
    raw: Option<super::raw::RawPermissions>,
    p: &mut Problems,
) -> BTreeMap<PermissionLevel, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(raw) = raw else {
        p.push(
            0..0,
            Some("permissions"),
            "missing table `[permissions]`",
            Some("map at least one of read-only, workspace-write, full to flags".to_owned()),
        );
        return out;
    };
    let levels = [
        (PermissionLevel::ReadOnly, raw.read_only),
        (PermissionLevel::WorkspaceWrite, raw.workspace_write),
        (PermissionLevel::Full, raw.full),
    ];
    for (level, field) in levels {
        let key = format!("permissions.{level}");
        let Some((flags, span)) = take(field, &key, p) else {
            continue;
        };
        let leak = match level {
            PermissionLevel::ReadOnly => find_write_grant(&flags),
            PermissionLevel::WorkspaceWrite => find_bypass(&flags),
            PermissionLevel::Full => None,
        };
        if let Some(marker) = leak {
            p.push(span.clone(), Some(&key), format!("`{key}` contains `{marker}`, which grants more than `{level}`"), Some("bypass flags belong only under `full`; write-granting flags not under `read-only`".to_owned()));
        }
        for flag in &flags {
            check_placeholders(flag, &[], &key, &span, p);
        }
        out.insert(level, flags);
    }
    if out.is_empty() && p.is_empty() {
        p.push(
            0..0,
            Some("permissions"),
            "`[permissions]` maps no level",
            Some("an adapter must express at least one permission level".to_owned()),
        );
    }
    out
}

fn health(raw: Option<super::raw::RawHealth>, p: &mut Problems) -> HealthCheck {
    let mut check = HealthCheck {
        args: vec!["--version".to_owned()],
        expect: None,
        timeout: Duration::from_secs(10),
    };
    let Some(raw) = raw else { return check };
    if let Some((args, span)) = take(raw.args, "health.args", p) {
        for a in &args {
            check_placeholders(a, &[], "health.args", &span, p);
        }
        check.args = args;
    }
    if let Some((pattern, span)) = take(raw.expect, "health.expect", p) {
        check.expect = regex(&pattern, span, "health.expect", p);
    }
    if let Some(timeout) = duration_field(raw.timeout, "health.timeout", p) {
        check.timeout = timeout;
    }
    check
}

/// A duration field's value, if it is given and reads as a duration.
pub(crate) fn duration_field(
    field: Option<Checked<crate::config::DurationText>>,
    key: &str,
    p: &mut Problems,
) -> Option<Duration> {
    take(field, key, p).and_then(|(text, span)| duration(&text.0, span, key, p))
}

/// A duration value, or a located problem with the standard hint.
pub(crate) fn duration(
    text: &str,
    span: Range<usize>,
    key: &str,
    p: &mut Problems,
) -> Option<Duration> {
    match parse_duration(text) {
        Ok(d) => Some(d),
        Err(why) => {
            p.push(
                span,
                Some(key),
                format!("invalid duration `{text}` for `{key}`: {why}"),
                Some("use a duration like \"30m\" or \"90s\"".to_owned()),
            );
            None
        }
    }
}

fn regex(pattern: &str, span: Range<usize>, key: &str, p: &mut Problems) -> Option<Regex> {
    match Regex::new(pattern) {
        Ok(re) => Some(re),
        Err(err) => {
            let first = err
                .to_string()
                .lines()
                .last()
                .unwrap_or_default()
                .trim()
                .to_owned();
            p.push(span, Some(key), format!("invalid regex for `{key}`: {first}"), Some("regex syntax: https://docs.rs/regex; use a TOML literal string '...' to avoid double escaping".to_owned()));
            None
        }
    }
}

type EnvParts = (Vec<String>, Vec<String>, BTreeMap<String, String>);

fn env(raw: Option<super::raw::RawAdapterEnv>, p: &mut Problems) -> EnvParts {
    let Some(raw) = raw else {
        return Default::default();
    };
    let pass = env_names(raw.pass, "env.pass", false, p);
    let secrets = env_names(raw.secrets, "env.secrets", true, p);
    let set = take(raw.set, "env.set", p).map(|(set, span)| {
        for name in set.keys().filter(|n| !is_env_name(n)) {
            p.push(
                span.clone(),
                Some("env.set"),
                format!("`{name}` is not an environment variable name"),
                None,
            );
        }
        set
    });
    (pass, secrets, set.unwrap_or_default())
}

/// A list of environment variable names; unless `secret`, names that look like credentials are
/// refused so their values cannot reach a transcript unredacted.
pub(crate) fn env_names(
    field: Option<Checked<Vec<String>>>,
    key: &str,
    secret: bool,
    p: &mut Problems,
) -> Vec<String> {
    let Some((names, span)) = take(field, key, p) else {
        return Vec::new();
    };
    for name in &names {
        if !is_env_name(name) {
            p.push(
                span.clone(),
                Some(key),
                format!("`{name}` in `{key}` is not an environment variable name"),
                None,
            );
        } else if let Some(word) = credential_word(name).filter(|_| !secret) {
            let secrets_key = key.replace("pass", "secrets").replace("allow", "secrets");
            p.push(
                span.clone(),
                Some(key),
                format!(
                    "`{name}` looks like a credential (its name contains `{word}`) and cannot be \
                     in `{key}`"
                ),
                Some(format!(
                    "list it in `{secrets_key}` so its value is redacted"
                )),
            );
        }
    }
    names
}

fn signal(index: usize, raw: RawSignal, p: &mut Problems) -> Option<SignalRule> {
    let key = |k: &str| format!("signals.{index}.{k}");
    let kind = take(raw.kind, &key("kind"), p)
        .and_then(|(v, span)| one_of(&v, &span, &key("kind"), &SignalKind::ALL, p));
    let pattern = take(raw.pattern, &key("pattern"), p)
        .and_then(|(v, span)| regex(&v, span, &key("pattern"), p));
    let on = match take(raw.on, &key("on"), p) {
        Some((v, span)) => one_of(
            &v,
            &span,
            &key("on"),
            &[(SignalScope::Final, "final"), (SignalScope::Line, "line")],
            p,
        ),
        None => Some(SignalScope::Final),
    };
    Some(SignalRule {
        kind: kind?,
        pattern: pattern?,
        on: on?,
    })
}

fn exit_codes(
    raw: BTreeMap<String, Checked<String>>,
    p: &mut Problems,
) -> BTreeMap<i32, ExitMeaning> {
    let mut out = BTreeMap::new();
    for (code, meaning) in raw {
        let key = format!("exit_codes.{code}");
        let Some((meaning, span)) = meaning.get(&key, p) else {
            continue;
        };
        let Ok(number) = code.parse::<i32>() else {
            p.push(
                span,
                Some(&key),
                format!("`{code}` is not an exit code"),
                Some("keys are numbers in quotes, e.g. \"41\" = \"auth_failed\"".to_owned()),
            );
            continue;
        };
        if let Some(m) = one_of(&meaning, &span, &key, &ExitMeaning::ALL, p) {
            out.insert(number, m);
        }
    }
    out
}
