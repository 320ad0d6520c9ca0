//! Changing one section of `.loopx/loopx.toml` for a person's command (`loopx notify set`),
//! keeping everything else in the file as the person wrote it: comments, order, spacing.
//!
//! The file is edited as a TOML document (`toml_edit`), checked with the same loader `loopx run`
//! uses before it is written, and written whole or not at all (a temporary file renamed over
//! it, with the old file's mode): an edit never leaves a file that `loopx run` would refuse,
//! and a file that is already invalid is not touched — its problems are returned instead.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::errors::LoadError;
use crate::project::{NotifyConfig, PROJECT_CONFIG_FILE, ProjectConfig, project_config_str};

/// Why the project's settings could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The file as it is (or as it would be) does not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// It could not be read or written.
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Sets `[notify]`'s command in the project's `loopx.toml` to `notify` (removes it for `None`,
/// and the section when nothing else is in it),
/// creating the file when there is none. Returns the settings as loaded from the new text.
pub fn set_notify(
    state_dir: &Path,
    notify: Option<&NotifyConfig>,
) -> Result<ProjectConfig, EditError> {
    let path = state_dir.join(PROJECT_CONFIG_FILE);
    let old = match crate::config::read_regular_text(&path, crate::config::MAX_CONFIG_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(LoadError::Read { path, source }.into()),
    };
    let file = path.display().to_string();
    // The file as it is must load: an edit would otherwise hide (or add to) its problems.
    project_config_str(&file, &old)?;
    let mut doc: toml_edit::DocumentMut = old.parse().map_err(|e: toml_edit::TomlError| {
        // Unreachable once the loader accepted the text; said plainly if it ever is not.
        EditError::Write {
            path: path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
        }
    })?;
    // The command's keys only: a webhook set beside it (`webhook_env`) stays.
    let mut table = match doc.remove("notify") {
        Some(toml_edit::Item::Table(table)) => table,
        _ => toml_edit::Table::new(),
    };
    match notify {
        Some(notify) => {
            table["command"] = toml_edit::value(notify.command.as_str());
            table["timeout"] =
                toml_edit::value(humantime::format_duration(notify.timeout).to_string());
        }
        None => {
            table.remove("command");
            table.remove("timeout");
        }
    }
    if !table.is_empty() {
        doc["notify"] = toml_edit::Item::Table(table);
    }
    let new = doc.to_string();
    let config = project_config_str(&file, &new)?;
    write_whole(&path, new.as_bytes()).map_err(|source| EditError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(config)
}

/// Writes `bytes` over `path` whole or not at all, keeping its mode (0600 for a new file: the
/// file may name a database).
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o777);
    let tmp = path.with_extension(format!("toml.tmp{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn notify(command: &str) -> NotifyConfig {
        NotifyConfig {
            command: command.to_owned(),
            timeout: Duration::from_secs(10),
        }
    }

    #[test]
    fn setting_notify_keeps_the_rest_of_the_file_as_written() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(PROJECT_CONFIG_FILE);
        std::fs::write(
            &path,
            "# my budget\n[budget]\nslices = 20 # per todo\n\n[notify]\ncommand = \"old\"\n",
        )
        .expect("write");
        let config = set_notify(dir.path(), Some(&notify("echo \"hi\""))).expect("set");
        assert_eq!(config.notify, Some(notify("echo \"hi\"")));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.starts_with("# my budget\n[budget]\nslices = 20 # per todo\n"),
            "{text}"
        );
        assert!(!text.contains("old"), "{text}");
        set_notify(dir.path(), None).expect("off");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("notify"), "{text}");
        assert!(text.contains("slices = 20 # per todo"), "{text}");
    }

    #[test]
    fn the_command_comes_and_goes_and_the_webhook_stays() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(PROJECT_CONFIG_FILE);
        std::fs::write(&path, "[notify]\nwebhook_env = \"HOOK\"\n").expect("write");
        let config = set_notify(dir.path(), Some(&notify("true"))).expect("set");
        assert_eq!(config.notify, Some(notify("true")));
        assert_eq!(config.webhook.map(|w| w.env).as_deref(), Some("HOOK"));
        let config = set_notify(dir.path(), None).expect("off");
        assert_eq!(config.notify, None);
        assert_eq!(config.webhook.map(|w| w.env).as_deref(), Some("HOOK"));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("command"), "{text}");
    }

    #[test]
    fn an_invalid_file_is_left_as_it_is_and_its_problem_named() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(PROJECT_CONFIG_FILE);
        std::fs::write(&path, "[budget]\nslicez = 20\n").expect("write");
        let err = set_notify(dir.path(), Some(&notify("true"))).expect_err("refused");
        let EditError::Load(LoadError::Invalid(invalid)) = &err else {
            panic!("not the file's problems: {err:?}");
        };
        assert!(invalid.one_line_each().contains("slicez"), "{err:?}");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "[budget]\nslicez = 20\n"
        );
    }
}
