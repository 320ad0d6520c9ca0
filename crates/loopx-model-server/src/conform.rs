//! The adapter conformance kit: `loopx-model-server conform`. It runs one agent profile through
//! `loopx run --once` against the scripted server's standard scripts — a plain answer with a
//! report, an account out of quota, a refused key — each in a fresh project and `HOME`, and
//! prints what loopx classified next to what it should have. Anyone adding a runtime runs it
//! against the real CLI (offline: inside `unshare -rn`); `docs/adapters-conformance.md` says how.
//!
//! `{url}` (the server's address, known only once it listens) is replaced in the profile, in
//! `--env` values and in every file of the `--home` template, so a CLI whose endpoint lives in a
//! config file (Codex, OpenCode) is pointed at the server too.

use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{Answer, ErrorAnswer, ModelServer, Script, Turn, WhenDone};

/// The wire format the CLI under test speaks, which picks the error bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages (Claude Code).
    Anthropic,
    /// OpenAI Responses (Codex).
    Responses,
    /// OpenAI Chat Completions (Qwen Code, OpenCode, most OpenAI-compatible clients).
    Chat,
}

impl Api {
    pub fn parse(text: &str) -> Option<Api> {
        match text {
            "anthropic" => Some(Api::Anthropic),
            "responses" => Some(Api::Responses),
            "chat" => Some(Api::Chat),
            _ => None,
        }
    }
}

/// What to run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kit {
    pub profile: PathBuf,
    pub api: Option<Api>,
    /// The `loopx` binary; `loopx` on `PATH` when not given.
    pub loopx: Option<PathBuf>,
    /// Added to the clean environment loopx runs in (`PATH` and `HOME` are always set).
    pub env: Vec<(String, String)>,
    /// A directory copied into each case's fresh `HOME`.
    pub home: Option<PathBuf>,
    /// Only these cases (all when empty).
    pub only: Vec<String>,
    /// Longest one `loopx run --once` may take.
    pub timeout: Duration,
}

/// One standard script and what loopx must make of it.
#[derive(Debug)]
pub struct Case {
    pub name: &'static str,
    pub what: &'static str,
    pub expect: &'static str,
    /// The `report` field the slice must show, when it matters.
    pub report: Option<&'static str>,
}

pub const CASES: [Case; 3] = [
    Case {
        name: "report",
        what: "one answer carrying a loopx-report block (status done)",
        expect: "completed",
        report: Some("done"),
    },
    Case {
        name: "quota",
        what: "HTTP 429: the account is out of quota (retry-after 3600 s)",
        expect: "usage_limited",
        report: None,
    },
    Case {
        name: "auth",
        what: "HTTP 401: the key is refused",
        expect: "auth_failed",
        report: None,
    },
];

/// The script of `case` in `api`'s wire format.
pub fn script(case: &str, api: Api) -> Script {
    let turn = match case {
        "report" => Turn::text(
            "Nothing to change.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"checked: nothing to do\"}\n```",
        ),
        "quota" => Turn::Error(match api {
            Api::Anthropic => ErrorAnswer::anthropic_rate_limit(3600),
            Api::Responses => ErrorAnswer::codex_usage_limit(epoch_in(3600)),
            Api::Chat => ErrorAnswer::openai_quota(),
        }),
        _ => Turn::Error(match api {
            Api::Anthropic => ErrorAnswer {
                status: 401,
                headers: Default::default(),
                body: serde_json::json!({"type": "error", "error": {
                    "type": "authentication_error", "message": "invalid x-api-key"}}),
            },
            Api::Responses | Api::Chat => ErrorAnswer::openai_invalid_key(),
        }),
    };
    let when_done = match case {
        // One answer: an extra request is a bug worth seeing.
        "report" => WhenDone::Fail,
        // A CLI that retries keeps meeting the same error.
        _ => WhenDone::RepeatLast,
    };
    Script::new([turn]).when_done(when_done)
}

fn epoch_in(secs: u64) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + secs
}

/// What one case gave.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub case: &'static str,
    pub expect: &'static str,
    pub got: String,
    pub report: String,
    pub tokens: u64,
    pub hold_until: Option<String>,
    pub requests: usize,
    pub passed: bool,
    /// Why it failed, or the slice's reason.
    pub detail: String,
}

/// Runs every selected case; a case that cannot even be set up is an error.
pub fn run(kit: &Kit) -> Result<Vec<Verdict>, String> {
    let api = kit
        .api
        .ok_or("`--api anthropic|responses|chat` is required")?;
    let profile = std::fs::read_to_string(&kit.profile)
        .map_err(|e| format!("cannot read the profile `{}`: {e}", kit.profile.display()))?;
    let mut verdicts = Vec::new();
    for case in CASES
        .iter()
        .filter(|c| kit.only.is_empty() || kit.only.iter().any(|o| o == c.name))
    {
        verdicts.push(run_case(kit, case, api, &profile)?);
    }
    if verdicts.is_empty() {
        return Err(format!(
            "no case is named {:?} (cases: report, quota, auth)",
            kit.only
        ));
    }
    Ok(verdicts)
}

fn run_case(kit: &Kit, case: &Case, api: Api, profile: &str) -> Result<Verdict, String> {
    let server = ModelServer::start(script(case.name, api)).map_err(|e| e.to_string())?;
    let url = server.url();
    let project = tempfile_dir("project")?;
    let home = tempfile_dir("home")?;
    if let Some(template) = &kit.home {
        copy_tree(template, home.path(), &url)
            .map_err(|e| format!("cannot copy `{}` into HOME: {e}", template.display()))?;
    }
    let loopx = |args: &[&str]| -> Result<Output, String> {
        let mut command = Command::new(kit.loopx.as_deref().unwrap_or(Path::new("loopx")));
        command
            .args(args)
            .current_dir(project.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout stops loopx and whatever it started.
            .process_group(0);
        for (key, value) in &kit.env {
            command.env(key, value.replace("{url}", &url));
        }
        let output = wait(command, kit.timeout)?;
        if !output.status.success() && args[0] != "run" {
            return Err(format!(
                "`loopx {}` failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(output)
    };
    loopx(&["init"])?;
    let profiles = project.path().join(".loopx/profiles");
    std::fs::write(
        profiles.join("conform.toml"),
        profile.replace("{url}", &url),
    )
    .map_err(|e| format!("cannot write the profile: {e}"))?;
    loopx(&["goal", "start", &format!("Conformance: {}", case.what)])?;
    loopx(&["todo", "add", "Check the project and report"])?;
    loopx(&["agent", "add", "a", "--profile", "conform"])?;
    let output = match loopx(&["run", "--once", "--json"]) {
        Ok(output) => output,
        Err(why) => return Ok(failed(case, why, 0)),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let requests = server
        .requests()
        .iter()
        .filter(|r| matches!(r.answer, Answer::Turn { .. }))
        .count();
    let slice = match serde_json::from_str::<Value>(&stdout) {
        Ok(json) if json["slice"].is_object() => json["slice"].clone(),
        _ => {
            let why = format!(
                "`loopx run --once` ran no slice ({}): {} {}",
                output.status,
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
            return Ok(failed(case, why, requests));
        }
    };
    let text = |key: &str| slice[key].as_str().unwrap_or_default().to_owned();
    let got = text("outcome");
    let report = text("report");
    let passed = got == case.expect && case.report.is_none_or(|r| r == report);
    Ok(Verdict {
        case: case.name,
        expect: case.expect,
        got,
        report,
        tokens: slice["tokens"].as_u64().unwrap_or(0),
        hold_until: slice["hold_until"].as_str().map(str::to_owned),
        requests,
        passed,
        detail: text("reason"),
    })
}

/// A case that ran no slice (or ran over its time).
fn failed(case: &Case, why: String, requests: usize) -> Verdict {
    Verdict {
        case: case.name,
        expect: case.expect,
        got: "no slice".to_owned(),
        report: String::new(),
        tokens: 0,
        hold_until: None,
        requests,
        passed: false,
        detail: why,
    }
}

/// The verdicts as a table for people.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut out = format!(
        "{:<7} {:<14} {:<14} {:<8} {:>7} {:>8}  {}\n",
        "case", "expected", "got", "report", "tokens", "requests", "verdict"
    );
    for v in verdicts {
        let verdict = match (v.passed, &v.hold_until) {
            (true, Some(until)) => format!("ok (held until {until})"),
            (true, None) => "ok".to_owned(),
            (false, _) => format!("FAIL: {}", v.detail),
        };
        out.push_str(&format!(
            "{:<7} {:<14} {:<14} {:<8} {:>7} {:>8}  {verdict}\n",
            v.case, v.expect, v.got, v.report, v.tokens, v.requests
        ));
    }
    out
}

/// The verdicts as JSON.
pub fn json(verdicts: &[Verdict]) -> Value {
    Value::Array(
        verdicts
            .iter()
            .map(|v| {
                serde_json::json!({
                    "case": v.case, "expected": v.expect, "got": v.got, "report": v.report,
                    "tokens": v.tokens, "hold_until": v.hold_until, "requests": v.requests,
                    "passed": v.passed, "detail": v.detail,
                })
            })
            .collect(),
    )
}

fn tempfile_dir(what: &str) -> Result<TempDir, String> {
    TempDir::new(what).map_err(|e| format!("cannot make a temporary {what} directory: {e}"))
}

/// A directory removed when dropped (no dependency for one helper).
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> std::io::Result<TempDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("loopx-conform-{what}-{}-{n}", std::process::id()));
        // Private: a `--home` template may hold credentials.
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies `from` into `to`, replacing `{url}` in every file that is text.
fn copy_tree(from: &Path, to: &Path, url: &str) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target, url)?;
        } else {
            let bytes = std::fs::read(entry.path())?;
            match String::from_utf8(bytes) {
                Ok(text) => std::fs::write(&target, text.replace("{url}", url))?,
                Err(raw) => std::fs::write(&target, raw.into_bytes())?,
            }
        }
    }
    Ok(())
}

/// Runs `command` to its end, killing it after `timeout`.
fn wait(mut command: Command, timeout: Duration) -> Result<Output, String> {
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run loopx: {e}"))?;
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = read(out.map(|p| Box::new(p) as _));
    let err = read(err.map(|p| Box::new(p) as _));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("loopx ran over {timeout:?} and was stopped"));
            }
            Err(e) => return Err(format!("cannot wait for loopx: {e}")),
        }
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_has_a_script_in_every_api() {
        for case in CASES {
            for api in [Api::Anthropic, Api::Responses, Api::Chat] {
                let script = script(case.name, api);
                script.check().expect("a valid script");
                let is_error = matches!(script.turns[0], Turn::Error(_));
                assert_eq!(is_error, case.name != "report", "{}", case.name);
            }
        }
    }

    #[test]
    fn a_home_template_is_copied_with_the_url_filled_in() {
        let from = TempDir::new("from").expect("temp");
        let to = TempDir::new("to").expect("temp");
        std::fs::create_dir(from.path().join(".tool")).expect("dir");
        std::fs::write(
            from.path().join(".tool/config.json"),
            "{\"base\":\"{url}/v1\"}",
        )
        .expect("file");
        copy_tree(from.path(), to.path(), "http://127.0.0.1:9").expect("copies");
        let text = std::fs::read_to_string(to.path().join(".tool/config.json")).expect("copied");
        assert_eq!(text, "{\"base\":\"http://127.0.0.1:9/v1\"}");
    }
}
