//! What a worktree slice's commit takes into the repository, and a slice that fills its disk
//! (issue 46): loopx's own commit of the agent's work is where both met the repository.

use std::path::Path;

use crate::support::{Loopx, committed_repo, git, script_agent};

/// A committed git project with a goal worked in worktrees, and agent `exec` running `script`
/// on t1.
fn project(loopx: &Loopx, script: &str) {
    let root = loopx.path();
    committed_repo(root, &[("a.txt", "a\n")]);
    loopx.ok(&["goal", "start", "Tidy the files"]);
    script_agent(
        loopx,
        "exec",
        &format!("cat > /dev/null\n{script}"),
        "max_time = \"2m\"\nidle_timeout = \"1m\"",
    );
    loopx.ok(&["todo", "add", "Tidy the files"]);
}

/// Bytes under `dir`, as allocated (a sparse file counts what it holds).
fn disk_usage(dir: &Path) -> u64 {
    let out = std::process::Command::new("du")
        .args(["-s", "-B1"])
        .arg(dir)
        .output()
        .expect("du runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a size")
}

/// 20,000 files and a 3 GiB sparse file grew `.git` from 208 KB to 191 MB: loopx's commit
/// took all of it (and read 3 GiB). It now takes at most 10,000 files of at most 10 MiB each,
/// sizes read from metadata, and the slice's reason, its evidence and the handoff say what was
/// left out.
#[test]
fn a_slice_s_commit_takes_a_bounded_part_of_what_it_left() {
    let loopx = Loopx::new();
    project(
        &loopx,
        "mkdir junk && (cd junk && seq -w 1 20000 | xargs touch)\n\
         truncate -s 3G big.img\n",
    );
    let before = disk_usage(&loopx.path().join(".git"));
    let out = loopx.ok(&["run", "--once", "--json"]).json();
    let grown = disk_usage(&loopx.path().join(".git")) - before;
    assert!(grown < 20 << 20, ".git grew by {grown} bytes: {out}");
    let files = git(
        loopx.path(),
        &["ls-tree", "-r", "--name-only", "loopx/g1-t1"],
    );
    assert_eq!(
        files.lines().filter(|f| f.starts_with("junk/")).count(),
        10_000
    );
    assert!(!files.contains("big.img"), "the sparse file was committed");
    let reason = out["slice"]["reason"].as_str().unwrap_or_default();
    for said in [
        "left 10001 file(s) (3 GiB) out of its commit",
        "1 larger than 10 MiB (big.img, 3 GiB)",
        "10000 past the first 10000 files (junk/10001, 0 bytes;",
    ] {
        assert!(reason.contains(said), "{said:?} in {reason}");
    }
    let evidence = loopx.ok(&["evidence", "list", "--json"]).stdout;
    assert!(
        evidence.contains("slice s1 left 10001 file(s)"),
        "{evidence}"
    );
    let todo = loopx.ok(&["todo", "show", "t1"]).stdout;
    assert!(todo.contains("big.img"), "the handoff names it: {todo}");
    // What was left out stays where the agent left it.
    let tree = loopx.path().join(".loopx/worktrees/g1/t1");
    assert!(tree.join("big.img").exists() && tree.join("junk/20000").exists());
}

/// A tmpfs mounted over a directory, unmounted when dropped (before the directory goes).
#[cfg(target_os = "linux")]
struct Tmpfs(std::path::PathBuf);

#[cfg(target_os = "linux")]
impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH);
    }
}

/// An empty project directory on a tmpfs of `inodes` inodes, or `None` (said why) where this
/// user may not mount one.
#[cfg(target_os = "linux")]
fn on_tmpfs(inodes: u32) -> Option<(Loopx, Tmpfs)> {
    if !nix::unistd::getuid().is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root; `.ci/run` runs this as root");
        return None;
    }
    let loopx = Loopx::empty();
    nix::mount::mount(
        Some("tmpfs"),
        loopx.path(),
        Some("tmpfs"),
        nix::mount::MsFlags::empty(),
        Some(format!("size=64m,nr_inodes={inodes}").as_str()),
    )
    .expect("mount a tmpfs");
    let mounted = Tmpfs(loopx.path().to_path_buf());
    match crate::support::test_database() {
        Some(url) => loopx.ok(&["init", "--store", &url]),
        None => loopx.ok(&["init"]),
    };
    Some((loopx, mounted))
}

/// An agent that used every inode of its file system made loopx's commit of its work fail:
/// the slice was recorded `completed`, only a `WARN` line said anything, and `loopx run
/// --once` exited 0. The slice now fails with the file system named and what to do, the run
/// exits 4, and once a person freed some inodes the next slice runs and commits.
#[cfg(target_os = "linux")]
#[test]
fn a_slice_that_used_every_inode_fails_and_the_run_says_what_to_do() {
    let Some((loopx, _tmpfs)) = on_tmpfs(600) else {
        return;
    };
    project(
        &loopx,
        "case \"$LOOPX_SLICE\" in\n\
           s1.*) mkdir junk; i=0; while touch junk/f$i 2>/dev/null; do i=$((i+1)); done ;;\n\
           *) echo fixed > fixed.txt ;;\n\
         esac\n",
    );
    let run = loopx.run(&["run", "--once", "--json"]);
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    let tree = loopx.path().join(".loopx/worktrees/g1/t1");
    let named = format!("the file system holding {}", tree.display());
    let error = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {}", run.stderr));
    assert!(error.contains("slice s1 failed"), "{error}");
    assert!(error.contains(&named), "{error}");
    assert!(
        error.contains("has no free inodes (600 of 600 used)"),
        "{error}"
    );
    assert!(error.contains("free some there"), "{error}");
    let slice = &run.json()["slice"];
    assert_eq!(slice["outcome"], "failed", "{slice}");
    assert_eq!(slice["todo_state"], "released", "{slice}");
    assert!(
        slice["disk_full"]
            .as_str()
            .is_some_and(|d| d.contains(&named)),
        "{slice}"
    );
    // A person frees the inodes; the next slice runs and its work is committed.
    std::fs::remove_dir_all(tree.join("junk")).expect("free the inodes");
    let out = loopx.ok(&["run", "--once", "--json"]).json();
    assert_eq!(out["slice"]["disk_full"], serde_json::Value::Null, "{out}");
    let files = git(
        loopx.path(),
        &["ls-tree", "-r", "--name-only", "loopx/g1-t1"],
    );
    assert!(files.contains("fixed.txt"), "{files}");
}
