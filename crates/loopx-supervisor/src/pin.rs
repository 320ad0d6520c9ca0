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
/// How much of a changed file the question shows.
const SHOWN_BYTES: usize = 2048;

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
            (now != pin.sha256).then(|| Pin {
                changed_to: Some(now),
                ..pin.clone()
            })
        })
        .collect()
}

/// What the person is shown of the changed files: the head of each as it is now.
pub fn describe(root: &Path, changed: &[Pin]) -> String {
    let mut text = String::new();
    for pin in changed {
        let head = std::fs::File::open(root.join(&pin.path)).and_then(|f| {
            let mut buf = Vec::new();
            f.take(SHOWN_BYTES as u64).read_to_end(&mut buf)?;
            Ok(buf)
        });
        match head {
            Ok(bytes) => text.push_str(&format!(
                "{} now begins:\n{}\n",
                pin.path,
                String::from_utf8_lossy(&bytes)
            )),
            Err(_) => text.push_str(&format!("{} is gone\n", pin.path)),
        }
    }
    text
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
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    if meta.len() > MAX_PINNED_BYTES {
        return Some(format!("larger than {MAX_PINNED_BYTES} bytes"));
    }
    let mut file = std::fs::File::open(path).ok()?;
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
    fn nothing_outside_the_tree_is_pinned() {
        let dir = tempfile::tempdir().expect("a directory");
        let root = dir.path().join("project");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::write(dir.path().join("outside.sh"), "exit 0\n").expect("write");
        let check = format!("sh ../outside.sh; sh {}/outside.sh", dir.path().display());
        assert!(pins_of(&root, &check).is_empty());
    }
}
