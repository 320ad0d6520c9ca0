//! Drives the real Claude Code and Codex CLIs against the scripted server, offline: first
//! directly, then as agents of `loopx run --once` through the shipped adapters.
//!
//! It needs `LOOPX_AGENT_CLIS` to name the folder `scripts/agent-clis/install.sh` installed into
//! (the one holding `node_modules/.bin/{claude,codex}`) and fails, never skips, when that, the
//! CLIs or `unshare`/`ip` are missing. The outer test builds the `loopx` binary (`cargo build
//! -p loopx-cli`, a no-op when it is fresh) and re-runs this binary's `netns_*` tests inside
//! `unshare -rn` (a network namespace with only loopback, brought up with `ip link set lo up`),
//! so the CLIs, loopx and the server share a loopback and nothing can reach the internet. See
//! docs/design/model-server.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use loopx_model_server::{Answer, ErrorAnswer, ModelServer, Script, Turn};
use serde_json::Value;

const CLIS_VAR: &str = "LOOPX_AGENT_CLIS";
const IN_NETNS_VAR: &str = "LOOPX_MODEL_SERVER_IN_NETNS";
/// The `loopx` binary the outer test built, for the inner tests.
const LOOPX_VAR: &str = "LOOPX_REAL_CLIS_LOOPX";
/// A `loopx` built already, for a run with no cargo (`scripts/test-as-user.sh` runs the test
/// binaries as a user who cannot reach root's toolchain, right after the build).
const BUILT_VAR: &str = "LOOPX_TEST_BUILT_LOOPX";
/// The `netns_*` tests; the outer test insists that all of them ran and passed.
const NETNS_TESTS: usize = 21;
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
    for cli in ["claude", "codex", "qwen", "opencode"] {
        assert!(
            bin.join(cli).is_file(),
            "{CLIS_VAR}={} has no node_modules/.bin/{cli}\n(hint: run scripts/agent-clis/install.sh)",
            Path::new(&dir).display()
        );
    }
    let me = std::env::current_exe().expect("the test binary knows its path");
    let loopx = match std::env::var_os(BUILT_VAR) {
        Some(built) => PathBuf::from(built),
        None => build_loopx(&me),
    };
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
        .env(LOOPX_VAR, &loopx)
        .stdin(Stdio::null())
        .output()
        .expect("`unshare` runs (util-linux)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(&format!("{NETNS_TESTS} passed")),
        "the namespaced runs failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // The inner tests' own lines (names, timings), shown with `--nocapture`.
    println!("{stdout}");
}

/// Builds `loopx` with the profile and target directory this test binary was built with
/// (`target/<profile>/deps/<test>`), so the tests never drive a stale binary; returns its path.
fn build_loopx(test_exe: &Path) -> PathBuf {
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("a target directory");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => panic!("no profile directory in {}", test_exe.display()),
    };
    let built = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "loopx-cli", "--bin", "loopx"])
        .args(["--profile", profile, "--target-dir"])
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(
        built.success(),
        "`cargo build -p loopx-cli` failed ({built})"
    );
    profile_dir.join("loopx")
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
    let server = ModelServer::start(script(script_name)).expect("the server starts");
    let home = tempfile::tempdir().expect("a temp HOME");
    let work = tempfile::tempdir().expect("a temp working directory");
    let mut command = offline_command(&cli(program), work.path(), home.path(), None);
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

/// A command with only `PATH` (`bin_dir` first when given), `HOME` and the telemetry switches
/// in its environment, stdin closed and both outputs piped. Only inside the namespace.
fn offline_command(program: &Path, cwd: &Path, home: &Path, bin_dir: Option<&Path>) -> Command {
    assert_eq!(
        std::env::var(IN_NETNS_VAR).as_deref(),
        Ok("1"),
        "run only inside the namespace (through real_clis_in_netns)"
    );
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        bin_dir
            .map(Path::to_path_buf)
            .into_iter()
            .chain(std::env::split_paths(&inherited)),
    )
    .expect("PATH entries join");
    let mut command = Command::new(program);
    command
        .current_dir(cwd)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        // The CLIs keep sockets and locks in the temp dir (`claude-<uid>`, `codex-daemon-<uid>`):
        // a run as another user, uid 0 in this namespace too, needs its own.
        .envs(std::env::var_os("TMPDIR").map(|dir| ("TMPDIR", dir)))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
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

// ---------------------------------------------------------------------------------------------
// The same CLIs as agents of `loopx run --once`, through the shipped adapters.

/// A test profile: the shipped adapter at workspace-write, limits far above what a run takes
/// (a run that reaches them has hung), and its own quota account.
fn test_profile(adapter: &str, account: &str) -> String {
    format!(
        r#"description = "{adapter} against the scripted model server"
adapter = "{adapter}"
permission = "workspace-write"
role = "executor"

[limits]
max_time = "2m"
idle_timeout = "60s"
grace = "2s"

[quota]
account = "{account}"
"#
    )
}

/// A loopx project with a goal, one todo and one agent `a` on `.loopx/profiles/agent.toml`,
/// talking to a scripted server; loopx runs with only `env` added to a clean environment.
struct Project {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    server: ModelServer,
    env: Vec<(&'static str, String)>,
}

impl Project {
    fn new(script: Script, profile: &str) -> Project {
        Project::create(|_| script, profile, false)
    }

    /// Like [`Project::new`], with a script that knows the project's directory (for CLIs whose
    /// tools take absolute paths).
    fn new_at(script: impl FnOnce(&Path) -> Script, profile: &str) -> Project {
        Project::create(script, profile, false)
    }

    /// Like [`Project::new`], in a git repository with one commit: the goal's todos are worked
    /// in worktrees, and land on `loopx/g1`.
    fn new_git(script: Script, profile: &str) -> Project {
        Project::create(|_| script, profile, true)
    }

    fn create(script: impl FnOnce(&Path) -> Script, profile: &str, in_git: bool) -> Project {
        let dir = tempfile::tempdir().expect("a temp project");
        let server = ModelServer::start(script(dir.path())).expect("the server starts");
        let project = Project {
            dir,
            home: tempfile::tempdir().expect("a temp HOME"),
            server,
            env: Vec::new(),
        };
        let root = project.dir.path();
        if in_git {
            std::fs::write(root.join("README.md"), "# A project\n").expect("a README");
            project.git(&["init", "-q"]);
            project.git(&["add", "README.md"]);
            project.git(&["commit", "-q", "-m", "start"]);
        }
        project.ok(&["init"]);
        std::fs::write(root.join(".loopx/profiles/agent.toml"), profile)
            .expect("the profile is written");
        project.ok(&["goal", "start", "Say hello"]);
        project.ok(&["todo", "add", "Write hi to hello.txt"]);
        project.ok(&["agent", "add", "a", "--profile", "agent"]);
        project
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.dir.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// loopx with `args`, offline, in the project, with the project's environment.
    fn command(&self, args: &[&str]) -> Command {
        let loopx = std::env::var_os(LOOPX_VAR).expect("the outer test passes the loopx binary");
        let bin = cli("claude").parent().expect("a bin dir").to_path_buf();
        let mut command = offline_command(
            Path::new(&loopx),
            self.dir.path(),
            self.home.path(),
            Some(&bin),
        );
        command
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    fn loopx(&self, args: &[&str]) -> Output {
        wait_with_deadline(self.command(args), RUN_TIMEOUT)
    }

    /// Starts loopx and returns at once.
    fn spawn(&self, args: &[&str]) -> std::process::Child {
        let mut command = self.command(args);
        command.stdout(Stdio::null()).stderr(Stdio::null());
        command.spawn().expect("loopx starts")
    }

    /// Runs loopx, insisting on exit 0; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.loopx(args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "`loopx {}` failed ({}):\n{stdout}\n{}\nrequests: {:?}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr),
            self.server.requests()
        );
        stdout
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// `loopx run --once --json`, insisting that its slice ended `outcome`.
    fn run_once_to(&self, outcome: &str) -> Value {
        let slice = self.run_once();
        assert_eq!(slice["outcome"], outcome, "{slice}\n{}", self.log(&slice));
        slice
    }

    /// `loopx run --once --json`: the slice it ran.
    fn run_once(&self) -> Value {
        let out = self.json(&["run", "--once", "--json"]);
        assert!(out["slice"].is_object(), "no slice ran: {out}");
        out["slice"].clone()
    }

    /// The slice's evidence record.
    fn slice_evidence(&self, slice: &str) -> Value {
        let all = self.json(&["evidence", "list", "--json"]);
        all["evidence"]
            .as_array()
            .and_then(|e| {
                e.iter()
                    .find(|e| e["kind"] == "slice" && e["slice"] == slice)
            })
            .unwrap_or_else(|| panic!("no evidence of {slice}: {all}"))
            .clone()
    }

    fn todo_state(&self) -> Value {
        self.json(&["todo", "show", "t1", "--json"])["todo"]["state"].clone()
    }

    /// The slice's raw log (the agent's stream as the PTY gave it).
    fn log(&self, slice: &Value) -> String {
        let log = slice["log"].as_str().expect("the slice names its log");
        std::fs::read_to_string(self.dir.path().join(log)).expect("the slice log is readable")
    }

    fn log_result(&self, slice: &Value) -> Value {
        log_event(&self.log(slice), "result")
    }

    fn model_turns(&self) -> usize {
        self.server
            .requests()
            .iter()
            .filter(|r| matches!(r.answer, Answer::Turn { .. }))
            .count()
    }
}

/// The last JSON line of `kind` in a slice log (the PTY adds terminal noise around them).
fn log_event(log: &str, kind: &str) -> Value {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .rfind(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no `{kind}` line in the slice log:\n{log}"))
}

fn claude_project(script: Script, credential: &'static str) -> Project {
    let mut project = Project::new(script, &test_profile("claude-code", "anthropic-test"));
    let url = project.server.url();
    project.env = vec![("ANTHROPIC_BASE_URL", url), (credential, "test-key".into())];
    project
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_runs_claude_to_a_done_todo() {
    let project = claude_project(script("claude-write.json"), "ANTHROPIC_API_KEY");
    let slice = project.run_once();
    assert_eq!(slice["outcome"], "completed", "{slice}");
    assert_eq!(slice["report"], "done", "{slice}");
    assert_eq!(slice["todo_state"], "done", "{slice}");
    assert_eq!(project.todo_state(), "done");
    let written = std::fs::read_to_string(project.dir.path().join("hello.txt"))
        .unwrap_or_else(|e| panic!("hello.txt was not written ({e}): {slice}"));
    assert_eq!(written, "hi\n");
    assert_eq!(project.model_turns(), 2, "{:?}", project.server.requests());

    // Usage and cost come from Claude's own `result` event.
    let result = project.log_result(&slice);
    let usage = &result["usage"];
    let tokens = usage["input_tokens"].as_u64().expect("input tokens")
        + usage["output_tokens"].as_u64().expect("output tokens");
    assert_eq!(usage["input_tokens"], 2500, "{result}");
    assert_eq!(slice["tokens"], tokens, "{slice}");
    let cost = result["total_cost_usd"].as_f64().expect("a cost");
    assert!(cost > 0.0, "{result}");
    assert_eq!(slice["cost_usd"].as_f64(), Some(cost), "{slice}");
    let session = result["session_id"].as_str().expect("a session id");

    let evidence = project.slice_evidence("s1");
    let summary = evidence["summary"].as_str().expect("a summary");
    assert!(
        summary.contains(&format!("({tokens} tokens, ${cost:.4})")),
        "{summary}"
    );
    let detail = evidence["detail"].as_str().expect("a detail");
    assert!(
        detail.contains(&format!("session: {session}\n")),
        "{detail}"
    );
    assert!(detail.contains("report: wrote hello.txt"), "{detail}");
    // Claude Code did all this inside loopx's sandbox, not beside it.
    assert!(
        detail.contains("containment: namespaces+landlock"),
        "{detail}"
    );
}

/// `loopx say` while Claude Code runs a tool: the message goes into the running session (its
/// stream-json input), reaches the model in the same turn, and is recorded delivered `live`
/// when Claude echoes it; then loopx closes Claude's stdin and the slice ends on its own.
#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_says_a_message_into_a_running_claude_session() {
    let project = claude_project(script("claude-live.json"), "ANTHROPIC_API_KEY");
    let mut run = project.spawn(&["run", "--once"]);
    // The model asked for `sleep 8`: Claude runs it now.
    let asked = poll(RUN_TIMEOUT, || (project.model_turns() >= 1).then_some(()));
    assert!(asked.is_some(), "Claude never asked the model");
    project.ok(&["say", "a", "Use tabs, not spaces."]);
    let exited = poll(RUN_TIMEOUT, || run.try_wait().expect("wait"));
    let Some(status) = exited else {
        let _ = run.kill();
        panic!(
            "loopx run --once did not end: {:?}",
            project.server.requests()
        );
    };
    assert!(status.success(), "{status}");
    // The model's next request carries the message, as Claude injects it mid-turn.
    let requests = project.server.requests();
    assert_eq!(project.model_turns(), 2, "{requests:?}");
    let second = requests
        .iter()
        .filter(|r| matches!(r.answer, Answer::Turn { .. }))
        .nth(1)
        .expect("a second request")
        .body
        .to_string();
    assert!(
        second.contains("Use tabs, not spaces.") && second.contains("A message to you from human:"),
        "{second}"
    );
    let log = project.ok(&["log", "--json", "--kind", "message_delivered"]);
    let delivered: Value = serde_json::from_str(log.trim()).expect("one event");
    assert_eq!(delivered["data"]["how"], "live", "{delivered}");
    assert_eq!(delivered["data"]["slice"], "s1", "{delivered}");
    assert_eq!(project.todo_state(), "done");
}

/// Calls `probe` until it gives a value, for at most `within`.
fn poll<T>(within: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_runs_claude_in_a_worktree_and_lands_its_work() {
    let mut project = Project::new_git(
        script("claude-write.json"),
        &test_profile("claude-code", "anthropic-test"),
    );
    let url = project.server.url();
    project.env = vec![
        ("ANTHROPIC_BASE_URL", url),
        ("ANTHROPIC_API_KEY", "test-key".into()),
    ];
    let slice = project.run_once();
    assert_eq!(slice["outcome"], "completed", "{slice}");
    assert_eq!(slice["todo_state"], "done", "{slice}");
    assert!(slice["landed"].is_string(), "{slice}");
    // Claude wrote in t1's worktree; the work landed on the goal's branch, and the person's
    // own checkout has none of it.
    assert_eq!(project.git(&["show", "loopx/g1:hello.txt"]), "hi\n");
    assert!(!project.dir.path().join("hello.txt").exists());
    let authors = project.git(&["log", "--no-merges", "--format=%an %s", "-1", "loopx/g1-t1"]);
    assert!(authors.starts_with("a (loopx agent) s1: "), "{authors}");
    let detail = project.slice_evidence("s1")["detail"].clone();
    assert!(
        detail
            .as_str()
            .is_some_and(|d| d.contains("containment: namespaces+landlock")),
        "{detail}"
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_holds_claude_after_a_session_limit_429() {
    // The subscription path: with an OAuth token Claude turns the unified rate-limit headers
    // into a `rate_limit_event` with the reset (with an API key it prints no reset time).
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 7200;
    let limit = Script::new([Turn::Error(ErrorAnswer::anthropic_session_limit(reset))]);
    let project = claude_project(limit, "CLAUDE_CODE_OAUTH_TOKEN");
    let slice = project.run_once();
    assert_eq!(slice["outcome"], "usage_limited", "{slice}");
    assert_eq!(slice["todo_state"], "released", "{slice}");
    let reset_at = rfc3339_utc(reset);
    assert_eq!(slice["hold_until"], reset_at, "{slice}");
    assert_eq!(
        project.log_result(&slice)["api_error_status"],
        429,
        "{}",
        project.log(&slice)
    );
    assert_eq!(project.todo_state(), "open");

    let should = project.json(&["quota", "should-run", "--agent", "a", "--json"]);
    assert_eq!(should["decision"], "wait", "{should}");
    assert_eq!(should["wake_at"], reset_at, "{should}");
    let next = project.json(&["run", "--once", "--json"]);
    assert_eq!(next["decision"], "wait", "{next}");
    assert_eq!(next["slice"], Value::Null, "{next}");
    assert_eq!(
        project.model_turns(),
        1,
        "the hold kept Claude from asking again"
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_halts_on_a_login_gate_when_claude_s_key_is_refused() {
    let refused = ErrorAnswer {
        status: 401,
        headers: std::collections::BTreeMap::new(),
        body: serde_json::json!({
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"}
        }),
    };
    let project = claude_project(Script::new([Turn::Error(refused)]), "ANTHROPIC_API_KEY");
    let slice = project.run_once_to("auth_failed");
    assert_eq!(slice["todo_state"], "released", "{slice}");
    // The account is held until a person answers a gate that says how to log in.
    let status = project.json(&["quota", "status", "--json"]);
    let hold = &status["holds"][0];
    assert_eq!(
        (&hold["key"], &hold["until"]),
        (&Value::from("anthropic-test"), &Value::Null),
        "{status}"
    );
    let gates = project.json(&["gate", "list", "--json"]);
    let question = gates["gates"][0]["question"].as_str().unwrap_or_default();
    assert!(
        question.contains("not logged in") && question.contains("/login"),
        "{gates}"
    );
    let next = project.json(&["run", "--once", "--json"]);
    assert_eq!(next["decision"], "ask", "{next}");
    assert_eq!(next["slice"], Value::Null, "{next}");
    let asked = project.server.requests().len();
    assert!(asked <= 3, "Claude asked {asked} times before giving up");
}

/// `secs` since the epoch as loopx prints timestamps (`2026-11-30T08:14:26Z`).
fn rfc3339_utc(secs: u64) -> String {
    let output = Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("date runs");
    String::from_utf8(output.stdout)
        .expect("date prints ASCII")
        .trim()
        .to_owned()
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_runs_codex_to_a_done_todo() {
    let mut project = Project::new(
        script("codex-report.json"),
        &test_profile("codex", "openai-test"),
    );
    let codex_home = codex_home(project.home.path(), &project.server.url());
    project.env = vec![
        ("CODEX_HOME", codex_home.display().to_string()),
        ("OPENAI_API_KEY", "test-key".into()),
    ];
    let slice = project.run_once();
    assert_eq!(slice["outcome"], "completed", "{slice}");
    assert_eq!(slice["report"], "done", "{slice}");
    assert_eq!(project.todo_state(), "done");
    // The scripted turn's usage, as `turn.completed` reports it (1500 in, 60 out).
    assert_eq!(slice["tokens"], 1560, "{slice}");
    // A PTY is a terminal: Codex never waits for more stdin, and ends long before its limits.
    let log = project.log(&slice);
    assert!(
        !log.contains("Reading additional input from stdin"),
        "{log}"
    );
    let took = slice["duration_ms"].as_u64().expect("a duration");
    assert!(took < 30_000, "{took} ms is near the limits: {slice}");
    let thread = log_event(&log, "thread.started")["thread_id"].clone();
    let detail = project.slice_evidence("s1")["detail"].clone();
    assert!(
        detail
            .as_str()
            .zip(thread.as_str())
            .is_some_and(|(d, t)| d.contains(&format!("session: {t}\n"))),
        "{detail} lacks thread {thread}"
    );
    assert!(
        detail
            .as_str()
            .is_some_and(|d| d.contains("containment: namespaces+landlock")),
        "Codex ran inside loopx's sandbox: {detail}"
    );
    assert_eq!(project.model_turns(), 1);
}

/// Issue 31: Claude Code at `workspace-write` could not run the project's tests (`Bash …
/// requires approval` in its transcript). The shipped adapter lets it run commands; loopx's
/// sandbox is the boundary.
#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_claude_at_workspace_write_runs_a_command() {
    let script = write_then_report(
        "Bash",
        serde_json::json!({"command": "echo ran > ran.txt", "description": "Run a command"}),
    );
    let project = claude_project(script, "ANTHROPIC_API_KEY");
    let slice = project.run_once_to("completed");
    assert_eq!(slice["report"], "done", "{slice}");
    let ran = std::fs::read_to_string(project.dir.path().join("ran.txt"));
    assert_eq!(
        ran.ok().as_deref(),
        Some("ran\n"),
        "{}",
        project.log(&slice)
    );
}

/// Issue 31's acceptance: the README's quick start, run as written — the shipped `executor`
/// (Claude Code) and `reviewer` (Codex, read-only) profiles, a work todo and a review todo for
/// the reviewer — finishes the todo with the executor and the review with the reviewer, each
/// CLI against its own scripted server. Before, the read-only reviewer took the work todo and
/// "finished" it with no change. Whichever agent plans after the review says the goal is met.
#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_the_readme_quick_start_finishes_its_todo_and_its_review() {
    let met = || {
        Turn::text(
            "Nothing is left.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"the goal is met\"}\n```",
        )
    };
    let claude = ModelServer::start(Script::new([
        Turn::tool_call(
            "Write",
            serde_json::json!({"file_path": "src/retry.txt", "content": "retry with backoff\n"}),
        ),
        Turn::text(
            "Done.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"retries with backoff\"}\n```",
        ),
        met(),
    ]))
    .expect("Claude's server starts");
    let codex = ModelServer::start(Script::new([
        Turn::text(
            "The change is sound.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"reviewed the retry change\",\"evidence\":[{\"kind\":\"note\",\"summary\":\"retry.txt reads well\"}]}\n```",
        ),
        met(),
    ]))
    .expect("Codex's server starts");
    let dir = tempfile::tempdir().expect("a temp project");
    let home = tempfile::tempdir().expect("a temp HOME");
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).expect("src");
    std::fs::write(root.join("src/client.txt"), "the HTTP client\n").expect("a file");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    git(&["add", "src"]);
    git(&["commit", "-q", "-m", "start"]);
    let codex_home = codex_home(home.path(), &codex.url());
    let env = [
        ("ANTHROPIC_BASE_URL", claude.url()),
        ("ANTHROPIC_API_KEY", "test-key".to_owned()),
        ("CODEX_HOME", codex_home.display().to_string()),
        ("OPENAI_API_KEY", "test-key".to_owned()),
    ];
    let loopx = |args: &[&str]| {
        let program = std::env::var_os(LOOPX_VAR).expect("the outer test passes the loopx binary");
        let bin = cli("claude").parent().expect("a bin dir").to_path_buf();
        let mut command = offline_command(Path::new(&program), root, home.path(), Some(&bin));
        command.args(args).envs(env.iter().map(|(k, v)| (k, v)));
        let out = wait_with_deadline(command, RUN_TIMEOUT);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        // `--on-gate exit` ends on a person's question with 7 (HALTED_ON_GATE), as it should.
        let halted = args.contains(&"--on-gate") && out.status.code() == Some(7);
        assert!(
            out.status.success() || halted,
            "`loopx {}` failed ({}):\n{stdout}\n{stderr}\nClaude's requests: {:?}\nCodex's requests: {:?}",
            args.join(" "),
            out.status,
            claude.requests(),
            codex.requests()
        );
        stdout
    };
    // The README's quick start, as written.
    loopx(&["init"]);
    loopx(&[
        "goal",
        "start",
        "Add retries to the HTTP client",
        "--scope",
        "src/**",
        "--scope",
        "tests/**",
    ]);
    loopx(&["agent", "add", "exec", "--profile", "executor"]);
    loopx(&["agent", "add", "rev", "--profile", "reviewer"]);
    loopx(&["todo", "add", "Retry idempotent requests with backoff"]);
    loopx(&[
        "todo",
        "add",
        "Review the retry change",
        "--role",
        "reviewer",
        "--after",
        "t1",
    ]);
    // The agents work until one says the goal is met, which asks the person.
    loopx(&["run", "--for", "150s", "--on-gate", "exit"]);

    let slices: Value =
        serde_json::from_str(&loopx(&["log", "--json", "-n", "1000"])).unwrap_or(Value::Null);
    let todos: Value = serde_json::from_str(&loopx(&["todo", "list", "--all", "--json"]))
        .expect("todo list is JSON");
    let by_id = |id: &str| {
        todos["todos"]
            .as_array()
            .and_then(|all| all.iter().find(|t| t["id"] == id).cloned())
            .unwrap_or(Value::Null)
    };
    let (t1, t2) = (by_id("t1"), by_id("t2"));
    assert_eq!(t1["state"], "done", "{todos:#}\n{slices}");
    assert_eq!(t2["state"], "done", "{todos:#}\n{slices}");
    assert_eq!(t1["finished_under"]["agent"], "exec", "{t1:#}");
    assert_eq!(t2["finished_under"]["agent"], "rev", "{t2:#}");
    assert_eq!(
        git(&["show", "loopx/g1:src/retry.txt"]),
        "retry with backoff\n"
    );
    // After the review, one planning slice found nothing left and said the goal is met: the
    // person is asked, and ends it.
    let asked: Value =
        serde_json::from_str(&loopx(&["gate", "list", "--json"])).expect("gate list is JSON");
    assert_eq!(
        asked["gates"][0]["kind"]["goal_met"]["goal"], "g1",
        "{asked:#}\n{slices}"
    );
    loopx(&["gate", "answer", "q1", "done"]);
    let goals: Value =
        serde_json::from_str(&loopx(&["goal", "list", "--json"])).expect("goal list is JSON");
    assert_eq!(goals["goals"][0]["status"], "done", "{goals:#}\n{slices}");
}

/// A `CODEX_HOME` in `home` whose model provider is the scripted server at `url`.
fn codex_home(home: &Path, url: &str) -> PathBuf {
    let dir = home.join("codex");
    std::fs::create_dir(&dir).expect("CODEX_HOME is created");
    let config = format!(
        "model_provider = \"loopx\"\n\n[model_providers.loopx]\nname = \"loopx\"\n\
         base_url = \"{url}/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n"
    );
    std::fs::write(dir.join("config.toml"), config).expect("the config is written");
    dir
}

/// A write tool call, then an answer with a report block that says done.
fn write_then_report(tool: &str, input: Value) -> Script {
    Script::new([
        Turn::tool_call(tool, input),
        Turn::text(
            "Done.\n```loopx-report\n{\"status\":\"done\",\"summary\":\"wrote hello.txt\"}\n```",
        ),
    ])
    .when_done(loopx_model_server::WhenDone::Fail)
}

/// The slice ran `write_then_report` to a done todo: the file is written, both turns' usage
/// (100 in / 20 out each) counted, no other model request made, and its evidence names the
/// session (the `session_key` of the log's first `event` line) and loopx's containment.
fn assert_wrote_and_reported(project: &Project, event: &str, session_key: &str) {
    let slice = project.run_once_to("completed");
    assert_eq!(slice["report"], "done", "{slice}");
    assert_eq!(project.todo_state(), "done");
    let written = std::fs::read_to_string(project.dir.path().join("hello.txt"));
    assert_eq!(
        written.ok().as_deref(),
        Some("hi\n"),
        "{}",
        project.log(&slice)
    );
    assert_eq!(slice["tokens"], 240, "{slice}");
    assert_eq!(
        project.model_turns(),
        2,
        "no title, memory or check requests"
    );
    let session = log_event(&project.log(&slice), event)[session_key].clone();
    let detail = project.slice_evidence("s1")["detail"].clone();
    assert!(
        detail
            .as_str()
            .zip(session.as_str())
            .is_some_and(|(d, id)| d.contains(&format!("session: {id}\n"))
                && d.contains("containment: namespaces+landlock")),
        "{detail} lacks session {session} or containment"
    );
}

/// A Qwen Code project: its settings in the test HOME, its OpenAI-compatible API the scripted
/// server. Usage statistics off (else it looks up an Aliyun host), managed auto-memory off (else
/// it asks the model once more after every run, taking a scripted turn), and the client's own
/// retries off (it still tries a 429 seven times over about 80 s; docs/profiles.md).
fn qwen_project(script: impl FnOnce(&Path) -> Script, limits: &str) -> Project {
    let profile = test_profile("qwen", "qwen-test")
        .replace("max_time = \"2m\"\nidle_timeout = \"60s\"", limits);
    let mut project = Project::new_at(script, &profile);
    let settings = project.home.path().join(".qwen");
    std::fs::create_dir(&settings).expect("~/.qwen is created");
    let json = serde_json::json!({
        "$version": 4,
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"generationConfig": {"maxRetries": 0}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false},
        "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
    });
    std::fs::write(settings.join("settings.json"), json.to_string()).expect("settings written");
    project.env = vec![
        ("OPENAI_BASE_URL", format!("{}/v1", project.server.url())),
        ("OPENAI_API_KEY", "test-key".into()),
        ("OPENAI_MODEL", "mock-model".into()),
        ("QWEN_CODE_NO_RELAUNCH", "1".into()),
    ];
    project
}

const QWEN_LIMITS: &str = "max_time = \"2m\"\nidle_timeout = \"60s\"";

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_runs_qwen_to_a_done_todo() {
    // Qwen Code's `write_file` takes an absolute path.
    let write = |root: &Path| {
        let input = serde_json::json!({"file_path": root.join("hello.txt"), "content": "hi\n"});
        write_then_report("write_file", input)
    };
    let project = qwen_project(write, QWEN_LIMITS);
    assert_wrote_and_reported(&project, "system", "session_id");
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_holds_qwen_after_a_quota_429() {
    // Qwen Code retries silently for about 80 s before it says anything: an idle limit under
    // that would call it stalled.
    let limits = "max_time = \"4m\"\nidle_timeout = \"3m\"";
    let quota = Turn::Error(ErrorAnswer::openai_quota());
    let project = qwen_project(|_| Script::new([quota]), limits);
    let slice = project.run_once_to("usage_limited");
    assert_eq!(slice["todo_state"], "released", "{slice}");
    // No reset time is said: the account is held for loopx's backoff.
    let hold = slice["hold_until"].as_str().expect("a hold");
    let status = project.json(&["quota", "status", "--json"]);
    assert_eq!(status["holds"][0]["key"], "qwen-test", "{status}");
    assert_eq!(status["holds"][0]["until"], hold, "{status}");
    let asked = project.model_turns();
    let next = project.json(&["run", "--once", "--json"]);
    assert_eq!(next["decision"], "wait", "{next}");
    assert_eq!(next["slice"], Value::Null, "{next}");
    assert_eq!(
        project.model_turns(),
        asked,
        "the hold kept Qwen Code from asking again"
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_halts_on_a_login_gate_when_qwen_s_key_is_refused() {
    let refused = ErrorAnswer::openai_invalid_key();
    let project = qwen_project(|_| Script::new([Turn::Error(refused)]), QWEN_LIMITS);
    let slice = project.run_once_to("auth_failed");
    assert_eq!(slice["todo_state"], "released", "{slice}");
    let gates = project.json(&["gate", "list", "--json"]);
    let question = gates["gates"][0]["question"].as_str().unwrap_or_default();
    assert!(question.contains("OPENAI_API_KEY"), "{gates}");
    let next = project.json(&["run", "--once", "--json"]);
    assert_eq!(next["decision"], "ask", "{next}");
    assert_eq!(project.model_turns(), 1, "a refused key is not retried");
}

/// An OpenCode project: a provider `loopx` on the scripted server (Chat Completions) in the
/// test HOME's OpenCode config, and the profile's model on it.
fn opencode_project(script: Script) -> Project {
    let profile = test_profile("opencode", "opencode-test").replace(
        "adapter = \"opencode\"\n",
        "adapter = \"opencode\"\nmodel = \"loopx/scripted\"\n",
    );
    let mut project = Project::new(script, &profile);
    let config = project.home.path().join(".config/opencode");
    std::fs::create_dir_all(&config).expect("the config dir is created");
    let json = serde_json::json!({
        "autoupdate": false,
        "share": "disabled",
        "provider": {"loopx": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": format!("{}/v1", project.server.url()), "apiKey": "{env:OPENAI_API_KEY}"},
            "models": {"scripted": {"limit": {"context": 128_000, "output": 8192}}},
        }},
    });
    std::fs::write(config.join("opencode.json"), json.to_string()).expect("config written");
    project.env = vec![
        ("OPENAI_API_KEY", "test-key".into()),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
    ];
    project
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_runs_opencode_to_a_done_todo() {
    let input = serde_json::json!({"filePath": "hello.txt", "content": "hi\n"});
    let project = opencode_project(write_then_report("write", input));
    // `--title` spares the title request.
    assert_wrote_and_reported(&project, "step_start", "sessionID");
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_stops_opencode_sleeping_on_a_quota_429_and_holds_it() {
    // OpenCode would sleep the hour `retry-after` says, then retry: loopx reads the failed
    // request from its log line and stops it at once.
    let project = opencode_project(Script::new([Turn::Error(ErrorAnswer::openai_quota())]));
    let started = Instant::now();
    let slice = project.run_once_to("usage_limited");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "stopped at the first refusal, not after the retry: {slice}"
    );
    assert_eq!(slice["todo_state"], "released", "{slice}");
    assert!(slice["hold_until"].is_string(), "{slice}");
    assert_eq!(project.model_turns(), 1, "{slice}");
    let next = project.json(&["run", "--once", "--json"]);
    assert_eq!(next["decision"], "wait", "{next}");
    assert_eq!(
        project.model_turns(),
        1,
        "the hold kept OpenCode from asking again"
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_halts_on_a_login_gate_when_opencode_s_key_is_refused() {
    let project = opencode_project(Script::new([
        Turn::Error(ErrorAnswer::openai_invalid_key()),
    ]));
    let slice = project.run_once_to("auth_failed");
    assert_eq!(slice["todo_state"], "released", "{slice}");
    let gates = project.json(&["gate", "list", "--json"]);
    let question = gates["gates"][0]["question"].as_str().unwrap_or_default();
    assert!(question.contains("opencode auth login"), "{gates}");
    assert_eq!(project.model_turns(), 1, "a refused key is not retried");
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_the_conformance_kit_classifies_claude_code_as_it_should() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let profile = dir.path().join("claude.toml");
    std::fs::write(&profile, test_profile("claude-code", "anthropic-test")).expect("written");
    let loopx = std::env::var_os(LOOPX_VAR).expect("the outer test passes the loopx binary");
    let bin = cli("claude").parent().expect("a bin dir").to_path_buf();
    let mut command = offline_command(
        Path::new(env!("CARGO_BIN_EXE_loopx-model-server")),
        dir.path(),
        dir.path(),
        Some(&bin),
    );
    command
        .args(["conform", "--api", "anthropic", "--json", "--profile"])
        .arg(&profile)
        .arg("--loopx")
        .arg(&loopx)
        .args(["--env", "ANTHROPIC_BASE_URL={url}"])
        .args(["--env", "ANTHROPIC_API_KEY=test-key"]);
    let output = wait_with_deadline(command, RUN_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let verdicts: Value = serde_json::from_str(&stdout).expect("JSON verdicts");
    let got: Vec<(&str, &str, bool)> = verdicts
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| {
            (
                v["case"].as_str().unwrap_or_default(),
                v["got"].as_str().unwrap_or_default(),
                v["passed"] == true,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("report", "completed", true),
            ("quota", "usage_limited", true),
            ("auth", "auth_failed", true)
        ],
        "{stdout}"
    );
}

#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_loopx_adapter_test_passes_for_each_cli() {
    for (adapter, version) in [
        ("claude-code", "2.1.197"),
        ("codex", "0.171.0"),
        ("qwen", "0.15.10"),
        ("opencode", "1.18.33"),
    ] {
        let project = Project::new(
            Script::new([Turn::text("unused")]),
            &test_profile(adapter, "test"),
        );
        let out = project.ok(&["adapter", "test", "agent", "--color", "never"]);
        assert!(
            out.contains(&format!("answered {version}")),
            "{adapter}: {out}"
        );
        assert!(!out.lines().any(|l| l.starts_with("FAIL")), "{out}");
        assert_eq!(project.model_turns(), 0, "a health check asks no model");
    }
}

/// `docs/try-offline.md`'s agents' part, run as printed in a shell: the scripts written, two
/// `loopx-model-server`s started in the background, Claude Code and Codex pointed at them, and
/// the README's quick start to a finished goal. Its fixed ports are this namespace's own.
#[test]
#[ignore = "run inside `unshare -rn` by real_clis_in_netns"]
fn netns_the_agents_part_of_try_offline_md_runs_as_printed() {
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/try-offline.md");
    let page = std::fs::read_to_string(page).expect("docs/try-offline.md");
    let commands = loopx_model_server::walkthrough::section_commands(
        &page,
        "Claude Code and Codex against a scripted model",
    );
    // A failing command stops the script, and the servers in the background go too (else they
    // would hold its output open).
    let script = format!("set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{commands}");
    let (work, home) = (tempfile::tempdir(), tempfile::tempdir());
    let (work, home) = (work.expect("a temp dir"), home.expect("a temp HOME"));
    // As installed: loopx, the model server and the CLIs on PATH.
    let loopx = PathBuf::from(std::env::var_os(LOOPX_VAR).expect("the outer test's loopx"));
    let server = Path::new(env!("CARGO_BIN_EXE_loopx-model-server"));
    let dirs = [&loopx, server].map(|p| p.parent().expect("a bin dir").to_path_buf());
    let clis = cli("claude").parent().expect("a bin dir").to_path_buf();
    let mut command = offline_command(Path::new("bash"), work.path(), home.path(), Some(&clis));
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        dirs.into_iter()
            .chain([clis.clone()])
            .chain(std::env::split_paths(&inherited)),
    )
    .expect("PATH entries join");
    command.env("PATH", &path).args(["-c", &script]);
    let output = wait_with_deadline(command, Duration::from_secs(300));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}\n{stdout}\n{stderr}",
        output.status
    );
    let project = work.path().join("try-agents");
    let hello = std::fs::read_to_string(project.join("hello.txt")).expect("hello.txt");
    assert_eq!(hello, "hi\n", "{stdout}");
    let mut list = offline_command(&loopx, &project, home.path(), None);
    list.args(["todo", "list", "--all", "--json"]);
    let list = wait_with_deadline(list, RUN_TIMEOUT);
    let todos: Value = serde_json::from_slice(&list.stdout).expect("todo list is JSON");
    let finished: Vec<(&str, &str, &str)> = todos["todos"]
        .as_array()
        .expect("todos")
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap_or_default(),
                t["state"].as_str().unwrap_or_default(),
                t["finished_under"]["agent"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        finished,
        [("t1", "done", "exec"), ("t2", "done", "rev")],
        "{todos:#}\n{stdout}"
    );
}
