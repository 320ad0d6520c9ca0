//! Drives the real Claude Code and Codex CLIs against the scripted server, offline.
//!
//! It needs `LOOPX_AGENT_CLIS` to name the folder `scripts/agent-clis/install.sh` installed into
//! (the one holding `node_modules/.bin/{claude,codex}`) and fails, never skips, when that, the
//! CLIs or `unshare`/`ip` are missing. The outer test re-runs this binary's
//! `netns_*` tests inside `unshare -rn` (a network namespace with only loopback, brought up
//! with `ip link set lo up`), so the CLIs and the server share a loopback and nothing can reach
//! the internet. See docs/design/model-server.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use loopx_model_server::{Answer, ModelServer, Script};
use serde_json::Value;

const CLIS_VAR: &str = "LOOPX_AGENT_CLIS";
const IN_NETNS_VAR: &str = "LOOPX_MODEL_SERVER_IN_NETNS";
/// Generous: each run takes 1–6 s here, but CI machines are shared and slow.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

#[test]
fn real_clis_in_netns() {
    // A missing variable fails: a test that passes without driving the CLIs would claim what
    // it never checked. The README's test command installs them and sets it.
    let dir = std::env::var_os(CLIS_VAR).unwrap_or_else(|| {
        panic!("{CLIS_VAR} is not set: run scripts/agent-clis/install.sh and the test command in README.md")
    });
    let bin = Path::new(&dir).join("node_modules/.bin");
    for cli in ["claude", "codex"] {
        assert!(
            bin.join(cli).is_file(),
            "{CLIS_VAR}={} has no node_modules/.bin/{cli}\n(hint: run scripts/agent-clis/install.sh)",
            Path::new(&dir).display()
        );
    }
    let me = std::env::current_exe().expect("the test binary knows its path");
    let output = Command::new("unshare")
        .args([
            "-rn",
            "--",
            "sh",
            "-c",
            r#"ip link set lo up && exec "$0" "$@""#,
        ])
        .arg(&me)
        .args(["--ignored", "--test-threads", "1", "--nocapture", "netns_"])
        .env(IN_NETNS_VAR, "1")
        .stdin(Stdio::null())
        .output()
        .expect("`unshare` runs (util-linux)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("4 passed"),
        "the namespaced runs failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
}

/// What one CLI run left behind.
struct Run {
    output: Output,
    events: Vec<Value>,
    work: tempfile::TempDir,
    server: ModelServer,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    fn describe(&self) -> String {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}\nrequests: {:?}",
            self.code(),
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr),
            self.server
                .requests()
                .iter()
                .map(|r| format!("{} {} {:?}", r.method, r.target, r.answer))
                .collect::<Vec<_>>()
        )
    }

    fn last(&self, kind: &str) -> &Value {
        self.events
            .iter()
            .rev()
            .find(|e| e["type"] == kind)
            .unwrap_or_else(|| panic!("no `{kind}` event\n{}", self.describe()))
    }

    fn model_requests(&self) -> Vec<(String, usize, u16)> {
        self.server
            .requests()
            .into_iter()
            .filter_map(|r| match r.answer {
                Answer::Turn { turn, status } => Some((r.path().to_owned(), turn, status)),
                _ => None,
            })
            .collect()
    }
}

fn script(name: &str) -> Script {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scripts")
        .join(name);
    Script::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cli(name: &str) -> PathBuf {
    let dir = std::env::var_os(CLIS_VAR).expect("the outer test passes LOOPX_AGENT_CLIS on");
    Path::new(&dir).join("node_modules/.bin").join(name)
}

/// Runs a CLI with a throwaway HOME and working directory, stdin closed, telemetry off, and
/// only the environment given (no inherited keys or proxies).
fn run(script_name: &str, program: &str, args: &[String], env: &[(&str, String)]) -> Run {
    assert_eq!(
        std::env::var(IN_NETNS_VAR).as_deref(),
        Ok("1"),
        "run only inside the namespace (through real_clis_in_netns)"
    );
    let server = ModelServer::start(script(script_name)).expect("the server starts");
    let home = tempfile::tempdir().expect("a temp HOME");
    let work = tempfile::tempdir().expect("a temp working directory");
    let mut command = Command::new(cli(program));
    command
        .current_dir(work.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // `{url}` stands for the server's address, known only now.
    let url = server.url();
    command.args(args.iter().map(|arg| arg.replace("{url}", &url)));
    for (key, value) in env {
        command.env(key, value.replace("{url}", &url));
    }
    let output = wait_with_deadline(command, RUN_TIMEOUT);
    let events = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    Run {
        output,
        events,
        work,
        server,
    }
}

fn wait_with_deadline(mut command: Command, timeout: Duration) -> Output {
    let mut child = command.spawn().expect("the CLI starts");
    let deadline = Instant::now() + timeout;
    // Drain both pipes while waiting: a CLI blocked on a full pipe would look like a hang.
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be polled") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let status = child.wait().expect("a killed child can be reaped");
            panic!("the CLI ran over {timeout:?} and was killed ({status})");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().expect("the stdout reader finishes"),
        stderr: err.join().expect("the stderr reader finishes"),
    }
}

fn claude(script_name: &str, prompt: &str) -> Run {
    let args = [
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
    ]
    .map(String::from);
    let env = [
        ("ANTHROPIC_BASE_URL", "{url}".to_owned()),
        ("ANTHROPIC_API_KEY", "test-key".to_owned()),
    ];
    run(script_name, "claude", &args, &env)
}

fn codex(script_name: &str, prompt: &str) -> Run {
    let args = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "-s",
        "workspace-write",
        "-c",
        r#"model_provider="loopx""#,
        "-c",
        r#"model_providers.loopx={name="loopx",base_url="{url}/v1",env_key="OPENAI_API_KEY",wire_api="responses"}"#,
        prompt,
    ]
    .map(String::from);
    let env = [("OPENAI_API_KEY", "test-key".to_owned())];
    run(script_name, "codex", &args, &env)
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_claude_writes_a_file_with_its_write_tool() {
    let run = claude("claude-write.json", "Write hi to hello.txt");
    let result = run.last("result");
    assert_eq!(run.code(), Some(0), "{}", run.describe());
    assert_eq!(result["is_error"], false, "{}", run.describe());
    assert!(result["session_id"].is_string(), "{result}");
    assert!(
        result["total_cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{result}"
    );
    // Both scripted turns' input tokens, summed by the CLI.
    assert_eq!(result["usage"]["input_tokens"], 2500, "{result}");
    assert!(
        result["result"]
            .as_str()
            .is_some_and(|t| t.contains("```loopx-report")),
        "{result}"
    );
    let written = std::fs::read_to_string(run.work.path().join("hello.txt"))
        .unwrap_or_else(|e| panic!("hello.txt was not written ({e})\n{}", run.describe()));
    assert_eq!(written, "hi\n");
    let final_message = &run.last("assistant")["message"]["content"][0];
    assert_eq!(
        final_message["type"], "text",
        "the final assistant message is the text"
    );
    let models = run.model_requests();
    assert_eq!(
        models,
        [
            ("/v1/messages".to_owned(), 0, 200),
            ("/v1/messages".to_owned(), 1, 200)
        ],
        "{}",
        run.describe()
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_claude_reports_a_429_with_a_long_retry_after_without_retrying() {
    let run = claude("claude-429.json", "Say hi");
    let result = run.last("result");
    assert_eq!(result["is_error"], true, "{}", run.describe());
    assert_eq!(result["api_error_status"], 429, "{result}");
    assert!(result["session_id"].is_string(), "{result}");
    // Observed with 2.1.197; the exit code is informative only, the JSON is what counts.
    assert_eq!(run.code(), Some(1), "{}", run.describe());
    assert_eq!(
        run.model_requests(),
        [("/v1/messages".to_owned(), 0, 429)],
        "retry-after: 3600 is not retried\n{}",
        run.describe()
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_codex_passes_the_scripted_report_through() {
    let run = codex("codex-report.json", "Say nothing changed");
    assert_eq!(run.code(), Some(0), "{}", run.describe());
    assert!(run.last("thread.started")["thread_id"].is_string());
    let message = run
        .events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .unwrap_or_else(|| panic!("no agent_message\n{}", run.describe()));
    assert!(
        message["item"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("```loopx-report\n{\"status\":\"done\"")),
        "{message}"
    );
    let usage = &run.last("turn.completed")["usage"];
    assert_eq!(
        (&usage["input_tokens"], &usage["output_tokens"]),
        (&1500.into(), &60.into())
    );
    assert_eq!(run.model_requests(), [("/v1/responses".to_owned(), 0, 200)]);
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_codex_runs_a_scripted_shell_command() {
    let run = codex("codex-shell.json", "Write hi to hello.txt");
    assert_eq!(run.code(), Some(0), "{}", run.describe());
    let command = run
        .events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "command_execution")
        .unwrap_or_else(|| panic!("no command_execution\n{}", run.describe()));
    assert_eq!(command["item"]["exit_code"], 0, "{command}");
    let written = std::fs::read_to_string(run.work.path().join("hello.txt"))
        .unwrap_or_else(|e| panic!("hello.txt was not written ({e})\n{}", run.describe()));
    assert_eq!(written, "hi\n");
    let usage = &run.last("turn.completed")["usage"];
    assert_eq!(usage["input_tokens"], 3200, "both turns are summed");
    assert_eq!(run.model_requests().len(), 2, "{}", run.describe());
}
