//! Outside git: what a slice changed in the goal's scope, by a walk of the project's files.
//!
//! In a git project `scope.rs` asks git what changed. Without git, an agent that reported
//! `progress` and changed nothing kept its word: 30 slices in 12 s before the budget asked. So
//! the goal's scope is walked before the slice and after it, and a file changed when it
//! appeared, went, or has another size or modification time and other content: content is
//! hashed where the size and time alone cannot tell (a rewrite of the same bytes, a `touch`).
//!
//! Bounded: at most [`MAX_FILES`] files in the scope and [`MAX_ENTRIES`] entries visited in all,
//! and at most [`HASH_BYTES`] of content hashed per walk (a file past it is compared by size
//! and time alone). Past a bound nothing is compared and the agent's word stands, as the walk
//! says why; a directory that cannot be read is said so too. `.loopx/` (checked on its own)
//! and `.git/` are not walked, nor are symbolic links followed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use loopx_kernel::project::STATE_DIR;
use loopx_kernel::scope::Scope;
use sha2::{Digest, Sha256};

/// Files of the scope compared at most; past it, the slice's changes are not checked.
pub const MAX_FILES: usize = 10_000;
/// Entries (files and directories, in the scope or not) visited at most.
pub const MAX_ENTRIES: usize = 50_000;
/// Content hashed at most per walk, in bytes.
pub const HASH_BYTES: u64 = 64 << 20;

/// What the walk saw of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    len: u64,
    mtime: (i64, i64),
    /// Its content's SHA-256; `None` past [`HASH_BYTES`], or unreadable.
    sha256: Option<[u8; 32]>,
}

/// The scope's files as a walk saw them: project-relative path to what was seen.
#[derive(Debug, Clone, Default)]
pub struct Walked {
    files: BTreeMap<String, Seen>,
}

/// How far a walk has gone, against its bounds.
struct Budget {
    entries: usize,
    hashed: u64,
}

/// Walks the files of `scope` under `root`; why not, past a bound or an unreadable directory.
pub fn walk(root: &Path, scope: &[String]) -> Result<Walked, String> {
    let scope = Scope::recorded(scope);
    let mut walked = Walked::default();
    let mut budget = Budget {
        entries: 0,
        hashed: 0,
    };
    visit(root, "", &scope, &mut walked, &mut budget)?;
    Ok(walked)
}

fn visit(
    dir: &Path,
    prefix: &str,
    scope: &Scope,
    walked: &mut Walked,
    budget: &mut Budget,
) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{} cannot be read ({e})", shown(prefix)))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{} cannot be read ({e})", shown(prefix)))?;
        budget.entries += 1;
        if budget.entries > MAX_ENTRIES {
            return Err(format!(
                "more than {MAX_ENTRIES} files and directories in the project"
            ));
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        if prefix.is_empty() && (name == STATE_DIR || name == ".git") {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue; // gone since it was listed
        };
        if meta.is_dir() {
            visit(&entry.path(), &format!("{path}/"), scope, walked, budget)?;
        } else if scope.contains(&path) {
            if walked.files.len() >= MAX_FILES {
                return Err(format!("more than {MAX_FILES} files in the goal's scope"));
            }
            let sha256 = hash_within(&entry.path(), &meta, budget);
            let seen = Seen {
                len: meta.len(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                sha256,
            };
            walked.files.insert(path, seen);
        }
    }
    Ok(())
}

fn shown(prefix: &str) -> &str {
    match prefix {
        "" => "the project's directory",
        dir => dir,
    }
}

/// The content hash of a regular file while the walk's hashing budget lasts.
fn hash_within(path: &Path, meta: &std::fs::Metadata, budget: &mut Budget) -> Option<[u8; 32]> {
    if !meta.is_file() || budget.hashed.saturating_add(meta.len()) > HASH_BYTES {
        return None;
    }
    budget.hashed += meta.len();
    content_hash(path)
}

fn content_hash(path: &Path) -> Option<[u8; 32]> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Some(hasher.finalize().into()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(_) => return None,
        }
    }
}

impl Walked {
    /// The files that changed between `self` (before the slice) and `after`, sorted.
    pub fn changed(&self, after: &Walked) -> Vec<String> {
        let paths: BTreeSet<&String> = self.files.keys().chain(after.files.keys()).collect();
        paths
            .into_iter()
            .filter(|p| differs(self.files.get(*p), after.files.get(*p)))
            .cloned()
            .collect()
    }
}

/// Whether a file's two sightings differ: size and time alike are the same file; a new time
/// is a change only where the content differs too (or cannot be told).
fn differs(before: Option<&Seen>, after: Option<&Seen>) -> bool {
    match (before, after) {
        (Some(b), Some(a)) if b.len == a.len && b.mtime == a.mtime => false,
        (Some(b), Some(a)) if b.len == a.len => b.sha256.is_none() || b.sha256 != a.sha256,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn later(root: &Path, path: &str) {
        let file = std::fs::File::options()
            .write(true)
            .open(root.join(path))
            .expect("open");
        let then = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        file.set_modified(then).expect("touch");
    }

    #[test]
    fn a_touch_or_a_rewrite_of_the_same_bytes_is_no_change_and_an_edit_is() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path();
        write(root, "src/a.rs", "a");
        write(root, "src/b.rs", "b");
        write(root, "notes.txt", "n");
        write(root, ".loopx/state.txt", "s");
        let scope = ["src/**".to_owned()];
        let before = walk(root, &scope).expect("walked");
        later(root, "src/a.rs");
        write(root, "src/b.rs", "B");
        later(root, "src/b.rs");
        write(root, "notes.txt", "out of scope");
        write(root, "src/c.rs", "new");
        let after = walk(root, &scope).expect("walked");
        assert_eq!(before.changed(&after), ["src/b.rs", "src/c.rs"]);
        std::fs::remove_file(root.join("src/c.rs")).expect("rm");
        assert_eq!(
            after.changed(&walk(root, &scope).expect("walked")),
            ["src/c.rs"]
        );
    }

    #[test]
    fn past_the_bound_the_walk_says_why() {
        let dir = tempfile::tempdir().expect("tmp");
        for i in 0..=MAX_FILES {
            std::fs::write(dir.path().join(i.to_string()), "").expect("write");
        }
        let why = walk(dir.path(), &[]).expect_err("too many");
        assert_eq!(why, "more than 10000 files in the goal's scope");
    }
}
