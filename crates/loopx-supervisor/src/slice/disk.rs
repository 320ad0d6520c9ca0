//! A full disk at a slice's end, in words a person can act on.
//!
//! An agent that used every inode of its file system (50,000 empty files) made loopx's commit
//! of its worktree fail; the slice was recorded `completed`, `loopx run --once` exited 0, and
//! only a `WARN` line said anything. A disk with no room left fails every slice after it the
//! same way, so it is the slice's failure and the run's error: the reason names the file
//! system, what ran out, and what to do.

use std::path::Path;

use loopx_adapters::Outcome;

use loopx_domain::judge::Judged;

/// A slice that ended on a full disk failed, whatever the agent said: its work could not be
/// committed or logged, and the next slice would meet the same disk (one `statvfs` per slice).
pub(crate) fn fail_on_full_disk(judged: &mut Judged, work_dir: &Path, failure: Option<&str>) {
    let Some(why) = full(work_dir, failure) else {
        return;
    };
    if judged.outcome != Outcome::Interrupted {
        judged.outcome = Outcome::Failed;
    }
    judged.reason = format!("{why} (the agent's own end: {})", judged.reason);
    judged.disk_full = Some(why);
}

/// Why the file system holding `path` took no more, when it did not: `error` (what failed at
/// the slice's end, if anything) says `ENOSPC` or `EDQUOT`, or the file system has no inode or
/// block left for a user now. `None`: there is room.
pub(crate) fn full(path: &Path, error: Option<&str>) -> Option<String> {
    let said_full = error.is_some_and(says_full);
    let ran_out = ran_out(path);
    if !said_full && ran_out.is_none() {
        return None;
    }
    let what = ran_out.unwrap_or_else(|| "is full (no space, or over its quota)".to_owned());
    Some(format!(
        "the file system holding {} {what}: free some there (delete files nobody needs, or give it more space or inodes), then run loopx again; what the agent wrote stays in its work tree, uncommitted",
        path.display()
    ))
}

/// Whether an error's words are those of a full disk or quota, as `strerror` (and so git)
/// puts them.
fn says_full(error: &str) -> bool {
    ["No space left on device", "Disk quota exceeded"]
        .iter()
        .any(|words| error.contains(words))
}

/// What the file system holding `path` has run out of, for an unprivileged user: `has no free
/// inodes (600 of 600 used)`. File systems that report no inode count (btrfs) are judged by
/// their blocks alone.
fn ran_out(path: &Path) -> Option<String> {
    let stat = nix::sys::statvfs::statvfs(path).ok()?;
    let (files, free_files) = (stat.files(), stat.files_available());
    if files > 0 && free_files == 0 {
        return Some(format!("has no free inodes ({files} of {files} used)"));
    }
    (stat.blocks() > 0 && stat.blocks_available() == 0).then(|| "has no free space".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_named_by_its_words_or_its_counts() {
        let dir = tempfile::tempdir().expect("a dir");
        assert_eq!(full(dir.path(), Some("exit 1")), None);
        assert_eq!(full(dir.path(), None), None);
        let said = full(
            dir.path(),
            Some("cannot write x/index: No space left on device (os error 28)"),
        )
        .expect("named");
        assert!(said.contains(&dir.path().display().to_string()), "{said}");
        assert!(said.contains("free some there"), "{said}");
    }
}
