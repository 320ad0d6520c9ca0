//! The state of a work tree that evidence speaks about, and which files changed since
//! (`docs/goals.md`, "Evidence that ages").
//!
//! A mark is the commit checked out plus the git blob id of every file that differed from it.
//! Comparing contents, not commits, is what makes it right: an agent that ran the tests over
//! uncommitted changes and then committed them (or a worktree goal's checkpoint commit after
//! the slice) changed no file the tests saw, and its evidence stays fresh; a file edited after
//! the tests, committed or not, makes it stale. Nothing is written to the repository: blob ids
//! are computed with `git hash-object` without `-w`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use loopx_kernel::model::WorkMark;

use crate::GitError;
use crate::scope::{git, project_path, repo_path, status};

/// At most this many paths are named on one git command line.
const PATHS_PER_CALL: usize = 200;

/// Where the tree is: its top directory and the project's place in it.
struct Place {
    top: String,
    prefix: String,
    head: Option<String>,
}

fn place(dir: &Path) -> Result<Place, GitError> {
    let dir = dir.to_string_lossy();
    let out = match git(
        &dir,
        &["rev-parse", "--show-toplevel", "--show-prefix", "HEAD"],
    ) {
        Ok(out) => (out, true),
        Err(GitError::Failed { stderr, .. }) if stderr.contains("not a git repository") => {
            return Err(GitError::NotARepository);
        }
        Err(e @ (GitError::Spawn(_) | GitError::TimedOut { .. })) => return Err(e),
        // No commit yet: `HEAD` does not resolve.
        Err(_) => (
            git(&dir, &["rev-parse", "--show-toplevel", "--show-prefix"])?,
            false,
        ),
    };
    let (out, has_head) = out;
    let text = String::from_utf8_lossy(&out);
    let mut lines = text.lines();
    let top = lines.next().unwrap_or_default().to_owned();
    let prefix = lines.next().unwrap_or_default().to_owned();
    let head = lines
        .next()
        .filter(|_| has_head)
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty());
    Ok(Place { top, prefix, head })
}

/// The tree at `dir` as it is now.
pub fn mark(dir: &Path) -> Result<WorkMark, GitError> {
    let place = place(dir)?;
    // Files outside the project and loopx's own state are never about the work: they are
    // neither hashed nor counted.
    let mut paths: Vec<(String, String)> = status(&place.top)?
        .into_iter()
        .filter_map(|(_, repo)| Some((project_path(&repo, &place.prefix)?, repo)))
        .collect();
    let overflow = paths.len() > WorkMark::MAX_DIRTY;
    paths.truncate(WorkMark::MAX_DIRTY);
    let repo_paths: Vec<String> = paths.iter().map(|(_, repo)| repo.clone()).collect();
    let blobs = blob_ids(&place.top, &repo_paths)?;
    let dirty = paths
        .into_iter()
        .map(|(project, repo)| {
            let blob = blobs.get(&repo).cloned().unwrap_or_default();
            (project, blob)
        })
        .collect();
    Ok(WorkMark {
        commit: place.head,
        dirty,
        overflow,
    })
}

/// The tree as `rev` holds it, with nothing uncommitted (a worktree goal's branch after its
/// todo's worktree was removed).
pub fn mark_at(dir: &Path, rev: &str) -> Result<WorkMark, GitError> {
    let place = place(dir)?;
    let commit = git(&place.top, &["rev-parse", "--verify", "--quiet", rev])?;
    Ok(WorkMark {
        commit: Some(String::from_utf8_lossy(&commit).trim().to_owned()),
        dirty: vec![],
        overflow: false,
    })
}

/// The project-relative files whose content differs between `then` and `now` (both marks of
/// the tree at `dir`), of those `in_scope` accepts, sorted.
pub fn changed_between(
    dir: &Path,
    then: &WorkMark,
    now: &WorkMark,
    in_scope: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, GitError> {
    let place = place(dir)?;
    let mut candidates: BTreeSet<String> = then
        .dirty
        .iter()
        .chain(&now.dirty)
        .map(|(path, _)| path.clone())
        .collect();
    if then.commit != now.commit {
        let empty = empty_tree(&place.top)?;
        let from = then.commit.as_deref().unwrap_or(&empty);
        let to = now.commit.as_deref().unwrap_or(&empty);
        let names = git(
            &place.top,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                "--name-only",
                "-z",
                from,
                to,
            ],
        )
        .map_err(|e| gone(e, from))?;
        candidates.extend(
            names
                .split(|b| *b == 0)
                .filter(|n| !n.is_empty())
                .filter_map(|n| project_path(&String::from_utf8_lossy(n), &place.prefix)),
        );
    }
    candidates.retain(|path| in_scope(path));
    if candidates.is_empty() {
        return Ok(vec![]);
    }
    let paths: Vec<String> = candidates.iter().cloned().collect();
    let then_ids = contents(&place, then, &paths)?;
    let now_ids = contents(&place, now, &paths)?;
    let then_dirty: BTreeSet<&str> = then.dirty.iter().map(|(p, _)| p.as_str()).collect();
    Ok(paths
        .into_iter()
        .filter(|path| {
            then_ids.get(path) != now_ids.get(path)
                // A file uncommitted then that the mark could not list: unknown, so changed.
                || (then.overflow && !then_dirty.contains(path.as_str()))
        })
        .collect())
}

/// A commit that is no longer in the repository (rewritten history, collected): said so.
fn gone(e: GitError, commit: &str) -> GitError {
    match e {
        GitError::Failed { .. } => GitError::Unusable(format!(
            "its commit {} is no longer in the repository",
            crate::worktree::short(commit)
        )),
        other => other,
    }
}

/// The blob id of each of `paths` (project-relative) as `mark` saw it: its uncommitted content,
/// else the committed one; absent for a file that did not exist.
fn contents(
    place: &Place,
    mark: &WorkMark,
    paths: &[String],
) -> Result<BTreeMap<String, String>, GitError> {
    let dirty: BTreeMap<&str, &str> = mark
        .dirty
        .iter()
        .map(|(p, id)| (p.as_str(), id.as_str()))
        .collect();
    let mut ids = BTreeMap::new();
    let committed: Vec<&String> = paths
        .iter()
        .filter(|p| !dirty.contains_key(p.as_str()))
        .collect();
    if let Some(commit) = &mark.commit {
        for chunk in committed.chunks(PATHS_PER_CALL) {
            let specs: Vec<String> = chunk
                .iter()
                .map(|p| format!(":(top,literal){}", repo_path(p, &place.prefix)))
                .collect();
            let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit.as_str(), "--"];
            args.extend(specs.iter().map(String::as_str));
            let out = git(&place.top, &args).map_err(|e| gone(e, commit))?;
            for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
                let entry = String::from_utf8_lossy(entry);
                // `<mode> <type> <id>\t<path>`
                let Some((meta, path)) = entry.split_once('\t') else {
                    continue;
                };
                let Some(id) = meta.split(' ').nth(2) else {
                    continue;
                };
                if let Some(project) = project_path(path, &place.prefix) {
                    ids.insert(project, id.to_owned());
                }
            }
        }
    }
    for (path, id) in dirty {
        // An empty id: deleted then, like a file that never existed.
        if !id.is_empty() {
            ids.insert(path.to_owned(), id.to_owned());
        }
    }
    Ok(ids)
}

/// `git hash-object` of each existing file of `paths` (repository-relative), without writing
/// anything; a deleted file has none.
fn blob_ids(top: &str, paths: &[String]) -> Result<BTreeMap<String, String>, GitError> {
    let present: Vec<&String> = paths
        .iter()
        .filter(|p| {
            std::fs::symlink_metadata(Path::new(top).join(p.as_str()))
                .is_ok_and(|m| m.is_file() || m.is_symlink())
        })
        .collect();
    let mut ids = BTreeMap::new();
    for chunk in present.chunks(PATHS_PER_CALL) {
        let mut args = vec!["hash-object", "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        let out = git(top, &args)?;
        let text = String::from_utf8_lossy(&out);
        for (path, id) in chunk.iter().zip(text.lines()) {
            ids.insert((*path).clone(), id.trim().to_owned());
        }
    }
    Ok(ids)
}

fn empty_tree(top: &str) -> Result<String, GitError> {
    let id = git(top, &["hash-object", "-t", "tree", "/dev/null"])?;
    Ok(String::from_utf8_lossy(&id).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::tests::git_as_tester;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        git_as_tester(dir.path(), &["init", "-q"]);
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/lib.rs"), "one\n").expect("write");
        std::fs::write(dir.path().join("README"), "readme\n").expect("write");
        git_as_tester(dir.path(), &["add", "-A"]);
        git_as_tester(dir.path(), &["commit", "-qm", "first"]);
        dir
    }

    fn changed(dir: &Path, then: &WorkMark) -> Vec<String> {
        let now = mark(dir).expect("mark");
        changed_between(dir, then, &now, &|p| p.starts_with("src/")).expect("compare")
    }

    #[test]
    fn a_commit_of_the_content_the_evidence_saw_changes_nothing() {
        let dir = repo();
        std::fs::write(dir.path().join("src/lib.rs"), "two\n").expect("write");
        let then = mark(dir.path()).expect("mark");
        assert_eq!(then.dirty.len(), 1, "{then:?}");
        git_as_tester(dir.path(), &["commit", "-qam", "second"]);
        assert_eq!(changed(dir.path(), &then), Vec::<String>::new());
    }

    #[test]
    fn a_later_edit_in_scope_is_named_committed_or_not_and_one_outside_is_not() {
        let dir = repo();
        let then = mark(dir.path()).expect("mark");
        std::fs::write(dir.path().join("README"), "changed\n").expect("write");
        assert_eq!(changed(dir.path(), &then), Vec::<String>::new());
        std::fs::write(dir.path().join("src/lib.rs"), "three\n").expect("write");
        assert_eq!(changed(dir.path(), &then), vec!["src/lib.rs"]);
        git_as_tester(dir.path(), &["commit", "-qam", "third"]);
        assert_eq!(changed(dir.path(), &then), vec!["src/lib.rs"]);
        // Put back as it was: the content the evidence saw, so fresh again.
        std::fs::write(dir.path().join("src/lib.rs"), "one\n").expect("write");
        assert_eq!(changed(dir.path(), &then), Vec::<String>::new());
        std::fs::write(dir.path().join("src/new.rs"), "new\n").expect("write");
        assert_eq!(changed(dir.path(), &then), vec!["src/new.rs"]);
    }

    #[test]
    fn a_commit_gone_from_the_repository_says_so() {
        let dir = repo();
        let then = WorkMark {
            commit: Some("0123456789abcdef0123456789abcdef01234567".to_owned()),
            dirty: vec![],
            overflow: false,
        };
        let now = mark(dir.path()).expect("mark");
        let err = changed_between(dir.path(), &then, &now, &|_| true).expect_err("gone");
        assert!(
            err.to_string().contains("no longer in the repository"),
            "{err}"
        );
    }
}
