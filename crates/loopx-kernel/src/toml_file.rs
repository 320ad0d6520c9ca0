//! Reading a configuration file: `.loopx/loopx.toml` (by the store's lookup of `[store] url`
//! and by `loopx-adapters`' typed loader alike), profiles and adapters. One reader, so that a
//! FIFO, a device or a huge file is refused the same way on every path, and a file that does
//! not parse is named with its line wherever it is read.

use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::DeTable;

/// The largest configuration file loopx reads (a profile, an adapter, `loopx.toml`).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Opens `path` for reading only if it is a regular file: a FIFO would block the reader
/// forever and a device (a symlink to `/dev/zero`) would never end. The open itself does not
/// block on a FIFO (`O_NONBLOCK`); the type is checked on the opened file, so a swap between a
/// check and the open cannot sneak another kind in.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}; loopx reads only regular files",
            path.display()
        ),
    ))
}

/// Reads a regular file of at most `max` bytes as UTF-8 text (see [`open_regular`]).
pub fn read_regular_text(path: &Path, max: u64) -> std::io::Result<String> {
    let file = open_regular(path)?;
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is larger than {} KiB; loopx refuses files this large here",
                path.display(),
                max / 1024
            ),
        ));
    }
    Ok(text)
}

/// Why a configuration file could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum TomlFileError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The text is kept so that a caller can show the line, as the typed loader does.
    #[error("{}:{line}:{column}: invalid TOML: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        span: Range<usize>,
        message: String,
        text: String,
    },
}

/// Reads the TOML file at `path` (a regular file of at most [`MAX_CONFIG_BYTES`]), parses it,
/// and hands its text and its tree (every key and value with its span) to `parsed`; `None`
/// when there is no such file.
pub fn read_toml<T>(
    path: &Path,
    parsed: impl FnOnce(&str, Spanned<DeTable<'_>>) -> T,
) -> Result<Option<T>, TomlFileError> {
    let text = match read_regular_text(path, MAX_CONFIG_BYTES) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(TomlFileError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let tree = match DeTable::parse(&text) {
        Ok(tree) => tree,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let (line, column) = line_column(&text, span.start);
            return Err(TomlFileError::Syntax {
                path: path.to_owned(),
                line,
                column,
                span,
                message: e.message().trim().to_owned(),
                text,
            });
        }
    };
    Ok(Some(parsed(&text, tree)))
}

/// 1-based line and character column of a byte offset of `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_none_and_a_bad_one_names_its_line() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("loopx.toml");
        assert!(read_toml(&path, |_, _| ()).expect("missing").is_none());
        std::fs::write(&path, "[a]\nb = 1\nc = \n").expect("write");
        let err = read_toml(&path, |_, _| ()).expect_err("does not parse");
        assert!(
            matches!(err, TomlFileError::Syntax { line: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("loopx.toml:3:"), "{err}");
        std::fs::write(&path, "[a]\nb = 1\n").expect("write");
        let b = read_toml(&path, |_, tree| tree.get_ref().contains_key("a")).expect("parses");
        assert_eq!(b, Some(true));
    }

    #[test]
    fn line_and_column_count_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        let offset = text
            .find('=')
            .map(|_| text.rfind('=').expect("second '='"))
            .expect("an '='");
        assert_eq!(line_column(text, offset), (2, 4));
    }
}
