//! The demo agent's only access to files: paths relative to its working directory, checked so
//! that nothing outside it is ever read or written.

use std::path::{Component, Path, PathBuf};

/// The file that says a simulated usage limit was already hit in this directory.
pub(crate) const LIMIT_MARKER: &str = ".loopx-demo-limit-hit";

/// Directories that belong to tools, not to the work: a slice writing there is a scope violation.
const RESERVED: [&str; 2] = [".loopx", ".git"];

/// The working directory, and whether writing is allowed.
#[derive(Debug)]
pub(crate) struct Workspace {
    root: PathBuf,
    read_only: bool,
}

impl Workspace {
    pub fn new(root: PathBuf, read_only: bool) -> Workspace {
        Workspace { root, read_only }
    }

    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// `rel` under the root, or why it is refused: absolute, `..`, a reserved directory, or a
    /// symlink on the way (which could lead outside).
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, String> {
        let path = Path::new(rel);
        if rel.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(format!(
                "`{rel}` is not a plain relative path inside the working directory"
            ));
        }
        if let Some(Component::Normal(first)) = path.components().next()
            && RESERVED.iter().any(|r| first == *r)
        {
            return Err(format!(
                "`{rel}` is inside a directory the agent must not touch"
            ));
        }
        let mut at = self.root.clone();
        for part in path.components() {
            at.push(part);
            if at
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                return Err(format!("`{rel}` goes through a symlink"));
            }
        }
        Ok(at)
    }

    /// The file's text; `Ok(None)` when it does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<String>, String> {
        let path = self.resolve(rel)?;
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read `{rel}`: {e}")),
        }
    }

    /// Writes `text` to `rel`, creating its directories; refused under `--read-only`.
    pub fn write(&self, rel: &str, text: &str) -> Result<(), String> {
        if self.read_only {
            return Err(format!(
                "permission to write `{rel}` was not granted (read-only)"
            ));
        }
        self.store(rel, text)
    }

    /// Records that the simulated usage limit was hit. This stands for the vendor's own
    /// account state, not the agent's work, so it is written even under `--read-only`.
    pub fn mark_limit_hit(&self) -> Result<(), String> {
        self.store(
            LIMIT_MARKER,
            "the loopx demo agent hit its simulated usage limit\n",
        )
    }

    pub fn limit_hit(&self) -> bool {
        self.root.join(LIMIT_MARKER).exists()
    }

    fn store(&self, rel: &str, text: &str) -> Result<(), String> {
        let path = self.resolve(rel)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create the directory of `{rel}`: {e}"))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write `{rel}`: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(read_only: bool) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::new(dir.path().to_path_buf(), read_only);
        (dir, ws)
    }

    #[test]
    fn refuses_paths_that_leave_the_root() {
        let (_dir, ws) = workspace(false);
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "./a",
            ".loopx/state.redb",
            ".git/config",
        ] {
            assert!(ws.resolve(bad).is_err(), "{bad} must be refused");
        }
        assert!(ws.resolve("demo/NOTES.md").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_symlink_on_the_way() {
        let (dir, ws) = workspace(false);
        let outside = tempfile::tempdir().expect("temp dir");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).expect("symlink");
        assert!(ws.write("out/x.md", "x").is_err());
        assert!(!outside.path().join("x.md").exists());
    }

    #[test]
    fn read_only_never_writes_but_still_marks_the_limit() {
        let (dir, ws) = workspace(true);
        assert!(ws.write("demo/NOTES.md", "x").is_err());
        assert!(!dir.path().join("demo").exists());
        ws.mark_limit_hit().expect("marker");
        assert!(ws.limit_hit());
    }
}
