//! How the projections of the kernel off the machine (the Lark board) are doing: each writes
//! its health after every pass to `.loopx/projections/<name>.json`, and `status` shows it. A
//! projection's failure never stops the loop; this is where a person sees it. The directory is
//! loopx's own (the scope check does not count it as a slice's change) and ignored by git
//! (`loopx init` writes the line; `loopx run` adds it to an older project before any slice).

use std::path::Path;

use loopx_kernel::Timestamp;
use serde::{Deserialize, Serialize};

use crate::{App, AppError, ConfigError};

/// One projection's last pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectionHealth {
    /// `lark`.
    pub name: String,
    /// The last pass that brought it in step.
    pub ok_at: Option<Timestamp>,
    /// Since when its passes fail; `None` while the last one succeeded.
    pub failing_since: Option<Timestamp>,
    /// The last failure, in words.
    pub error: Option<String>,
    /// What it shows, in a few words (`table tbl1, 12 records; 2 questions posted`).
    pub detail: String,
}

impl App {
    /// Every projection's health, by name.
    pub fn projection_health(&self) -> Vec<ProjectionHealth> {
        let Ok(entries) = std::fs::read_dir(self.project().projections_dir()) else {
            return Vec::new();
        };
        let mut out: Vec<ProjectionHealth> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Records `health` for `status` (replacing the projection's previous one whole).
    pub fn record_projection_health(&self, health: &ProjectionHealth) -> Result<(), AppError> {
        let dir = self.project().projections_dir();
        let bytes = serde_json::to_vec(health).map_err(ConfigError::ProjectionEncode)?;
        write_atomically(&dir.join(format!("{}.json", health.name)), &bytes)
            .map_err(|why| ConfigError::ProjectionWrite { dir, why }.into())
    }
}

/// Writes `bytes` to `path` whole or not at all (a temporary file renamed over it), making its
/// directory first.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
