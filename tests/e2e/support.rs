//! Running the binary and making its output stable for snapshots.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub const LOOPX: &str = env!("CARGO_BIN_EXE_loopx");

/// A temporary project directory and a way to run `loopx` in it.
#[derive(Debug)]
pub struct Loopx {
    pub dir: tempfile::TempDir,
}

/// What one run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Run {
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
        }
    }

    /// A project with `loopx init` done.
    pub fn new() -> Loopx {
        let loopx = Loopx::empty();
        loopx.ok(&["init"]);
        loopx
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
            .env("USER", "tester")
            .env("NO_COLOR", "1");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::from(self.command(args).output().expect("loopx runs"))
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
