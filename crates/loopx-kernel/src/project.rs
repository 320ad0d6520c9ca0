//! Finding a project and keeping its `.loopx/` directory private.
//!
//! A project is the directory that holds `.loopx/`, found like git finds `.git`: from the working
//! directory upwards, unless a directory is given. `.loopx/` is created 0700 with files 0600, and
//! every command refuses one that is a symbolic link, writable by others, or owned by someone
//! else: it holds the store that decides what agents may do.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::errors::ProjectError;

/// The directory name that marks a project root.
pub const STATE_DIR: &str = ".loopx";
/// The store inside it.
pub const STORE_FILE: &str = "state.redb";

/// A project root and its state directory.
#[derive(Debug, Clone)]
pub struct Project {
    root: PathBuf,
}

impl Project {
    /// Walks up from `start` to the first directory that has `.loopx/`.
    pub fn discover(start: &Path) -> Result<Project, ProjectError> {
        let start = absolute(start)?;
        for dir in start.ancestors() {
            let candidate = dir.join(STATE_DIR);
            match fs::symlink_metadata(&candidate) {
                Ok(_) => {
                    let project = Project {
                        root: dir.to_path_buf(),
                    };
                    project.check_private()?;
                    return Ok(project);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(ProjectError::Io {
                        path: candidate,
                        source,
                    });
                }
            }
        }
        Err(ProjectError::NotFound { start })
    }

    /// The project at exactly `root` (for `--project DIR`).
    pub fn at(root: &Path) -> Result<Project, ProjectError> {
        let root = absolute(root)?;
        let project = Project { root: root.clone() };
        match fs::symlink_metadata(project.state_dir()) {
            Ok(_) => {
                project.check_private()?;
                Ok(project)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(ProjectError::NotFound { start: root })
            }
            Err(source) => Err(ProjectError::Io {
                path: project.state_dir(),
                source,
            }),
        }
    }

    /// Creates `.loopx/` (0700) and its subdirectories under `root`.
    pub fn create(root: &Path) -> Result<Project, ProjectError> {
        let root = absolute(root)?;
        let project = Project { root };
        let dir = project.state_dir();
        match fs::symlink_metadata(&dir) {
            Ok(_) => return Err(ProjectError::AlreadyInitialised { path: dir }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(ProjectError::Io { path: dir, source }),
        }
        for sub in [
            dir.clone(),
            dir.join("profiles"),
            dir.join("slices"),
            dir.join("artifacts"),
            dir.join("bells"),
        ] {
            make_private_dir(&sub)?;
        }
        Ok(project)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    pub fn store_path(&self) -> PathBuf {
        self.state_dir().join(STORE_FILE)
    }

    pub fn bells_dir(&self) -> PathBuf {
        self.state_dir().join("bells")
    }

    /// Refuses a `.loopx/` that someone else could have put there or could change.
    pub fn check_private(&self) -> Result<(), ProjectError> {
        let dir = self.state_dir();
        let meta = fs::symlink_metadata(&dir).map_err(|source| ProjectError::Io {
            path: dir.clone(),
            source,
        })?;
        if meta.file_type().is_symlink() {
            return Err(ProjectError::Symlink { path: dir });
        }
        if !meta.is_dir() {
            return Err(ProjectError::NotADirectory { path: dir });
        }
        check_owner_and_mode(&dir, &meta)?;
        let store = self.store_path();
        match fs::symlink_metadata(&store) {
            Ok(meta) if meta.file_type().is_symlink() => Err(ProjectError::Symlink { path: store }),
            Ok(meta) => check_owner_and_mode(&store, &meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(ProjectError::Io {
                path: store,
                source,
            }),
        }
    }
}

fn check_owner_and_mode(path: &Path, meta: &fs::Metadata) -> Result<(), ProjectError> {
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(ProjectError::ForeignOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(ProjectError::WritableByOthers {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Creates a directory readable only by its owner, whatever the umask.
pub(crate) fn make_private_dir(path: &Path) -> Result<(), ProjectError> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(0o700)))
        .map_err(|source| ProjectError::Io {
            path: path.to_path_buf(),
            source,
        })
}

fn absolute(path: &Path) -> Result<PathBuf, ProjectError> {
    std::path::absolute(path).map_err(|source| ProjectError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    #[test]
    fn create_makes_private_dirs_and_discover_walks_up() {
        let tmp = temp();
        let project = Project::create(tmp.path()).expect("create");
        let mode = fs::metadata(project.state_dir()).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o700);
        let deep = tmp.path().join("a/b/c");
        fs::create_dir_all(&deep).expect("mkdir");
        let found = Project::discover(&deep).expect("found");
        assert_eq!(found.root(), tmp.path());
    }

    #[test]
    fn discover_without_project_names_the_start() {
        let tmp = temp();
        let err = Project::discover(tmp.path()).expect_err("no project");
        assert!(matches!(err, ProjectError::NotFound { .. }), "{err}");
    }

    #[test]
    fn unsafe_state_dirs_are_refused() {
        let tmp = temp();
        let project = Project::create(tmp.path()).expect("create");
        fs::set_permissions(project.state_dir(), fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = Project::discover(tmp.path()).expect_err("world-writable");
        assert!(
            matches!(err, ProjectError::WritableByOthers { mode: 0o777, .. }),
            "{err}"
        );

        let other = temp();
        let real = other.path().join("real");
        make_private_dir(&real).expect("mkdir");
        std::os::unix::fs::symlink(&real, other.path().join(STATE_DIR)).expect("symlink");
        let err = Project::discover(other.path()).expect_err("symlink");
        assert!(matches!(err, ProjectError::Symlink { .. }), "{err}");
    }

    #[test]
    fn create_refuses_an_existing_project() {
        let tmp = temp();
        Project::create(tmp.path()).expect("create");
        assert!(matches!(
            Project::create(tmp.path()),
            Err(ProjectError::AlreadyInitialised { .. })
        ));
    }
}
