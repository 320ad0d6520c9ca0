//! Pins: the files of the project a person's check names, held to their content
//! (`docs/monitors.md`, "A person's check runs what the person saw").
//!
//! A person's monitor runs its check with the person's rights — a profile's environment and
//! secrets, the network — in the project's tree, where agents write. A check
//! `sh scripts/ci-status.sh --profile ci-reader` ran, at its next poll, the script an agent had
//! just rewritten, with `GH_TOKEN`. So where a person adds a monitor, loopx pins each file of
//! the project the check names by its SHA-256 ([`pins_of`]); before each poll, and again after
//! it, the files are hashed anew ([`changed`]), and a check whose file changed is not run (or
//! its result not taken): a person is asked, and `poll` pins what they were shown.
//!
//! What counts as named: each word of the command (split at blanks and at the shell's
//! operators, quotes taken off, the value of `--flag=value` and `VAR=value`) that is a regular
//! file in the project's tree (following links, as the shell would). The path is kept as
//! written, so a link an agent repoints is hashed where it points at the poll. Files the check
//! reaches without naming them (what `make` reads, what a script sources) are not pinned: name
//! the script, or keep it outside the project.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use loopx_kernel::model::Pin;
use sha2::{Digest, Sha256};

/// The most files one check pins.
const MAX_PINS: usize = 32;
/// A pinned file larger than this is not read at a poll: it reads as changed (an agent that
/// swapped in a 3 GiB sparse file must not cost a hash of 3 GiB a poll).
const MAX_PINNED_BYTES: u64 = 16 * 1024 * 1024;
/// How much of a changed file the question shows; it says how much more there is.
const SHOWN_BYTES: usize = 8192;
/// What a file too large to hash is pinned as: never the same as what it was (`changed`).
const TOO_LARGE: &str = "too large to check";

/// The files of the project under `root` that `check` names, each with its content's hash.
pub fn pins_of(root: &Path, check: &str) -> Vec<Pin> {
    let mut pins: Vec<Pin> = Vec::new();
    for word in words(check) {
        let Some(path) = in_project(root, &word) else {
            continue;
        };
        let key = path.to_string_lossy().into_owned();
        if pins.iter().any(|p| p.path == key) {
            continue;
        }
        let Some(sha256) = hash(&root.join(&path)) else {
            continue;
        };
        pins.push(Pin {
            path: key,
            sha256,
            changed_to: None,
        });
        if pins.len() == MAX_PINS {
            break;
        }
    }
    pins
}

/// The pins whose file is not what was pinned, each with what it is now in `changed_to`
/// (`""`: gone, or no longer a regular file).
pub fn changed(root: &Path, pins: &[Pin]) -> Vec<Pin> {
    pins.iter()
        .filter_map(|pin| {
            let now = hash(&root.join(&pin.path)).unwrap_or_default();
            // A file too large to hash cannot be shown to be what the person saw: it is never
            // run, whatever was answered before (an agent padded a script past the bound, had
            // `poll` pin the marker, then swapped in another as large).
            (now != pin.sha256 || now == TOO_LARGE).then(|| Pin {
                changed_to: Some(now),
                ..pin.clone()
            })
        })
        .collect()
}

/// When each pinned file, the link to it and the directories above it last changed (their
/// ctimes, which nobody can set): compared before and after a check runs, it sees a file
/// swapped out and back while the check read it (the content alone looks unchanged after).
pub fn stamps(root: &Path, pins: &[Pin]) -> Vec<i128> {
    use std::os::unix::fs::MetadataExt;
    let ctime =
        |m: std::fs::Metadata| i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec());
    let mut stamps = Vec::new();
    for pin in pins {
        let path = root.join(&pin.path);
        stamps.push(std::fs::metadata(&path).map_or(-1, ctime));
        stamps.push(std::fs::symlink_metadata(&path).map_or(-1, ctime));
        let mut dir = path.parent();
        // Not the root itself: any file made there by anyone would ask. A swap of a file or a
        // directory renames it, and a rename changes its own ctime, so nothing is lost.
        while let Some(d) = dir.filter(|d| d.starts_with(root) && *d != root) {
            stamps.push(std::fs::symlink_metadata(d).map_or(-1, ctime));
            dir = d.parent();
        }
    }
    stamps
}

/// The pins as changed (each with what it is now), for a check whose files were touched while
/// it ran: what it said is not taken, and a person is asked.
pub fn touched(root: &Path, pins: &[Pin]) -> Vec<Pin> {
    pins.iter()
        .map(|pin| Pin {
            changed_to: Some(hash(&root.join(&pin.path)).unwrap_or_default()),
            ..pin.clone()
        })
        .collect()
}

/// What the person is shown of the changed files: the head of each as it is now.
pub fn describe(root: &Path, changed: &[Pin]) -> String {
    let mut text = String::new();
    for pin in changed {
        let path = root.join(&pin.path);
        let Some((mut file, len)) = open_regular(&path) else {
            text.push_str(&format!("{} is gone, or not a regular file\n", pin.path));
            continue;
        };
        if pin.changed_to.as_deref() == Some(TOO_LARGE) {
            text.push_str(&format!(
                "{} is {len} bytes, more than loopx checks ({MAX_PINNED_BYTES}): a check that names it is not run; shrink it or drop the monitor\n",
                pin.path
            ));
            continue;
        }
        let mut head = Vec::new();
        let _ = file
            .by_ref()
            .take(SHOWN_BYTES as u64)
            .read_to_end(&mut head);
        let more = len.saturating_sub(head.len() as u64);
        text.push_str(&format!(
            "{} now begins:\n{}\n",
            pin.path,
            String::from_utf8_lossy(&head)
        ));
        if more > 0 {
            text.push_str(&format!(
                "({more} more bytes not shown: read the whole file before you answer `poll`)\n"
            ));
        }
    }
    text
}

/// `path` opened for reading without blocking, when it is a regular file (links followed),
/// and its length. A FIFO an agent put in a script's place would block an open or a read for
/// ever, holding the supervisor: opened non-blocking, and its type taken from the open file.
fn open_regular(path: &Path) -> Option<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok().filter(|m| m.is_file())?;
    Some((file, meta.len()))
}

/// The command's words, as the shell would see them near enough to find the files it names.
fn words(check: &str) -> Vec<String> {
    check
        .split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .filter(|w| !w.is_empty() && !w.contains(['$', '*', '?']))
        .map(|w| match w.split_once('=') {
            Some((_, value)) => value.to_owned(),
            None => w.to_owned(),
        })
        .collect()
}

/// `word` as a path relative to `root`, when it names a regular file inside it.
fn in_project(root: &Path, word: &str) -> Option<PathBuf> {
    let path = Path::new(word);
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut normal = PathBuf::new();
    for part in relative.components() {
        match part {
            Component::Normal(p) => normal.push(p),
            Component::CurDir => {}
            // `..` leaves the tree, or walks back into it by a way the pin would not follow.
            _ => return None,
        }
    }
    let is_file = std::fs::metadata(root.join(&normal)).is_ok_and(|m| m.is_file());
    (is_file && !normal.as_os_str().is_empty()).then_some(normal)
}

/// The hex SHA-256 of the regular file at `path` (links followed); `None` when there is none.
fn hash(path: &Path) -> Option<String> {
    let (mut file, len) = open_regular(path)?;
    if len > MAX_PINNED_BYTES {
        return Some(TOO_LARGE.to_owned());
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut file.by_ref().take(MAX_PINNED_BYTES + 1), &mut hasher).ok()?;
    Some(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_check_names_are_pinned_and_a_change_is_seen() {
        let dir = tempfile::tempdir().expect("a directory");
        let root = dir.path();
        std::fs::create_dir(root.join("scripts")).expect("mkdir");
        std::fs::write(root.join("scripts/ci-status.sh"), "exit 1\n").expect("write");
        std::fs::write(root.join("env.cfg"), "a=1\n").expect("write");
        let check = "sh ./scripts/ci-status.sh --config=env.cfg && test -e missing.txt; echo $HOME";
        let pins = pins_of(root, check);
        let paths: Vec<&str> = pins.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["scripts/ci-status.sh", "env.cfg"]);
        assert!(changed(root, &pins).is_empty());
        std::fs::write(root.join("scripts/ci-status.sh"), "echo $GH_TOKEN\n").expect("write");
        std::fs::remove_file(root.join("env.cfg")).expect("rm");
        let now = changed(root, &pins);
        assert_eq!(now.len(), 2);
        assert_eq!(now[0].changed_to.as_ref().map(String::len), Some(64));
        assert_eq!(now[1].changed_to.as_deref(), Some(""));
        assert!(describe(root, &now).contains("echo $GH_TOKEN"));
    }

    #[test]
    fn a_fifo_or_a_file_too_large_never_passes_and_never_blocks() {
        let dir = tempfile::tempdir().expect("a directory");
        let root = dir.path();
        std::fs::write(root.join("ci.sh"), "exit 1\n").expect("write");
        let pins = pins_of(root, "sh ci.sh");
        std::fs::remove_file(root.join("ci.sh")).expect("rm");
        nix::unistd::mkfifo(&root.join("ci.sh"), nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let now = changed(root, &pins);
        assert_eq!(now[0].changed_to.as_deref(), Some(""));
        assert!(describe(root, &now).contains("not a regular file"));
        std::fs::remove_file(root.join("ci.sh")).expect("rm");
        let big = std::fs::File::create(root.join("ci.sh")).expect("create");
        big.set_len(MAX_PINNED_BYTES + 1).expect("a sparse file");
        let now = changed(root, &pins);
        assert_eq!(now[0].changed_to.as_deref(), Some(TOO_LARGE));
        // Pinned as it is now (a person answered `poll`), it still never passes.
        let repinned = vec![Pin {
            sha256: TOO_LARGE.to_owned(),
            changed_to: None,
            ..pins[0].clone()
        }];
        assert_eq!(changed(root, &repinned).len(), 1);
        assert!(describe(root, &now).contains("is not run"));
    }

    #[test]
    fn nothing_outside_the_tree_is_pinned() {
        let dir = tempfile::tempdir().expect("a directory");
        let root = dir.path().join("project");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::write(dir.path().join("outside.sh"), "exit 0\n").expect("write");
        let check = format!("sh ../outside.sh; sh {}/outside.sh", dir.path().display());
        assert!(pins_of(&root, &check).is_empty());
    }
}
