//! Checks made before spawning, because portable-pty hides these failures: a missing working
//! directory silently becomes `$HOME`, and a failed exec (missing interpreter) is reported as a
//! successful spawn whose child then aborts.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::unistd::{AccessFlags, access};

use crate::errors::SpawnError;

/// The working directory must exist and be a directory.
pub(crate) fn check_cwd(cwd: &Path) -> Result<(), SpawnError> {
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(SpawnError::CwdNotDirectory {
            path: cwd.to_owned(),
        }),
        Err(_) => Err(SpawnError::CwdMissing {
            path: cwd.to_owned(),
        }),
    }
}

/// Resolves `program` to an absolute executable path: a bare name through `path_var` (the
/// slice's `PATH`, not loopx's), anything else relative to `cwd`. Then checks it can run.
pub(crate) fn resolve_program(
    program: &Path,
    cwd: &Path,
    path_var: Option<&OsStr>,
) -> Result<PathBuf, SpawnError> {
    let is_bare = !program.as_os_str().as_bytes().contains(&b'/');
    if !is_bare {
        let path = cwd.join(program);
        check_executable(&path, cwd)?;
        return Ok(path);
    }
    let name = program.to_string_lossy().into_owned();
    let Some(path_var) = path_var else {
        return Err(SpawnError::NoPath { program: name });
    };
    let found = std::env::split_paths(path_var)
        .map(|dir| cwd.join(dir).join(program))
        .find(|candidate| is_executable_file(candidate));
    match found {
        Some(path) => {
            check_executable(&path, cwd)?;
            Ok(path)
        }
        None => Err(SpawnError::ProgramNotFound {
            program: name,
            path: path_var.to_string_lossy().into_owned(),
        }),
    }
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
        && access(path, AccessFlags::X_OK).is_ok()
}

/// The file exists, is executable, and if it is a script, its interpreter is too.
pub(crate) fn check_executable(path: &Path, cwd: &Path) -> Result<(), SpawnError> {
    if std::fs::metadata(path).is_err() {
        return Err(SpawnError::ProgramMissing {
            path: path.to_owned(),
        });
    }
    if !is_executable_file(path) {
        return Err(SpawnError::NotExecutable {
            path: path.to_owned(),
        });
    }
    let Some(interpreter) = shebang_interpreter(path)? else {
        return Ok(());
    };
    // The kernel resolves a relative interpreter against the process's working directory.
    let resolved = cwd.join(&interpreter);
    if is_executable_file(&resolved) {
        Ok(())
    } else {
        Err(SpawnError::BadInterpreter {
            program: path.to_owned(),
            interpreter,
        })
    }
}

/// The interpreter named on a `#!` line, if the file starts with one.
fn shebang_interpreter(path: &Path) -> Result<Option<PathBuf>, SpawnError> {
    let read_err = |source| SpawnError::ReadProgram {
        path: path.to_owned(),
        source,
    };
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        // An execute-only binary cannot be read but can still run; only scripts need reading.
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => return Ok(None),
        Err(err) => return Err(read_err(err)),
    };
    // Linux reads at most 256 bytes of a `#!` line (BINPRM_BUF_SIZE).
    let mut head = Vec::with_capacity(256);
    file.by_ref()
        .take(256)
        .read_to_end(&mut head)
        .map_err(read_err)?;
    let Some(line) = head.strip_prefix(b"#!") else {
        return Ok(None);
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let interpreter = line
        .split(|&b| b == b' ' || b == b'\t')
        .find(|word| !word.is_empty())
        .unwrap_or_default();
    Ok(Some(PathBuf::from(OsStr::from_bytes(interpreter))))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn script(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, body).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    #[test]
    fn resolves_bare_names_through_the_given_path_only() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        script(&bin, "agent", "#!/bin/sh\n", 0o755);
        let found = resolve_program(Path::new("agent"), tmp.path(), Some(bin.as_os_str()))
            .expect("found in PATH");
        assert_eq!(found, bin.join("agent"));

        let err = resolve_program(Path::new("agent"), tmp.path(), Some(OsStr::new("/nowhere")))
            .expect_err("not in PATH");
        assert!(err.to_string().contains("`/nowhere`"), "{err}");
        let err = resolve_program(Path::new("agent"), tmp.path(), None).expect_err("no PATH");
        assert!(matches!(err, SpawnError::NoPath { .. }), "{err}");
    }

    #[test]
    fn names_the_missing_interpreter() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = script(tmp.path(), "a.sh", "#! /no/such/shell -e\necho\n", 0o755);
        let err = check_executable(&path, tmp.path()).expect_err("missing interpreter");
        let text = err.to_string();
        assert!(
            text.contains("`/no/such/shell`") && text.contains("a.sh"),
            "{text}"
        );
    }

    #[test]
    fn rejects_non_executable_and_missing_programs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = script(tmp.path(), "plain", "#!/bin/sh\n", 0o644);
        // Root may execute any file with at least one execute bit, and none is set here.
        assert!(matches!(
            check_executable(&path, tmp.path()),
            Err(SpawnError::NotExecutable { .. })
        ));
        assert!(matches!(
            check_executable(&tmp.path().join("gone"), tmp.path()),
            Err(SpawnError::ProgramMissing { .. })
        ));
        assert!(matches!(
            check_executable(tmp.path(), tmp.path()),
            Err(SpawnError::NotExecutable { .. })
        ));
    }

    #[test]
    fn accepts_binaries_and_valid_scripts() {
        let tmp = tempfile::tempdir().expect("tempdir");
        check_executable(Path::new("/bin/sh"), tmp.path()).expect("a binary");
        let path = script(tmp.path(), "ok.sh", "#!/bin/sh\necho\n", 0o755);
        check_executable(&path, tmp.path()).expect("a script with a present interpreter");
    }

    #[test]
    fn checks_the_working_directory() {
        let tmp = tempfile::tempdir().expect("tempdir");
        check_cwd(tmp.path()).expect("a directory");
        let file = script(tmp.path(), "f", "", 0o644);
        let err = check_cwd(&file).expect_err("a file");
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err = check_cwd(&tmp.path().join("gone")).expect_err("missing");
        assert!(err.to_string().contains("gone` does not exist"), "{err}");
    }
}
