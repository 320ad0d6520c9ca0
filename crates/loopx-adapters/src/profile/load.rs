//! Loading profiles from files and directories.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::raw::{RawProfile, known_keys};
use super::spec::{ContentHash, Profile};
use super::validate::validate;
use crate::adapter::{Adapter, AdapterCatalog, toml_stem};
use crate::config::{Problems, did_you_mean, is_id, parse_document, read_named_file};
use crate::errors::{ConfigKind, LoadError};

/// A valid profile together with its adapter and the content hash of both files.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedProfile {
    /// The profile.
    pub profile: Profile,
    /// Its adapter.
    pub adapter: Adapter,
    /// Hash of the profile file and the adapter file (binds `full` approvals).
    pub content_hash: ContentHash,
}

impl LoadedProfile {
    /// Why its program cannot be found through `path_var` (a bare name) or at its path: the
    /// sentence names the program and how to install it. `None` when it is there, or is the
    /// running loopx (`{loopx}`).
    pub fn program_missing(&self, path_var: Option<&std::ffi::OsStr>) -> Option<String> {
        let program = self
            .profile
            .program
            .as_deref()
            .or(self.adapter.program.as_deref())?;
        // The running loopx, or a path relative to the directory the slice runs in.
        if program.contains("{loopx}") || (program.contains('/') && !program.starts_with('/')) {
            return None;
        }
        let runs = |path: &Path| {
            std::fs::metadata(path).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        };
        let found = match program.contains('/') {
            true => runs(Path::new(program)),
            false => path_var
                .map(std::env::split_paths)
                .into_iter()
                .flatten()
                .filter(|dir| dir.is_absolute())
                .any(|dir| runs(&dir.join(program))),
        };
        if found {
            return None;
        }
        let install = match &self.adapter.install {
            Some(how) => format!("install it: {how}"),
            None => "install it, or set `program` in the profile to where it is".to_owned(),
        };
        Some(match program.contains('/') {
            true => format!("`{program}` is not an executable file; {install}"),
            false => format!("`{program}` is not on PATH; {install}"),
        })
    }
}

/// One file of a profiles directory and what loading it gave.
#[derive(Debug)]
pub struct ProfileEntry {
    /// The profile name (file stem).
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// The loaded profile, or why it is invalid.
    pub result: Result<LoadedProfile, LoadError>,
}

/// Parse and validate a profile given as text. `file` is how errors name it.
pub fn load_profile_str(
    name: &str,
    file: &str,
    text: &str,
    catalog: &AdapterCatalog,
) -> Result<LoadedProfile, LoadError> {
    let mut problems = Problems::new(file, text);
    let raw: Option<RawProfile> = parse_document(text, known_keys, &mut problems);
    let validated = match raw {
        Some(raw) => validate(name, raw, catalog, &mut problems)?,
        None => None,
    };
    let (mut profile, adapter) = problems
        .finish(ConfigKind::Profile, name, validated)
        .map_err(LoadError::Invalid)?;
    profile.file = file.to_owned();
    let content_hash = ContentHash::of(text.as_bytes(), &adapter.bytes);
    Ok(LoadedProfile {
        profile,
        adapter,
        content_hash,
    })
}

/// Load one profile file; its name is the file stem.
pub fn load_profile_file(
    path: &Path,
    catalog: &AdapterCatalog,
) -> Result<LoadedProfile, LoadError> {
    let (name, text) = read_named_file(path, ConfigKind::Profile)?;
    load_profile_str(name, &path.display().to_string(), &text, catalog)
}

/// Every `*.toml` in `dir` (e.g. a project's `.loopx/profiles/`), sorted by name. A missing
/// directory has no profiles; an unreadable one is an error.
pub fn load_profiles_dir(
    dir: &Path,
    catalog: &AdapterCatalog,
) -> Result<Vec<ProfileEntry>, LoadError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(LoadError::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut out: Vec<ProfileEntry> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| ProfileEntry {
            name: toml_stem(&path).unwrap_or_default().to_owned(),
            result: load_profile_file(&path, catalog),
            path,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The profile `name` in `dir`, with a "did you mean" when it does not exist.
pub fn find_profile(
    dir: &Path,
    name: &str,
    catalog: &AdapterCatalog,
) -> Result<LoadedProfile, LoadError> {
    let path = dir.join(format!("{name}.toml"));
    if is_id(name) && path.is_file() {
        return load_profile_file(&path, catalog);
    }
    let names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| toml_stem(&e.path()).map(str::to_owned))
        .collect();
    let hint = match did_you_mean(name, names.iter().map(String::as_str)) {
        Some(best) => format!("\n(hint: did you mean `{best}`?)"),
        None if names.is_empty() => "\n(hint: copy an example from loopx's `profiles/`)".to_owned(),
        None => format!("\n(hint: profiles here: {})", names.join(", ")),
    };
    Err(LoadError::UnknownProfile {
        name: name.to_owned(),
        dir: dir.to_owned(),
        hint,
    })
}
