//! What a slice's commit takes into the repository: bounded.
//!
//! loopx commits whatever a slice left in its worktree (`git add --all`), and every file it
//! stages is copied into `.git/objects`. An agent that left 50,000 files and a 3 GiB sparse
//! file grew `.git` from 208 KB to 191 MB (and git read all 3 GiB). So before anything is
//! staged, the files the commit would take anew are listed and measured from their metadata
//! alone (nothing is read): untracked files that are not ignored, and tracked files whose size
//! differs from the checkpoint's. In path order, a file is taken while it is at most
//! [`Bounds::file_bytes`], and the files taken stay within [`Bounds::files`] and
//! [`Bounds::total_bytes`]; the rest is left out of the commit (and stays in the worktree,
//! uncommitted), and the slice says what it left out.
//!
//! A tracked file rewritten at its old size is not counted: what it can add is bounded by the
//! repository's own files.

use std::path::Path;

use crate::GitError;

/// The most one slice's commit takes anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Files added or changed.
    pub files: usize,
    /// Bytes of one file.
    pub file_bytes: u64,
    /// Bytes of all of them.
    pub total_bytes: u64,
}

impl Bounds {
    /// Well above what a slice of real work writes (source files, a lock file, a fixture), far
    /// below what fills a disk.
    pub const DEFAULT: Bounds = Bounds {
        files: 10_000,
        file_bytes: 10 << 20,
        total_bytes: 100 << 20,
    };
}

/// Why a file was left out of a slice's commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Larger than [`Bounds::file_bytes`].
    TooLarge,
    /// Past [`Bounds::files`].
    TooMany,
    /// Past [`Bounds::total_bytes`].
    TooMuch,
}

/// One file left out of a slice's commit (its path relative to the worktree's top).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    pub path: String,
    pub bytes: u64,
    pub why: Why,
}

/// The files a slice's commit left out; empty when it took everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeftOut {
    pub bounds: Option<Bounds>,
    pub files: Vec<Left>,
}

/// Files named in [`LeftOut::describe`]; the count says how many more.
const NAMED: usize = 5;

impl LeftOut {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// In words, for the slice's reason and evidence: `left 40001 file(s) (3.0 GiB) out of its
    /// commit: 1 larger than 10 MiB (big.img, 3.0 GiB); 40000 past the first 10000 files
    /// (junk/00001, …); they stay in the worktree, uncommitted`. `None` when nothing was.
    pub fn describe(&self) -> Option<String> {
        let bounds = self.bounds?;
        if self.files.is_empty() {
            return None;
        }
        let bytes: u64 = self.files.iter().map(|f| f.bytes).sum();
        let parts: Vec<String> = [
            (
                Why::TooLarge,
                format!("larger than {}", size(bounds.file_bytes)),
            ),
            (
                Why::TooMany,
                format!("past the first {} files", bounds.files),
            ),
            (
                Why::TooMuch,
                format!("past {} in all", size(bounds.total_bytes)),
            ),
        ]
        .into_iter()
        .filter_map(|(why, what)| self.part(why, &what))
        .collect();
        Some(format!(
            "left {} file(s) ({}) out of its commit: {}; they stay in the worktree, uncommitted",
            self.files.len(),
            size(bytes),
            parts.join("; ")
        ))
    }

    /// `1 larger than 10 MiB (big.img, 3.0 GiB)`, or `None` when none was left out for `why`.
    fn part(&self, why: Why, what: &str) -> Option<String> {
        let these: Vec<&Left> = self.files.iter().filter(|f| f.why == why).collect();
        if these.is_empty() {
            return None;
        }
        let mut named: Vec<String> = these
            .iter()
            .take(NAMED)
            .map(|f| format!("{}, {}", f.path, size(f.bytes)))
            .collect();
        if these.len() > NAMED {
            named.push(format!("{} more", these.len() - NAMED));
        }
        Some(format!("{} {what} ({})", these.len(), named.join("; ")))
    }
}

/// A size in words: `10 MiB`, `3.0 GiB`, `12 bytes`.
pub fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit {
            return match bytes % unit {
                0 => format!("{} {name}", bytes / unit),
                _ => format!("{:.1} {name}", bytes as f64 / unit as f64),
            };
        }
    }
    format!("{bytes} bytes")
}

/// Stages everything in the worktree `dir` onto the index `git` works with (already holding
/// `base`), within `bounds`: a plain `add --all` when nothing is left out, otherwise one whose
/// pathspecs (written to `pathspecs`, beside loopx's index) exclude what is. `git` runs git
/// on the worktree with loopx's index and ignore rules.
pub(crate) fn stage(
    git: &dyn Fn(&[&str]) -> Result<String, GitError>,
    dir: &Path,
    base: &str,
    pathspecs: &Path,
    bounds: Bounds,
) -> Result<LeftOut, GitError> {
    let mut candidates = untracked(
        &git(&["ls-files", "-z", "--others", "--exclude-standard"])?,
        dir,
    );
    let tracked = git(&["ls-tree", "-r", "-z", "-l", "--full-tree", base])?;
    candidates.extend(resized(&tracked, dir));
    let left = choose(candidates, bounds);
    if left.is_empty() {
        git(&["add", "--all"])?;
        return Ok(left);
    }
    let mut specs = b".\0".to_vec();
    for file in &left.files {
        specs.extend_from_slice(format!(":(exclude,literal){}\0", file.path).as_bytes());
    }
    std::fs::write(pathspecs, specs)
        .map_err(|e| format!("cannot write {}: {e}", pathspecs.display()))?;
    let from = format!("--pathspec-from-file={}", pathspecs.display());
    let added = git(&["add", "--all", &from, "--pathspec-file-nul"]);
    let _ = std::fs::remove_file(pathspecs);
    added?;
    Ok(left)
}

/// The size of the file at `path` in `dir`, from its metadata (a symbolic link's own); `None`
/// when it is gone.
fn size_of(dir: &Path, path: &str) -> Option<u64> {
    std::fs::symlink_metadata(dir.join(path))
        .ok()
        .map(|m| if m.is_dir() { 0 } else { m.len() })
}

/// `ls-files --others -z`: each untracked file with its size (a nested repository, listed as
/// `dir/`, is taken as a pointer: no bytes).
fn untracked(listing: &str, dir: &Path) -> Vec<(String, u64)> {
    listing
        .split('\0')
        .filter(|p| !p.is_empty())
        .filter_map(|p| Some((p.to_owned(), size_of(dir, p)?)))
        .collect()
}

/// `ls-tree -r -l -z`: each tracked blob whose file in `dir` is there at another size.
fn resized(listing: &str, dir: &Path) -> Vec<(String, u64)> {
    listing
        .split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            let recorded: u64 = meta.split_whitespace().nth(3)?.parse().ok()?;
            let now = size_of(dir, path)?;
            (now != recorded).then(|| (path.to_owned(), now))
        })
        .collect()
}

/// What of `candidates` stays out, in path order.
fn choose(mut candidates: Vec<(String, u64)>, bounds: Bounds) -> LeftOut {
    candidates.sort();
    let (mut files, mut total) = (0usize, 0u64);
    let mut left = Vec::new();
    for (path, bytes) in candidates {
        let why = if bytes > bounds.file_bytes {
            Why::TooLarge
        } else if files >= bounds.files {
            Why::TooMany
        } else if total.saturating_add(bytes) > bounds.total_bytes {
            Why::TooMuch
        } else {
            files += 1;
            total += bytes;
            continue;
        };
        left.push(Left { path, bytes, why });
    }
    LeftOut {
        bounds: Some(bounds),
        files: left,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bounds = Bounds {
        files: 2,
        file_bytes: 100,
        total_bytes: 150,
    };

    fn candidate(path: &str, bytes: u64) -> (String, u64) {
        (path.to_owned(), bytes)
    }

    #[test]
    fn files_past_each_bound_are_left_out_in_path_order() {
        let left = choose(
            vec![
                candidate("d", 10),
                candidate("big", 3 << 30),
                candidate("a", 80),
                candidate("b", 80),
                candidate("c", 10),
            ],
            SMALL,
        );
        let why: Vec<(&str, Why)> = left
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.why))
            .collect();
        assert_eq!(
            why,
            [
                ("b", Why::TooMuch),
                ("big", Why::TooLarge),
                ("d", Why::TooMany)
            ]
        );
        let said = left.describe().expect("something was left out");
        assert!(
            said.starts_with("left 3 file(s) (3.0 GiB) out of its commit"),
            "{said}"
        );
        assert!(
            said.contains("1 larger than 100 bytes (big, 3 GiB)"),
            "{said}"
        );
    }

    #[test]
    fn nothing_left_out_says_nothing() {
        assert_eq!(choose(vec![candidate("a", 1)], SMALL).describe(), None);
    }
}
