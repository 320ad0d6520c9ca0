//! Finding adapters by name: a project's own `.loopx/adapters/NAME.toml` first, then the files
//! shipped in `adapters/`, which are embedded so an installed `loopx` needs no data directory.

use std::path::{Path, PathBuf};

use super::spec::Adapter;
use super::validate::parse_adapter;
use crate::config::{is_id, read_named_file};
use crate::errors::{ConfigKind, LoadError};

/// The shipped adapter files, as `(name, contents)`.
pub const BUILTIN_ADAPTERS: [(&str, &str); 8] = [
    (
        "claude-code",
        include_str!("../../../../adapters/claude-code.toml"),
    ),
    ("codex", include_str!("../../../../adapters/codex.toml")),
    ("gemini", include_str!("../../../../adapters/gemini.toml")),
    ("cursor", include_str!("../../../../adapters/cursor.toml")),
    ("qwen", include_str!("../../../../adapters/qwen.toml")),
    (
        "opencode",
        include_str!("../../../../adapters/opencode.toml"),
    ),
    ("generic", include_str!("../../../../adapters/generic.toml")),
    ("demo", include_str!("../../../../adapters/demo.toml")),
];

/// Where adapters are looked up.
#[derive(Debug, Clone, Default)]
pub struct AdapterCatalog {
    /// Directories searched before the built-in adapters, in order.
    pub dirs: Vec<PathBuf>,
}

impl AdapterCatalog {
    /// Only the built-in adapters.
    pub fn builtin() -> Self {
        Self::default()
    }

    /// A project's `.loopx/adapters/` (which need not exist), then the built-in adapters.
    pub fn with_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dirs: vec![dir.into()],
        }
    }

    /// Every adapter name available, sorted and deduplicated.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN_ADAPTERS
            .iter()
            .map(|(n, _)| (*n).to_owned())
            .collect();
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if let Some(name) = toml_stem(&path).filter(|n| is_id(n)) {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// Whether an adapter by this name exists (without validating it).
    pub fn contains(&self, name: &str) -> bool {
        self.names().iter().any(|n| n == name)
    }

    /// Load and validate the adapter `name`. `Ok(None)` when there is no such adapter.
    pub fn load(&self, name: &str) -> Result<Option<Adapter>, LoadError> {
        if !is_id(name) {
            return Ok(None);
        }
        for dir in &self.dirs {
            let path = dir.join(format!("{name}.toml"));
            if path.is_file() {
                return load_adapter_file(&path).map(Some);
            }
        }
        match BUILTIN_ADAPTERS.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => parse_adapter(n, &format!("<builtin>/adapters/{n}.toml"), text)
                .map(Some)
                .map_err(LoadError::Invalid),
            None => Ok(None),
        }
    }
}

/// Load and validate one adapter file; its name is the file stem.
pub fn load_adapter_file(path: &Path) -> Result<Adapter, LoadError> {
    let (name, text) = read_named_file(path, ConfigKind::Adapter)?;
    parse_adapter(name, &path.display().to_string(), &text).map_err(LoadError::Invalid)
}

pub(crate) fn toml_stem(path: &Path) -> Option<&str> {
    (path.extension()? == "toml").then_some(())?;
    path.file_stem()?.to_str()
}

/// Parse and validate an adapter given as text. `file` is how errors name it.
pub fn load_adapter_str(name: &str, file: &str, text: &str) -> Result<Adapter, LoadError> {
    parse_adapter(name, file, text).map_err(LoadError::Invalid)
}
