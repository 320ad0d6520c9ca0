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

use crate::scope::{project_path, repo_path};
use crate::{Git, GitError};

/// At most this many paths are named on one git command line.
const PATHS_PER_CALL: usize = 200;

/// Where the tree is: its top directory and the project's place in it.
#[derive(Debug, Clone)]
struct Place {
    git: Git,
    top: String,
    prefix: String,
    head: Option<String>,
}

fn place(git: Git, dir: &Path) -> Result<Place, GitError> {
    let dir = dir.to_string_lossy();
    let out = match git.stdout(
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
            git.stdout(&dir, &["rev-parse", "--show-toplevel", "--show-prefix"])?,
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
    Ok(Place {
        git,
        top,
        prefix,
        head,
    })
}

/// The tree at `dir` as it is now.
pub fn mark(git: Git, dir: &Path) -> Result<WorkMark, GitError> {
    let place = place(git, dir)?;
    // Files outside the project and loopx's own state are never about the work: they are
    // neither hashed nor counted. Files the index is told to ignore (`update-index
    // --assume-unchanged`, `--skip-worktree`) are hashed as if changed: `git status` would not
    // show an edit to them.
    let mut repo_paths: BTreeSet<String> = git
        .status(&place.top)?
        .into_iter()
        .map(|(_, repo)| repo)
        .collect();
    repo_paths.extend(hidden(&place)?);
    let mut paths: Vec<(String, String)> = repo_paths
        .into_iter()
        .filter_map(|repo| Some((project_path(&repo, &place.prefix)?, repo)))
        .filter(|(project, _)| !project.starts_with("../"))
        .collect();
    let overflow = paths.len() > WorkMark::MAX_DIRTY;
    paths.truncate(WorkMark::MAX_DIRTY);
    let repo_paths: Vec<String> = paths.iter().map(|(_, repo)| repo.clone()).collect();
    let blobs = blob_ids(&place, &repo_paths)?;
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

/// The mark to record with evidence about the tree at `dir`: `None` outside git (such evidence
/// ages only by its pinned files and shelf life), and a mark that compares as unknown when git
/// could not read the tree, so that the evidence counts as stale rather than fresh forever.
pub fn mark_or_unknown(git: Git, dir: &Path) -> Option<WorkMark> {
    match mark(git, dir) {
        Ok(mark) => Some(mark),
        Err(GitError::NotARepository | GitError::Spawn(_)) => None,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot mark the work tree");
            Some(WorkMark {
                commit: None,
                dirty: vec![],
                overflow: true,
            })
        }
    }
}

/// The tree as `rev` holds it, with nothing uncommitted (a worktree goal's branch after its
/// todo's worktree was removed).
pub fn mark_at(git: Git, dir: &Path, rev: &str) -> Result<WorkMark, GitError> {
    let place = place(git, dir)?;
    let commit = git.stdout(&place.top, &["rev-parse", "--verify", "--quiet", rev])?;
    Ok(WorkMark {
        commit: Some(String::from_utf8_lossy(&commit).trim().to_owned()),
        dirty: vec![],
        overflow: false,
    })
}

/// The project-relative files whose content differs between `then` and `now` (both marks of
/// the tree at `dir`), of those `in_scope` accepts, sorted.
pub fn changed_between(
    git: Git,
    dir: &Path,
    then: &WorkMark,
    now: &WorkMark,
    in_scope: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, GitError> {
    Comparer::default().changed_between(git, dir, then, now, in_scope)
}

/// Many marks compared with the present, sharing what git said: where each tree is, what
/// differs between two commits, and a file's id at a commit. Judging every piece of a goal's
/// evidence (`status`, `goal history`) then asks git a few times in all, not twice a piece
/// (200 pieces each on its own tree state: 414 git processes before). The repository is taken
/// not to change while one is used: one look at the present, as the caller's mark of now is.
#[derive(Debug, Default)]
pub struct Comparer {
    places: BTreeMap<String, Place>,
    /// `(from, to)` commits → the project's files that differ between them.
    diffs: BTreeMap<(String, String), Vec<String>>,
    /// `(commit, project path)` → the file's blob id in it; `None`: no such file there.
    committed: BTreeMap<(String, String), Option<String>>,
}

impl Comparer {
    /// [`changed_between`], with what git said before kept for the next comparison.
    pub fn changed_between(
        &mut self,
        git: Git,
        dir: &Path,
        then: &WorkMark,
        now: &WorkMark,
        in_scope: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<String>, GitError> {
        // The tree as it was: nothing to ask git (the common case, and the cheap one).
        if then == now && !then.overflow {
            return Ok(vec![]);
        }
        let place = self.place(git, dir)?;
        let mut candidates: BTreeSet<String> = then
            .dirty
            .iter()
            .chain(&now.dirty)
            .map(|(path, _)| path.clone())
            .collect();
        if then.commit != now.commit {
            candidates.extend(self.committed_between(&place, then, now)?);
        }
        candidates.retain(|path| in_scope(path));
        if candidates.is_empty() && !then.overflow && !now.overflow {
            return Ok(vec![]);
        }
        // More files differed than a mark lists: a change among the others cannot be told apart.
        if then.overflow || now.overflow {
            return Err(GitError::Unusable(format!(
                "more than {} files differ from the commit, too many to compare",
                WorkMark::MAX_DIRTY
            )));
        }
        let paths: Vec<String> = candidates.iter().cloned().collect();
        let then_ids = self.contents(&place, then, &paths)?;
        let now_ids = self.contents(&place, now, &paths)?;
        Ok(paths
            .into_iter()
            .filter(|path| then_ids.get(path) != now_ids.get(path))
            .collect())
    }

    fn place(&mut self, git: Git, dir: &Path) -> Result<Place, GitError> {
        let key = dir.to_string_lossy().into_owned();
        if let Some(place) = self.places.get(&key) {
            return Ok(place.clone());
        }
        let found = place(git, dir)?;
        self.places.insert(key, found.clone());
        Ok(found)
    }

    fn committed_between(
        &mut self,
        place: &Place,
        then: &WorkMark,
        now: &WorkMark,
    ) -> Result<Vec<String>, GitError> {
        let key = (
            then.commit.clone().unwrap_or_default(),
            now.commit.clone().unwrap_or_default(),
        );
        if let Some(known) = self.diffs.get(&key) {
            return Ok(known.clone());
        }
        let names = committed_between(place, then, now)?;
        self.diffs.insert(key, names.clone());
        Ok(names)
    }

    /// The blob id of each of `paths` (project-relative) as `mark` saw it: its uncommitted
    /// content, else the committed one; absent for a file that did not exist.
    fn contents(
        &mut self,
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
        if let Some(commit) = &mark.commit {
            let committed: Vec<String> = paths
                .iter()
                .filter(|p| !dirty.contains_key(p.as_str()))
                .cloned()
                .collect();
            let unknown: Vec<String> = (committed.iter())
                .filter(|p| !self.committed.contains_key(&(commit.clone(), (*p).clone())))
                .cloned()
                .collect();
            if !unknown.is_empty() {
                let found = committed_ids(place, commit, &unknown)?;
                for path in &unknown {
                    let key = (commit.clone(), path.clone());
                    self.committed.insert(key, found.get(path).cloned());
                }
            }
            for path in committed {
                if let Some(Some(id)) = self.committed.get(&(commit.clone(), path.clone())) {
                    ids.insert(path, id.clone());
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
}

/// The project's files that differ between the commits of `then` and `now` (a commit made,
/// reset or amended while the slice ran).
fn committed_between(
    place: &Place,
    then: &WorkMark,
    now: &WorkMark,
) -> Result<Vec<String>, GitError> {
    let empty = place.git.empty_tree(&place.top)?;
    let from = then.commit.as_deref().unwrap_or(&empty);
    let to = now.commit.as_deref().unwrap_or(&empty);
    let names = place
        .git
        .stdout(
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
    Ok(names
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty())
        .filter_map(|n| project_path(&String::from_utf8_lossy(n), &place.prefix))
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

/// The blob id of each of `paths` (project-relative) at `commit`; a file it does not have is
/// left out.
fn committed_ids(
    place: &Place,
    commit: &str,
    paths: &[String],
) -> Result<BTreeMap<String, String>, GitError> {
    let mut ids = BTreeMap::new();
    for chunk in paths.chunks(PATHS_PER_CALL) {
        let specs: Vec<String> = chunk
            .iter()
            .map(|p| format!(":(top,literal){}", repo_path(p, &place.prefix)))
            .collect();
        let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit, "--"];
        args.extend(specs.iter().map(String::as_str));
        let out = place
            .git
            .stdout(&place.top, &args)
            .map_err(|e| gone(e, commit))?;
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
    Ok(ids)
}

/// Files the index hides from `git status`: assume-unchanged (a lowercase tag in `ls-files
/// -v`) and skip-worktree (`S`).
fn hidden(place: &Place) -> Result<Vec<String>, GitError> {
    let out = place.git.stdout(&place.top, &["ls-files", "-v", "-z"])?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|e| e.len() > 2)
        .filter(|e| e[0].is_ascii_lowercase() || e[0] == b'S')
        .map(|e| String::from_utf8_lossy(&e[2..]).into_owned())
        .collect())
}

/// The content id of each existing file of `paths` (repository-relative), without writing
/// anything; a deleted file has none. A regular file's is `git hash-object`'s (the repository's
/// filters applied, as for a commit). A symlink's is its target, and a file that cannot be read
/// is named by its size and time: neither is hashed by git, which would follow the link or fail
/// on the file and lose the whole mark.
fn blob_ids(place: &Place, paths: &[String]) -> Result<BTreeMap<String, String>, GitError> {
    use std::os::unix::fs::MetadataExt;
    let mut ids = BTreeMap::new();
    let mut present: Vec<&String> = Vec::new();
    for path in paths {
        let full = Path::new(&place.top).join(path.as_str());
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        if meta.is_symlink() {
            let target = std::fs::read_link(&full).unwrap_or_default();
            ids.insert(path.clone(), format!("link:{}", target.display()));
        } else if !meta.is_file() {
            continue;
        } else if std::fs::File::open(&full).is_err() {
            let when = meta.mtime_nsec() + meta.mtime() * 1_000_000_000;
            ids.insert(path.clone(), format!("unreadable:{}:{when}", meta.len()));
        } else {
            present.push(path);
        }
    }
    for chunk in present.chunks(PATHS_PER_CALL) {
        let mut args = vec!["hash-object", "--"];
        args.extend(chunk.iter().map(|p| p.as_str()));
        let out = place.git.stdout(&place.top, &args)?;
        let text = String::from_utf8_lossy(&out);
        for (path, id) in chunk.iter().zip(text.lines()) {
            ids.insert((*path).clone(), id.trim().to_owned());
        }
    }
    Ok(ids)
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
        let now = mark(Git::default(), dir).expect("mark");
        changed_between(Git::default(), dir, then, &now, &|p| p.starts_with("src/"))
            .expect("compare")
    }

    /// One comparer judging marks of many tree states (uncommitted, committed, an older
    /// commit) says of each what a comparison of its own says, in any order: what it keeps
    /// from git is about the repository, never about one comparison.
    #[test]
    fn a_comparer_shared_by_many_marks_answers_as_each_alone() {
        let dir = repo();
        let path = dir.path();
        let mut marks = vec![mark(Git::default(), path).expect("mark")];
        std::fs::write(path.join("src/lib.rs"), "two\n").expect("write");
        marks.push(mark(Git::default(), path).expect("mark"));
        std::fs::write(path.join("src/new.rs"), "new\n").expect("write");
        marks.push(mark(Git::default(), path).expect("mark"));
        git_as_tester(path, &["add", "-A"]);
        git_as_tester(path, &["commit", "-qm", "second"]);
        marks.push(mark(Git::default(), path).expect("mark"));
        std::fs::write(path.join("src/lib.rs"), "three\n").expect("write");
        std::fs::remove_file(path.join("src/new.rs")).expect("rm");
        let now = mark(Git::default(), path).expect("mark");
        let in_src = |p: &str| p.starts_with("src/");
        let alone: Vec<Vec<String>> = (marks.iter())
            .map(|then| {
                changed_between(Git::default(), path, then, &now, &in_src).expect("compare")
            })
            .collect();
        assert_eq!(alone[0], ["src/lib.rs"], "{alone:?}");
        assert_eq!(alone[2], ["src/lib.rs", "src/new.rs"], "{alone:?}");
        let mut comparer = Comparer::default();
        for order in [[0, 1, 2, 3], [3, 2, 1, 0]] {
            for i in order {
                let shared = comparer
                    .changed_between(Git::default(), path, &marks[i], &now, &in_src)
                    .expect("compare");
                assert_eq!(shared, alone[i], "mark {i}");
            }
        }
    }

    #[test]
    fn a_commit_of_the_content_the_evidence_saw_changes_nothing() {
        let dir = repo();
        std::fs::write(dir.path().join("src/lib.rs"), "two\n").expect("write");
        let then = mark(Git::default(), dir.path()).expect("mark");
        assert_eq!(then.dirty.len(), 1, "{then:?}");
        git_as_tester(dir.path(), &["commit", "-qam", "second"]);
        assert_eq!(changed(dir.path(), &then), Vec::<String>::new());
    }

    #[test]
    fn a_later_edit_in_scope_is_named_committed_or_not_and_one_outside_is_not() {
        let dir = repo();
        let then = mark(Git::default(), dir.path()).expect("mark");
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
    fn an_edit_the_index_is_told_to_ignore_is_still_seen() {
        let dir = repo();
        let then = mark(Git::default(), dir.path()).expect("mark");
        for flag in ["--assume-unchanged", "--skip-worktree"] {
            git_as_tester(dir.path(), &["update-index", flag, "src/lib.rs"]);
            std::fs::write(dir.path().join("src/lib.rs"), format!("{flag}\n")).expect("write");
            assert_eq!(changed(dir.path(), &then), vec!["src/lib.rs"], "{flag}");
            let undo = flag.replace("--", "--no-");
            git_as_tester(dir.path(), &["update-index", &undo, "src/lib.rs"]);
        }
    }

    #[test]
    fn a_dangling_symlink_or_an_unreadable_file_leaves_the_mark_whole() {
        let dir = repo();
        std::os::unix::fs::symlink("/nonexistent", dir.path().join("src/gone")).expect("link");
        let then = mark(Git::default(), dir.path()).expect("a mark despite the dangling link");
        std::fs::remove_file(dir.path().join("src/gone")).expect("remove");
        std::os::unix::fs::symlink("/elsewhere", dir.path().join("src/gone")).expect("link");
        assert_eq!(changed(dir.path(), &then), vec!["src/gone"]);
    }

    #[test]
    fn more_files_than_a_mark_lists_cannot_be_compared() {
        let dir = repo();
        for n in 0..=WorkMark::MAX_DIRTY {
            std::fs::write(dir.path().join(format!("src/f{n}.rs")), "x\n").expect("write");
        }
        let then = mark(Git::default(), dir.path()).expect("mark");
        assert!(then.overflow, "{} listed", then.dirty.len());
        let now = mark(Git::default(), dir.path()).expect("mark");
        let err = changed_between(Git::default(), dir.path(), &then, &now, &|_| true)
            .expect_err("unknown");
        assert!(err.to_string().contains("too many to compare"), "{err}");
        // Outside git there is no mark at all; a tree git cannot read is marked as unknown.
        let plain = tempfile::tempdir().expect("tempdir");
        assert_eq!(mark_or_unknown(Git::default(), plain.path()), None);
    }

    #[test]
    fn a_commit_gone_from_the_repository_says_so() {
        let dir = repo();
        let then = WorkMark {
            commit: Some("0123456789abcdef0123456789abcdef01234567".to_owned()),
            dirty: vec![],
            overflow: false,
        };
        let now = mark(Git::default(), dir.path()).expect("mark");
        let err =
            changed_between(Git::default(), dir.path(), &then, &now, &|_| true).expect_err("gone");
        assert!(
            err.to_string().contains("no longer in the repository"),
            "{err}"
        );
    }
}
