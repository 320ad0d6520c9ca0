//! The project's own settings: `.loopx/loopx.toml`, optional. It holds the notification hook
//! (`docs/cli.md`, "Notifications") and the goal's budget (`docs/quota.md`, "Budget"):
//!
//! ```toml
//! [notify]
//! command = "notify-send loopx \"$(jq -r .message)\""
//! timeout = "10s"
//! webhook_env = "LOOPX_NOTIFY_WEBHOOK"   # the variable holding a Slack-compatible webhook URL
//!
//! [budget]          # the most a goal spends without a todo done, then a person is asked
//! slices = 20
//! tokens = 5_000_000
//! cost_usd = 10.0
//!
//! [land]            # run on a todo's branch merged with the goal's before it lands
//! check = "cargo test"
//! timeout = "20m"
//!
//! [evidence]        # what an agent's `done` needs, and how long evidence stays fresh
//! done_needs = ["test"]
//! shelf_life = { test = "2d" }
//!
//! [lark]            # the Lark (Feishu) board and questions (`lark.rs`, `docs/lark.md`)
//! app_id = "cli_…"
//!
//! [metrics.accuracy] # which way a metric is better; a new best asks (`metrics.rs`)
//! better = "higher"
//! ask_on_best = true
//! ```
//!
//! Loaded like profiles: every problem at once, with file, line and column, unknown keys with
//! a "did you mean".

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use loopx_vocab::EvidenceKind;

use serde::Deserialize;

use crate::adapter::{duration, duration_field};
use loopx_kernel::toml_file::{TomlFileError, read_toml};

use crate::config::{Checked, DurationText, Problems, document_from_tree, parse_document, take};
use crate::errors::{ConfigKind, LoadError};

mod lark;
mod metrics;
mod notify;
pub use lark::{DEFAULT_LARK_BASE_URL, LarkBoard, LarkConfig, LarkQuestions};
pub use metrics::MetricRule;
pub use notify::WebhookConfig;

/// The file's name inside `.loopx/`.
pub const PROJECT_CONFIG_FILE: &str = "loopx.toml";
/// How long a notification command may run when `timeout` is not set.
pub const DEFAULT_NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a land check may run when `timeout` is not set.
const DEFAULT_LAND_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// `.loopx/loopx.toml`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectConfig {
    pub notify: Option<NotifyConfig>,
    /// `[notify] webhook_env`: the webhook the same notifications are posted to.
    pub webhook: Option<WebhookConfig>,
    /// `[budget]`; unset limits nothing.
    pub budget: loopx_quota::Budget,
    /// `[land]`: the check a todo's branch must pass before it lands.
    pub land_check: Option<LandCheck>,
    /// `[evidence]`: what an agent's `done` needs, and how long each kind stays fresh.
    pub evidence: EvidenceRules,
    /// `[lark]`: the Lark (Feishu) board and questions.
    pub lark: Option<LarkConfig>,
    /// `[goal] close = "agents"`: an agent's "the goal is met" ends the goal. By default
    /// (`"person"`) it asks a person, who ends it (`docs/goals.md`).
    pub agents_close_goals: bool,
    /// `[limits] handbacks`: how many times agents of two roles may hand the same work back
    /// and forth before a person is asked; `None`: the default (`docs/history.md`).
    pub handbacks: Option<u32>,
    /// `[metrics.NAME]`: which way each metric is better, and whether a new best asks.
    pub metrics: BTreeMap<String, MetricRule>,
}

/// `[evidence]` (`docs/goals.md`, "Evidence that ages").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRules {
    /// A todo an agent reports done is done only with fresh evidence of each of these kinds
    /// (its own, or recorded on the todo before); none by default.
    pub done_needs: Vec<EvidenceKind>,
    /// Evidence of a kind older than its shelf life is stale; no kind has one by default.
    pub shelf_life: BTreeMap<EvidenceKind, Duration>,
    /// A person's answer older than this is shown with its age where it is used.
    pub decision_max_age: Duration,
}

impl EvidenceRules {
    /// How old an answer may be before it is shown with its age, unless `loopx.toml` says.
    pub const DECISION_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);
}

impl Default for EvidenceRules {
    fn default() -> Self {
        EvidenceRules {
            done_needs: Vec::new(),
            shelf_life: BTreeMap::new(),
            decision_max_age: Self::DECISION_MAX_AGE,
        }
    }
}

/// `[land] check`: a shell command run in a checkout of what would land; a todo lands only
/// when it exits 0 (`docs/design/worktrees.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandCheck {
    /// Run with `sh -c`, contained like a slice.
    pub command: String,
    /// Stopped (and failed) after this long.
    pub timeout: Duration,
}

/// `[notify]`: a shell command run on events a person should hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// Run with `sh -c`; the event is JSON on its stdin.
    pub command: String,
    /// Killed after this long.
    pub timeout: Duration,
}

#[derive(Debug, Deserialize)]
struct RawProject {
    notify: Option<RawNotify>,
    budget: Option<RawBudget>,
    land: Option<RawLand>,
    evidence: Option<RawEvidence>,
    lark: Option<lark::RawLark>,
    goal: Option<RawGoal>,
    /// Read by the kernel (`loopx_kernel::store::store_url`); checked here with the rest, by
    /// the same rule.
    store: Option<RawStore>,
    /// `[quota] ledger`, read by the kernel (`loopx_kernel::store::configured_ledger`);
    /// checked here with the rest, by the same rule.
    quota: Option<RawQuota>,
    limits: Option<RawLimits>,
    metrics: Option<BTreeMap<String, metrics::RawMetric>>,
}

#[derive(Debug, Deserialize)]
struct RawLimits {
    handbacks: Option<Checked<u64>>,
}

#[derive(Debug, Deserialize)]
struct RawQuota {
    ledger: Option<Checked<String>>,
}

#[derive(Debug, Deserialize)]
struct RawGoal {
    close: Option<Checked<String>>,
}

#[derive(Debug, Deserialize)]
struct RawStore {
    url: Option<Checked<String>>,
}

#[derive(Debug, Deserialize)]
struct RawEvidence {
    done_needs: Option<Checked<Vec<String>>>,
    shelf_life: Option<BTreeMap<String, Checked<DurationText>>>,
    decision_max_age: Option<Checked<DurationText>>,
}

#[derive(Debug, Deserialize)]
struct RawBudget {
    slices: Option<Checked<u64>>,
    tokens: Option<Checked<u64>>,
    cost_usd: Option<Checked<f64>>,
}

/// `[land]`: a command (`check`, or `command`) and a timeout.
#[derive(Debug, Deserialize)]
struct RawLand {
    #[serde(alias = "check")]
    command: Option<Checked<String>>,
    timeout: Option<Checked<DurationText>>,
}

/// `[notify]`: a command and its timeout, and a webhook.
#[derive(Debug, Deserialize)]
struct RawNotify {
    #[serde(alias = "check")]
    command: Option<Checked<String>>,
    timeout: Option<Checked<DurationText>>,
    webhook_env: Option<Checked<String>>,
    /// A URL in the file: refused by name, never echoed.
    webhook: Option<toml::Value>,
}

fn known_keys(path: &[&str]) -> &'static [&'static str] {
    match path {
        [] => &[
            "notify", "budget", "land", "evidence", "store", "lark", "goal", "quota", "limits",
            "metrics",
        ],
        ["metrics", _] => &metrics::KEYS,
        ["limits"] => &["handbacks"],
        ["quota"] => &["ledger"],
        ["goal"] => &["close"],
        ["lark", rest @ ..] => lark::known_keys(rest),
        ["evidence"] => &["done_needs", "shelf_life", "decision_max_age"],
        ["evidence", "shelf_life"] => &EvidenceKind::NAMES,
        ["store"] => &["url"],
        ["notify"] => &["command", "timeout", "webhook_env", "webhook"],
        ["land"] => &["check", "timeout"],
        ["budget"] => &["slices", "tokens", "cost_usd"],
        _ => &[],
    }
}

/// Reads `<state_dir>/loopx.toml` with the one reader of configuration files, which the
/// store's lookup of `[store] url` uses too; a missing file is the default (no notifications).
pub fn load_project_config(state_dir: &Path) -> Result<ProjectConfig, LoadError> {
    let path = state_dir.join(PROJECT_CONFIG_FILE);
    let file = path.display().to_string();
    let found = read_toml(&path, |text, tree| {
        let mut p = Problems::new(&file, text);
        let raw = document_from_tree(&tree, known_keys, &mut p);
        checked(raw, p)
    });
    match found {
        Ok(found) => found.unwrap_or_else(|| Ok(ProjectConfig::default())),
        Err(TomlFileError::Read { path, source }) => Err(LoadError::Read { path, source }),
        Err(TomlFileError::Syntax {
            span,
            message,
            text,
            ..
        }) => {
            let mut p = Problems::new(&file, &text);
            p.invalid_toml(span, &message);
            checked(None, p)
        }
    }
}

/// Parses the text of a project config named `file` (for messages).
pub fn project_config_str(file: &str, text: &str) -> Result<ProjectConfig, LoadError> {
    let mut p = Problems::new(file, text);
    let raw = parse_document(text, known_keys, &mut p);
    checked(raw, p)
}

/// The settings of a parsed file, or every problem found in it.
fn checked(raw: Option<RawProject>, mut p: Problems) -> Result<ProjectConfig, LoadError> {
    let config = raw.map(|raw| {
        let url = raw.store.and_then(|s| take(s.url, "store.url", &mut p));
        if let Some((url, span)) = url {
            // The store's lookup applies the same rule (`loopx_kernel::store::store_url`).
            if let Some(problem) = loopx_vocab::store_url_problem(url.trim()) {
                let (what, hint) = problem.words();
                p.push(span, Some("store.url"), what, Some(hint.to_owned()));
            }
        }
        let ledger = raw.quota.and_then(|q| take(q.ledger, "quota.ledger", &mut p));
        if let Some((ledger, span)) = ledger
            && loopx_kernel::store::LedgerPlace::parse(ledger.trim()).is_none()
        {
            p.push(
                span,
                Some("quota.ledger"),
                format!("`{ledger}` is not where a quota ledger is kept"),
                Some("`ledger = \"account\"` (the default: one ledger per account, shared by your projects) or `ledger = \"project\"`".to_owned()),
            );
        }
        let (notify, webhook) = raw.notify.map_or((None, None), |n| notify::notify(n, &mut p));
        ProjectConfig {
            notify,
            webhook,
            budget: raw.budget.map(|b| budget(b, &mut p)).unwrap_or_default(),
            land_check: raw.land.and_then(|l| land(l, &mut p)),
            evidence: raw
                .evidence
                .map(|e| evidence(e, &mut p))
                .unwrap_or_default(),
            lark: raw.lark.and_then(|l| lark::lark(l, &mut p)),
            agents_close_goals: raw.goal.is_some_and(|g| agents_close(g, &mut p)),
            handbacks: raw.limits.and_then(|l| handbacks(l, &mut p)),
            metrics: raw
                .metrics
                .map(|m| metrics::metrics(m, &mut p))
                .unwrap_or_default(),
        }
    });
    p.finish(ConfigKind::Project, PROJECT_CONFIG_FILE, config)
        .map_err(LoadError::Invalid)
}

/// `[limits] handbacks`: 1 to 100 rounds.
fn handbacks(raw: RawLimits, p: &mut Problems) -> Option<u32> {
    let (n, span) = take(raw.handbacks, "limits.handbacks", p)?;
    match u32::try_from(n) {
        Ok(n @ 1..=100) => Some(n),
        _ => {
            p.push(
                span,
                Some("limits.handbacks"),
                format!("`handbacks = {n}` is out of range"),
                Some("give how many times two roles may hand the same work back, 1 to 100 (default 4)".to_owned()),
            );
            None
        }
    }
}

/// `[goal] close`: who ends a goal, `"person"` (the default) or `"agents"`.
fn agents_close(raw: RawGoal, p: &mut Problems) -> bool {
    let Some((close, span)) = take(raw.close, "goal.close", p) else {
        return false;
    };
    match close.as_str() {
        "person" => false,
        "agents" => true,
        other => {
            p.push(
                span,
                Some("goal.close"),
                format!("`{other}` is not who ends a goal"),
                Some("`close = \"person\"` (the default: an agent's \"met\" asks you) or `close = \"agents\"`".to_owned()),
            );
            false
        }
    }
}

fn budget(raw: RawBudget, p: &mut Problems) -> loopx_quota::Budget {
    let mut at_least_one = |field: Option<Checked<u64>>, key: &str| {
        let (n, span) = take(field, key, p)?;
        if n == 0 {
            p.push(
                span,
                Some(key),
                format!("`{key} = 0` would ask before the first slice"),
                Some("remove it to set no limit".to_owned()),
            );
            return None;
        }
        Some(n)
    };
    let slices = at_least_one(raw.slices, "budget.slices");
    let tokens = at_least_one(raw.tokens, "budget.tokens");
    let cost_usd = take(raw.cost_usd, "budget.cost_usd", p).and_then(|(c, span)| {
        if c.is_finite() && c > 0.0 {
            return Some(c);
        }
        p.push(
            span,
            Some("budget.cost_usd"),
            "`budget.cost_usd` must be a positive number of dollars",
            None,
        );
        None
    });
    loopx_quota::Budget {
        slices,
        tokens,
        cost_usd,
    }
}

fn land(raw: RawLand, p: &mut Problems) -> Option<LandCheck> {
    let timeout = duration_field(raw.timeout, "land.timeout", p).unwrap_or(DEFAULT_LAND_TIMEOUT);
    let Some((command, span)) = take(raw.command, "land.check", p) else {
        p.push(
            0..0,
            Some("land.check"),
            "`[land]` needs a `check`",
            Some("for example `check = \"cargo test\"`".into()),
        );
        return None;
    };
    if command.trim().is_empty() {
        p.push(span, Some("land.check"), "`land.check` is empty", None);
        return None;
    }
    Some(LandCheck { command, timeout })
}

/// The kinds `done_needs` may name.
const DONE_NEEDS: [EvidenceKind; 3] = [
    EvidenceKind::Test,
    EvidenceKind::Artifact,
    EvidenceKind::Note,
];

fn evidence(raw: RawEvidence, p: &mut Problems) -> EvidenceRules {
    let mut rules = EvidenceRules::default();
    let kind = |name: &str, span: std::ops::Range<usize>, key: &str, p: &mut Problems| {
        let found = name.parse::<EvidenceKind>().ok();
        if found.is_none() {
            p.push(
                span,
                Some(key),
                format!("unknown evidence kind `{name}`"),
                Some(format!("one of {}", EvidenceKind::NAMES.join(", "))),
            );
        }
        found
    };
    if let Some((names, span)) = take(raw.done_needs, "evidence.done_needs", p) {
        for name in names {
            let Some(k) = kind(&name, span.clone(), "evidence.done_needs", p) else {
                continue;
            };
            // loopx's own kinds would be met by loopx's records (`slice`, `diff`) or never
            // (`land` is written after the check): only what an agent shows proves its done.
            if !DONE_NEEDS.contains(&k) {
                p.push(
                    span.clone(),
                    Some("evidence.done_needs"),
                    format!("`{name}` evidence is loopx's own record, not proof an agent gives"),
                    Some(format!(
                        "one of {}",
                        DONE_NEEDS.map(|k| k.as_str()).join(", ")
                    )),
                );
            } else if !rules.done_needs.contains(&k) {
                rules.done_needs.push(k);
            }
        }
    }
    for (name, life) in raw.shelf_life.unwrap_or_default() {
        let key = format!("evidence.shelf_life.{name}");
        let Some((text, span)) = life.get(&key, p) else {
            continue;
        };
        let Some(k) = kind(&name, span.clone(), &key, p) else {
            continue;
        };
        if let Some(d) = duration(&text.0, span, &key, p) {
            rules.shelf_life.insert(k, d);
        }
    }
    if let Some(d) = duration_field(raw.decision_max_age, "evidence.decision_max_age", p) {
        rules.decision_max_age = d;
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_rules_with_every_bad_kind_and_duration_named() {
        let config = project_config_str(
            "loopx.toml",
            "[evidence]\ndone_needs = [\"test\"]\nshelf_life = { test = \"2d\", monitor = \"12h\" }\ndecision_max_age = \"3d\"\n",
        )
        .expect("valid");
        assert_eq!(config.evidence.done_needs, [EvidenceKind::Test]);
        assert_eq!(
            config.evidence.decision_max_age,
            Duration::from_secs(3 * 86_400)
        );
        assert_eq!(
            config.evidence.shelf_life.get(&EvidenceKind::Test),
            Some(&Duration::from_secs(2 * 86_400))
        );
        let err = project_config_str(
            "loopx.toml",
            "[evidence]\ndone_needs = [\"tests\", \"land\"]\nshelf_life = { test = \"soon\" }\n",
        )
        .expect_err("invalid");
        let LoadError::Invalid(invalid) = err else {
            panic!("{err}")
        };
        let text = invalid.one_line_each();
        assert!(text.contains("unknown evidence kind `tests`"), "{text}");
        assert!(
            text.contains("`land` evidence is loopx's own record"),
            "{text}"
        );
        assert!(text.contains("evidence.shelf_life.test"), "{text}");
    }

    #[test]
    fn a_notify_command_with_its_timeout() {
        let config = project_config_str(
            "loopx.toml",
            "[notify]\ncommand = \"cat\"\ntimeout = \"3s\"\n",
        )
        .expect("valid");
        let notify = config.notify.expect("a notify section");
        assert_eq!(notify.command, "cat");
        assert_eq!(notify.timeout, Duration::from_secs(3));
    }

    #[test]
    fn every_problem_is_named_with_its_place() {
        let err = project_config_str(
            "loopx.toml",
            "[notify]\ncomand = \"cat\"\ntimeout = \"3 parsecs\"\n",
        )
        .expect_err("invalid");
        let LoadError::Invalid(invalid) = err else {
            panic!("{err}")
        };
        let text = invalid.one_line_each();
        assert!(
            text.contains("comand") && text.contains("command"),
            "{text}"
        );
        assert!(text.contains("loopx.toml:3"), "{text}");
    }

    #[test]
    fn a_budget_with_its_limits_and_a_zero_refused_by_name() {
        let config = project_config_str("loopx.toml", "[budget]\nslices = 20\ncost_usd = 2.5\n")
            .expect("valid");
        assert_eq!(
            config.budget,
            loopx_quota::Budget {
                slices: Some(20),
                tokens: None,
                cost_usd: Some(2.5)
            }
        );
        let err = project_config_str("loopx.toml", "[budget]\ntokens = 0\nslice = 3\n")
            .expect_err("invalid");
        let text = err.to_string();
        let LoadError::Invalid(invalid) = err else {
            panic!("{text}")
        };
        let text = invalid.one_line_each();
        assert!(text.contains("budget.tokens = 0"), "{text}");
        assert!(text.contains("loopx.toml:2"), "{text}");
        assert!(text.contains("`slices`"), "a did-you-mean: {text}");
    }

    #[test]
    fn a_store_url_with_a_password_is_refused() {
        for url in ["postgres://u:@h/db", "postgres://u@h/db?password=p%40ss"] {
            let text = format!("[store]\nurl = \"{url}\"\n");
            let err = project_config_str("loopx.toml", &text).expect_err(url);
            let LoadError::Invalid(invalid) = err else {
                panic!("{url}: {err}")
            };
            let text = invalid.one_line_each();
            assert!(text.contains("holds a password"), "{url}: {text}");
        }
        for url in ["postgres://u@h/db", "postgres://u%3Ax@h/db"] {
            let text = format!("[store]\nurl = \"{url}\"\n");
            project_config_str("loopx.toml", &text).expect(url);
        }
    }

    #[test]
    fn no_file_means_no_notifications() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(
            load_project_config(dir.path()).expect("ok"),
            ProjectConfig::default()
        );
    }
}
