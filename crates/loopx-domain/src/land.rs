//! Landing a worktree goal's todo when its agent reported it done (`worktree::land`), with the
//! project's `[land] check` run contained like a slice: the code it runs is the agent's.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use loopx_kernel::model::{Goal, Todo};
use loopx_kernel::store::FinishTodo;
use loopx_kernel::{Op, Project, TodoId};
use loopx_pty::{Sandbox, SandboxSupport};

use loopx_git::worktree::{CheckRun, Landing, land};
use loopx_pty::{DEVICES, Room, exec_helper, git_dir, hidden};

/// At most this much of a check's output is kept (its end: where test runners summarise).
const CHECK_OUTPUT: usize = 64 * 1024;

/// Lands `todo`'s branch on `goal`'s integration branch, checked by `[land] check` if the
/// project has one (run through `loopx_exe __exec`, contained like a slice).
/// `held` says whether the todo is still its lander's, right before the goal's branch moves.
pub fn land_todo(
    project: &Project,
    loopx_exe: &Path,
    goal: &Goal,
    todo: TodoId,
    title: &str,
    held: &dyn Fn() -> bool,
) -> Landing {
    let root = project.root();
    let config =
        match loopx_adapters::load_project_config(&root.join(loopx_kernel::project::STATE_DIR)) {
            Ok(config) => config,
            Err(e) => return Landing::Failed(format!("the land check could not be read: {e}")),
        };
    let run = |dir: &Path, prefix: &str, command: &str, timeout: Duration| {
        run_check(root, loopx_exe, dir, prefix, command, timeout)
    };
    let check = config.land_check.as_ref().map(|c| CheckRun {
        command: &c.command,
        timeout: c.timeout,
        run: &run,
    });
    land(project, goal.id, todo, title, check.as_ref(), held)
}

/// Lands a todo whose out-of-scope changes a person kept (`keep` on a rollback gate) after its
/// slice reported it done: the landing any done todo gets, `[land] check` and all. Returns the
/// landing in a sentence and what to record with the answer: its `land` evidence, and the todo
/// done when it landed. When it does not land (a conflict, a failed check) the todo stays open
/// and its next slice goes on. Git moves before the answer is recorded: should recording fail,
/// answering again finds the branch landed already (nothing new to land) and finishes the todo.
pub fn land_kept(project: &Project, exe: &Path, goal: &Goal, todo: &Todo) -> (String, Vec<Op>) {
    use loopx_git::worktree::integration_branch;
    use loopx_kernel::model::{EvidenceKind, TodoState};
    let landing = land_todo(project, exe, goal, todo.id, &todo.title, &|| true);
    if !matches!(landing, Landing::Landed { .. } | Landing::Empty) {
        tracing::warn!(todo = %todo.id, ?landing, "a todo a person kept did not land");
    }
    let (said, detail, landed) = said_of(&landing, todo.id, &integration_branch(goal.id));
    let mut ops = vec![Op::EvidenceAdd(loopx_kernel::store::NewEvidence {
        kind: EvidenceKind::Land,
        summary: loopx_kernel::limits::bounded(&said, loopx_kernel::limits::SUMMARY),
        detail: loopx_kernel::limits::bounded(&detail, loopx_kernel::limits::DETAIL),
        files: vec![],
        todo: Some(todo.id),
        slice: None,
        epoch: None,
        work: None,
        metric: None,
    })];
    if landed {
        ops.push(Op::TodoFinish(FinishTodo {
            todo: todo.id,
            to: TodoState::Done,
            agent: None,
            epoch: None,
        }));
    }
    (said, ops)
}

/// What a kept todo's landing says (its evidence's summary and detail), and whether the todo
/// landed.
fn said_of(landing: &Landing, todo: TodoId, into: &str) -> (String, String, bool) {
    use loopx_git::worktree::short;
    match landing {
        Landing::Landed { commit, files, .. } => (
            format!(
                "{todo} landed on {into} as {}, kept by a person",
                short(commit)
            ),
            files.join("\n"),
            true,
        ),
        Landing::Empty => (
            format!("{todo} had nothing new to land: its branch is on {into} already"),
            String::new(),
            true,
        ),
        Landing::Conflict { files, .. } => (
            format!(
                "{todo} was kept, but its branch conflicts with {into} in {}; its next slice goes on",
                files.join(", ")
            ),
            String::new(),
            false,
        ),
        Landing::CheckFailed { how, output } => (
            format!("{todo} was kept, but did not land: the land check {how}"),
            output.clone(),
            false,
        ),
        Landing::Failed(why) => (
            format!("{todo} was kept, but could not land on {into}"),
            why.clone(),
            false,
        ),
    }
}

/// Runs `sh -c command` in the checkout `dir` (at the project root's place in it, `prefix`)
/// for at most `timeout`, in the sandbox a slice gets (the whole checkout visible, writes only
/// there and in a temp dir of its own, `.loopx/` hidden); its exit code (`None`: stopped at
/// the deadline) and the end of its output.
fn run_check(
    root: &Path,
    loopx_exe: &Path,
    dir: &Path,
    prefix: &str,
    command: &str,
    timeout: Duration,
) -> Result<(Option<i32>, String), String> {
    let marker = format!("land-{}", std::process::id());
    let room = Room::create(&marker)
        .map_err(|e| format!("cannot create the check's private directory: {e}"))?;
    let sandbox = check_sandbox(root, loopx_exe, dir, &room);
    let mut cmd = Command::new(loopx_exe);
    cmd.arg("__exec")
        .args(sandbox.to_args())
        .arg("--")
        .args(["/bin/sh", "-c", command])
        .current_dir(dir.join(prefix))
        .env_clear()
        .envs(
            [
                "PATH",
                "HOME",
                "LANG",
                "LC_ALL",
                "USER",
                "CARGO_HOME",
                "RUSTUP_HOME",
            ]
            .iter()
            .filter_map(|k| std::env::var_os(k).map(|v| (*k, v))),
        )
        .env("TMPDIR", OsString::from(room.tmp()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = loopx_pty::run_bounded(cmd, None, timeout)
        .map_err(|e| format!("cannot run the land check: {e}"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let mut start = text.len().saturating_sub(CHECK_OUTPUT);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let code = out
        .status
        .map(|s| s.code().unwrap_or(128 + s.signal_or_zero()));
    Ok((code, text[start..].to_owned()))
}

/// The land check's sandbox: it writes only the worktree and its private room, and cannot
/// change the repository's config or hooks.
fn check_sandbox(root: &Path, loopx_exe: &Path, dir: &Path, room: &Room) -> Sandbox {
    let support = SandboxSupport::probe(&exec_helper(loopx_exe));
    let worktree = dir.to_path_buf();
    let mut writable = vec![worktree.clone(), room.tmp()];
    writable.extend(DEVICES.iter().map(std::path::PathBuf::from));
    Sandbox {
        namespaces: support.namespaces,
        hide: hidden(root),
        keep: vec![worktree],
        read_only: git_dir(root)
            .map(|git| vec![git.join("config"), git.join("hooks")])
            .unwrap_or_default(),
        private_room: Some(room.dir().to_path_buf()),
        landlock: support.landlock_abi.is_some(),
        seatbelt: support.seatbelt,
        writable,
        cgroup: None,
        processes: Some(loopx_adapters::DEFAULT_PROCESSES),
    }
}

/// The signal number of a status that ended by one, else 0.
trait SignalOrZero {
    fn signal_or_zero(&self) -> i32;
}

impl SignalOrZero for std::process::ExitStatus {
    fn signal_or_zero(&self) -> i32 {
        std::os::unix::process::ExitStatusExt::signal(self).unwrap_or(0)
    }
}
