//! Running the binary and making its output stable for snapshots.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

pub use loopx_testkit::{committed_repo, git, wait_for, wait_for_some};
use serde_json::Value;

/// How long a test waits for what should happen soon (a file, a pid, a state), on a loaded
/// machine.
pub const SOON: Duration = Duration::from_secs(30);

/// The binary under test.
pub const LOOPX: &str = env!("CARGO_BIN_EXE_loopx");

/// A temporary project directory and a way to run `loopx` in it.
#[derive(Debug)]
pub struct Loopx {
    pub dir: tempfile::TempDir,
    /// The person's state directory (`XDG_STATE_HOME`) for this test's commands: its
    /// `loopx init` registers the project there, never in the real home's list. Shared by
    /// the projects of one person ([`Loopx::beside`]).
    pub state: std::sync::Arc<tempfile::TempDir>,
}

/// What one run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

impl Loopx {
    /// An empty directory (no project yet).
    pub fn empty() -> Loopx {
        Loopx {
            dir: tempfile::tempdir().expect("temp dir"),
            state: std::sync::Arc::new(tempfile::tempdir().expect("temp dir")),
        }
    }

    /// Another project of the same person: its commands share `other`'s state directory
    /// (their list of projects, their account book).
    pub fn beside(other: &Loopx) -> Loopx {
        Loopx {
            dir: tempfile::tempdir().expect("temp dir"),
            state: other.state.clone(),
        }
        .initialised()
    }

    /// A project with `loopx init` done. With `LOOPX_TEST_POSTGRES` set (a PostgreSQL URL;
    /// `.ci/run` starts a server), its store is a fresh schema of that database, made with
    /// `loopx init --store` as a user would: the same tests then run on the PostgreSQL backend.
    pub fn new() -> Loopx {
        Loopx::empty().initialised()
    }

    /// This directory with `loopx init` done (on the test database, if there is one).
    fn initialised(self) -> Loopx {
        match test_database() {
            Some(url) => self.ok(&["init", "--store", &url]),
            None => self.ok(&["init"]),
        };
        self
    }

    /// Lets the project's agents end its goal (`[goal] close = "agents"`), for a test of the
    /// loop's own course: by default an agent's "the goal is met" asks a person.
    pub fn agents_close_goals(&self) {
        let path = self.path().join(".loopx/loopx.toml");
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, format!("{old}\n[goal]\nclose = \"agents\"\n"))
            .expect("write loopx.toml");
    }

    /// Writes `loopx.toml`, keeping the `[store]` the test database put there and a `[goal]`
    /// a test set ([`Loopx::agents_close_goals`]).
    pub fn write_config(&self, text: impl AsRef<str>) {
        let path = self.path().join(".loopx/loopx.toml");
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        let kept: String = ["[goal]", "[store]"]
            .iter()
            .filter_map(|name| section(&old, name))
            .collect();
        std::fs::write(&path, format!("{}\n{kept}", text.as_ref())).expect("write loopx.toml");
    }

    /// A project with a goal, two agents and three todos.
    pub fn with_work() -> Loopx {
        let loopx = Loopx::new();
        loopx.ok(&[
            "goal",
            "start",
            "Ship the v2 HTTP client",
            "--scope",
            "src/**",
        ]);
        loopx.ok(&[
            "agent",
            "add",
            "exec",
            "--profile",
            "executor",
            "--capability",
            "rust",
        ]);
        loopx.ok(&[
            "agent",
            "add",
            "rev",
            "--profile",
            "reviewer",
            "--role",
            "reviewer",
        ]);
        loopx.ok(&[
            "todo",
            "add",
            "Add retry to the HTTP client",
            "--priority",
            "5",
            "--needs",
            "rust",
        ]);
        loopx.ok(&["todo", "add", "Document the retry policy", "--after", "t1"]);
        loopx.ok(&[
            "todo",
            "add",
            "Review the retry change",
            "--role",
            "reviewer",
            "--priority",
            "2",
        ]);
        loopx
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn store_path(&self) -> PathBuf {
        self.path().join(".loopx/state.redb")
    }

    /// A command in the project directory with a clean, predictable environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(LOOPX);
        cmd.args(args)
            .current_dir(self.path())
            .env_remove("LOOPX_PROJECT")
            .env_remove("LOOPX_SLICE")
            .env_remove("LOOPX_AGENT")
            .env_remove("LOOPX_EPOCH")
            .env_remove("LOOPX_TODO")
            .env_remove("LOOPX_REPORT_SOCKET")
            .env_remove("LOOPX_LOG")
            .env("USER", "tester")
            .env("XDG_STATE_HOME", self.state.path())
            .env("NO_COLOR", "1");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("loopx runs"))
    }

    /// Starts `loopx ARGS` and kills it (SIGKILL) `after` its start, for the tests that a kill
    /// at any moment loses nothing. The one fixed wait of its kind, on purpose: the moment of
    /// the kill is what such a test varies, and a kill that waited for some state would land
    /// only at that state.
    pub fn killed_after(&self, args: &[&str], after: Duration) {
        let mut child = self
            .command(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("loopx starts");
        std::thread::sleep(after);
        let _ = child.kill();
        let _ = child.wait();
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Run::from(cmd.output().expect("loopx runs"))
    }

    /// Runs and insists on success.
    pub fn ok(&self, args: &[&str]) -> Run {
        let run = self.run(args);
        assert_eq!(
            run.code, 0,
            "loopx {args:?} failed: {}{}",
            run.stdout, run.stderr
        );
        run
    }

    /// `loopx run --once --json` with `env` set, insisting on success: one decision, and the
    /// slice it ran if it ran one.
    pub fn run_once(&self, env: &[(&str, &str)]) -> Run {
        let run = self.run_env(&["run", "--once", "--json"], env);
        assert_eq!(
            run.code, 0,
            "loopx run --once failed: {}{}",
            run.stdout, run.stderr
        );
        run
    }

    /// Replaces what changes from run to run (paths, times) with stable markers.
    pub fn stable(&self, text: &str) -> String {
        let path = self.path().display().to_string();
        let text = text.replace(&path, "[tmp]");
        let rfc3339 =
            regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z").expect("regex");
        let text = rfc3339.replace_all(&text, "[time]");
        let relative =
            regex::Regex::new(r"\b(in |ends in )?\d+[smhd]( \d+[smhd])?( ago)?\b|\bnow\b")
                .expect("regex");
        relative.replace_all(&text, "[when]").into_owned()
    }
}

/// The real git: the first on this process's `PATH`.
pub fn real_git() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .expect("git on PATH")
}

/// Runs `cmd` (its output captured) until it exits or `within` passes; `None` when it did not
/// finish in time (it is killed).
pub fn finished_within(mut cmd: Command, within: Duration) -> Option<Run> {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("loopx starts");
    let exited = loopx_testkit::poll(within, || child.try_wait().expect("wait").map(|_| ()));
    if exited.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("output");
    exited.map(|()| Run::from(output))
}

/// A directory holding a `git` that hangs (30 s), and a `PATH` with it first.
pub fn hanging_git() -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().expect("bin dir");
    let git = bin.path().join("git");
    std::fs::write(&git, "#!/bin/sh\nsleep 30\n").expect("fake git");
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (bin, path)
}

/// A project with a goal and the given demo agents.
pub fn demo_project(agents: &[&str]) -> Loopx {
    let loopx = Loopx::new();
    loopx.ok(&["goal", "start", "Write the demo notes"]);
    for agent in agents {
        loopx.ok(&["agent", "add", agent, "--profile", "demo"]);
    }
    loopx
}

/// Adds a profile running `script` (a shell script) through the generic adapter, and an agent
/// `name` using it.
pub fn script_agent(loopx: &Loopx, name: &str, script: &str, limits: &str) {
    cli_stand_in(
        loopx,
        name,
        "generic",
        script,
        &format!("\n[limits]\n{limits}"),
    );
}

/// Adds a profile on `adapter` whose program is the shell script `script` (standing in for the
/// CLI), with `profile_rest` appended to the profile, and an agent `name` using it.
pub fn cli_stand_in(loopx: &Loopx, name: &str, adapter: &str, script: &str, profile_rest: &str) {
    let path = loopx.path().join(format!("{name}.sh"));
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("script");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&path, mode).expect("chmod");
    let profile = format!(
        "adapter = \"{adapter}\"\nprogram = \"{}\"\npermission = \"workspace-write\"\n{profile_rest}\n",
        path.display()
    );
    std::fs::write(
        loopx.path().join(format!(".loopx/profiles/{name}.toml")),
        profile,
    )
    .expect("profile");
    loopx.ok(&["agent", "add", name, "--profile", name]);
}

/// A `loopx run --json` in the background, its events read as they come.
pub struct Background {
    pub child: Child,
    events: Receiver<Value>,
    pub seen: Vec<Value>,
}

impl Background {
    pub fn start(loopx: &Loopx, args: &[&str]) -> Background {
        Background::start_env(loopx, args, &[])
    }

    pub fn start_env(loopx: &Loopx, args: &[&str], env: &[(&str, &str)]) -> Background {
        let mut cmd = loopx.command(&[&["run", "--json"], args].concat());
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("loopx run starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let event = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
                if tx.send(event).is_err() {
                    return;
                }
            }
        });
        Background {
            child,
            events,
            seen: Vec::new(),
        }
    }

    /// Waits for the first event (not seen before) that `want` accepts.
    pub fn wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => {
                    self.seen.push(event.clone());
                    if want(&event) {
                        return event;
                    }
                }
                Err(_) => panic!("no {what} within a minute; events: {:#?}", self.seen),
            }
        }
    }

    /// Like [`Background::wait_for`], accepting an event already seen.
    pub fn saw_or_wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        match self.seen.iter().find(|e| want(e)) {
            Some(event) => event.clone(),
            None => self.wait_for(what, want),
        }
    }

    /// Waits for the process to exit; every remaining event is in `seen`.
    pub fn finish(mut self) -> (i32, Vec<Value>) {
        let child = &mut self.child;
        let exited =
            loopx_testkit::poll(Duration::from_secs(90), || child.try_wait().expect("wait"));
        let Some(status) = exited else {
            let _ = self.child.kill();
            panic!("loopx run did not exit; events: {:#?}", self.seen);
        };
        let code = status.code().unwrap_or(-1);
        self.seen.extend(self.events.try_iter());
        // The reader may still be draining the pipe.
        while let Ok(event) = self.events.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(event);
        }
        (code, self.seen)
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
        nix::sys::signal::kill(pid, signal).expect("signal");
    }
}

pub fn event<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

pub fn todo_state(loopx: &Loopx, id: &str) -> String {
    let todo = loopx.ok(&["todo", "show", id, "--json"]).json();
    todo["todo"]["state"].as_str().expect("a state").to_owned()
}

pub fn decision(loopx: &Loopx, agent: &str) -> String {
    let d = loopx
        .ok(&["quota", "should-run", "--agent", agent, "--json"])
        .json();
    d["decision"].as_str().expect("a decision").to_owned()
}

pub fn alive(pid: i32) -> bool {
    // A zombie is not alive: its stat says `Z`.
    state(&format!("/proc/{pid}/stat")).is_some_and(|state| state != "Z" && state != "X")
}

/// Whether every thread of process `pid` is asleep (`S`: blocked, waiting for something to
/// happen) at a look; `false` if it has gone.
pub fn asleep(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().all(|task| {
        state(&task.path().join("stat").to_string_lossy()).is_some_and(|state| state == "S")
    })
}

/// The state letter in a `/proc/…/stat` file (after the command's closing parenthesis).
fn state(stat: &str) -> Option<String> {
    let text = std::fs::read_to_string(stat).ok()?;
    let after = text.rsplit(')').next()?;
    after.split_whitespace().next().map(str::to_owned)
}

/// An agent in its slice's PID namespace writes `$$` as that namespace numbers it; this is
/// the same process as this test's namespace numbers it: the process whose `NSpid` ends with
/// `inner` and that runs for `project` (its `LOOPX_PROJECT`).
fn outer_pid(inner: i32, project: &std::path::Path) -> Option<i32> {
    project_processes(project).into_iter().find_map(|outer| {
        let status = std::fs::read_to_string(format!("/proc/{outer}/status")).ok()?;
        let nspid: Vec<i32> = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))?
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        (nspid.len() >= 2 && nspid.last() == Some(&inner)).then_some(outer)
    })
}

/// Live processes (not zombies) started for `project`'s slices: their environment holds
/// `LOOPX_PROJECT=<project>`, wherever they moved (another session, another process group).
pub fn project_processes(project: &std::path::Path) -> Vec<i32> {
    let wanted = format!("LOOPX_PROJECT={}", project.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
            if state == "Z" {
                return None;
            }
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            environ
                .split(|b| *b == 0)
                .any(|var| var == wanted.as_bytes())
                .then_some(pid)
        })
        .collect()
}

/// The processes whose command line holds `needle`.
pub fn processes_with(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(needle))
        .collect()
}

pub fn read_pid(path: &std::path::Path) -> i32 {
    let pid = wait_for_some(&format!("a pid in {}", path.display()), SOON, || {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    });
    let project = path.parent().expect("a pid file in the project");
    outer_pid(pid, project).unwrap_or(pid)
}

/// Waits (up to 30 s) until `path` exists.
pub fn wait_file(path: &std::path::Path) {
    wait_for(&format!("{} to appear", path.display()), SOON, || {
        path.exists()
    });
}

/// What a person does after `loopx run` asked about the project's notification command: the
/// approval gate is opened as `loopx run` opens it, then answered `approve`.
pub fn approve_notifications(loopx: &Loopx) {
    let project = loopx_kernel::Project::at(loopx.path()).expect("the project");
    let mut notifier = loopx_supervisor::Notifier::load(&project)
        .expect("loopx.toml loads")
        .expect("a notification command");
    let gate = notifier
        .seek_approval(loopx_kernel::Timestamp::now())
        .expect("the store opens")
        .expect("not approved yet: a gate asks");
    loopx.ok(&["gate", "answer", &gate.id.to_string(), "approve"]);
}

/// A fresh schema of the database `LOOPX_TEST_POSTGRES` names, as a store URL.
pub fn test_database() -> Option<String> {
    let base = std::env::var("LOOPX_TEST_POSTGRES").ok()?;
    let schema = format!("e{:016x}", fastrand::u64(..));
    let mut client = postgres::Client::connect(&base, postgres::NoTls).expect("test database");
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("create schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{sep}options=-csearch_path%3D{schema}"))
}

/// The section `name` (`[store]`) of a TOML text, to the next section, if it has one.
fn section(text: &str, name: &str) -> Option<String> {
    let start = text.find(name)?;
    let rest = &text[start + name.len()..];
    let end = rest.find("\n[").map_or(rest.len(), |i| i + 1);
    Some(format!("{name}{}\n", &rest[..end]))
}

/// Waits for spends started at once (`loopx quota spend` processes, stderr piped): how many
/// were admitted, insisting every other one was refused with the conflict code and a clear
/// refusal, not a misleading error.
pub fn count_admitted(children: Vec<std::process::Child>) -> usize {
    let mut admitted = 0;
    for child in children {
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => admitted += 1,
            Some(5) => assert!(
                stderr.contains("quota says wait"),
                "a clear refusal, not a misleading error: {stderr}"
            ),
            other => panic!("exit {other:?}: {stderr}"),
        }
    }
    admitted
}

/// A terminal a test types into: a tmux server of its own, one window of `cols`×`rows`
/// running `command`.
pub struct Terminal {
    socket: String,
}

impl Terminal {
    pub fn start(command: &str, cols: u16, rows: u16) -> Terminal {
        let socket = format!(
            "loopx-e2e-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        )
        .replace(['(', ')'], "");
        let terminal = Terminal { socket };
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let started = terminal
            .tmux(&["new-session", "-d", "-x", &cols, "-y", &rows, command])
            .expect("tmux runs: terminal views are tested in a real terminal (scripts/install-test-tools.sh installs tmux)");
        assert!(started.status.success(), "{started:?}");
        terminal
    }

    pub fn tmux(&self, args: &[&str]) -> std::io::Result<std::process::Output> {
        std::process::Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
    }

    /// The screen as text (`capture-pane -p`).
    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p"]).expect("capture");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `keys` (tmux key names).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        let sent = self.tmux(&args).expect("send-keys");
        assert!(sent.status.success(), "{sent:?}");
    }

    /// Waits (20 s at most) until the screen shows what `want` accepts; that screen.
    pub fn wait_for(&self, what: &str, want: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        let seen = loopx_testkit::poll(Duration::from_secs(20), || {
            last = self.screen();
            want(&last).then(|| last.clone())
        });
        seen.unwrap_or_else(|| panic!("the screen did not show {what} within 20 s:\n{last}"))
    }

    /// Waits until the screen shows `text`, then types `keys` (tmux key names).
    pub fn answer(&self, text: &str, keys: &[&str]) {
        self.wait_for(text, |s| s.contains(text));
        self.keys(keys);
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}
