//! A git run while another worktree is half made is run again (`Git::run`): the git here fails
//! the way git 2.x does then, once, on its first run, and the second run is the real git's.
//!
//! The crate finds git on `PATH` once per process, so the test runs its own binary again
//! with that git first on `PATH`, and the check happens there.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use loopx_git::Git;

/// Set in the run of this binary that checks, to the repository.
const INNER: &str = "LOOPX_GIT_TEST_REPO";

/// A `git` that dies as a git meeting a half-made worktree does, the first time it runs (it
/// leaves `died` behind), and is the real git after.
fn flaky_git(bin: &Path, real: &str) {
    let script = format!(
        "#!/bin/sh\n\
         if [ ! -e '{died}' ]; then\n\
           : > '{died}'\n\
           echo 'fatal: failed to read .git/worktrees/t2/commondir: Success' >&2\n\
           exit 128\n\
         fi\n\
         exec '{real}' \"$@\"\n",
        died = bin.join("died").display(),
    );
    let path = bin.join("git");
    std::fs::write(&path, script).expect("write the git");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn a_git_that_met_a_half_made_worktree_is_run_again() {
    if let Some(repo) = std::env::var_os(INNER) {
        let dir = repo.to_string_lossy();
        let out = Git::default()
            .stdout(&dir, &["rev-parse", "--is-inside-work-tree"])
            .expect("run again, and passed");
        assert_eq!(String::from_utf8_lossy(&out).trim(), "true");
        return;
    }
    let path = std::env::var_os("PATH").expect("PATH");
    let real = std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .expect("git on PATH");
    let bin = tempfile::tempdir().expect("temp dir");
    flaky_git(bin.path(), &real.to_string_lossy());
    let repo = tempfile::tempdir().expect("temp dir");
    let init = std::process::Command::new(&real)
        .arg("init")
        .arg("-q")
        .arg(repo.path())
        .status()
        .expect("git init");
    assert!(init.success());
    let path = std::env::join_paths(
        std::iter::once(bin.path().to_path_buf()).chain(std::env::split_paths(&path)),
    )
    .expect("PATH");
    let inner = std::process::Command::new(std::env::current_exe().expect("this test"))
        .args([
            "--exact",
            "a_git_that_met_a_half_made_worktree_is_run_again",
            "--nocapture",
        ])
        .env("PATH", path)
        .env(INNER, repo.path())
        .output()
        .expect("run the check");
    assert!(
        inner.status.success(),
        "{}{}",
        String::from_utf8_lossy(&inner.stdout),
        String::from_utf8_lossy(&inner.stderr)
    );
    assert!(bin.path().join("died").exists(), "the first run failed");
}
