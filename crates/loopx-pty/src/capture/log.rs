//! The raw output log: the first `head` bytes written as they arrive, the last `tail` bytes
//! held in a ring and written at the end after a marker line naming how many bytes were dropped
//! in between. Memory stays at `tail` bytes whatever the agent prints.
//!
//! The log's whole bounded size is reserved on disk when it is created (`fallocate` on Linux,
//! `F_PREALLOCATE` on macOS, keeping the file's size), so a disk that fills during the slice cannot cut it short; the reservation
//! beyond what was written is given back at the end. Where that is not possible (the disk was
//! full already, or the filesystem cannot reserve), a write that fails stops logging but not
//! the slice: bytes are still counted, and at the end the log gets a line saying where and why
//! it was cut short — made room for, on a disk that is still full, by giving back the log's
//! last block.
//!
//! The head goes through a 64 KiB buffer, so a flood costs one `write` per 64 KiB; the
//! capture's flusher ([`CappedLog::flush`], every [`FLUSH_EVERY`]) writes out what it holds,
//! so a person following a running slice sees a line within a second of its printing.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long output may wait in memory (the buffer, the mask's held-back bytes) before it is
/// written to the log file.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(250);

/// Exact byte counts of a capped log. `bytes_logged + bytes_dropped == bytes_total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounts {
    /// Every byte the agent printed.
    pub bytes_total: u64,
    /// Bytes of agent output in the log file (the marker line is not counted).
    pub bytes_logged: u64,
    /// Bytes dropped between head and tail.
    pub bytes_dropped: u64,
}

pub(crate) struct CappedLog {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    head_cap: usize,
    head_len: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
    error: Option<std::io::Error>,
    /// Written to the buffer since the last flush.
    dirty: bool,
}

impl CappedLog {
    /// Creates (or truncates) the log file, readable by its owner only. A symlink in its
    /// place (an agent can write where the log goes when `.loopx/` is not hidden from it) is
    /// refused, not followed: the log must not become a write into another file.
    pub(crate) fn create(path: &Path, head_cap: usize, tail_cap: usize) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(path)?;
        reserve(
            &file,
            head_cap
                .saturating_add(tail_cap)
                .saturating_add(MARKER_ROOM),
        );
        Ok(Self {
            path: path.to_path_buf(),
            file: Some(BufWriter::with_capacity(64 << 10, file)),
            head_cap,
            head_len: 0,
            tail: VecDeque::new(),
            tail_cap,
            total: 0,
            error: None,
            dirty: false,
        })
    }

    /// Records `bytes`; returns how many leading bytes of them went into the head.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> usize {
        self.total += bytes.len() as u64;
        let to_head = bytes.len().min(self.head_cap - self.head_len);
        if to_head > 0 {
            self.head_len += to_head;
            self.write_file(&bytes[..to_head]);
        }
        let rest = &bytes[to_head..];
        if rest.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - self.tail_cap..]);
        } else if !rest.is_empty() {
            let excess = (self.tail.len() + rest.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
            self.tail.extend(rest);
        }
        to_head
    }

    /// Bytes not kept so far.
    fn dropped(&self) -> u64 {
        self.total - self.head_len as u64 - self.tail.len() as u64
    }

    fn write_file(&mut self, bytes: &[u8]) {
        if let Some(file) = &mut self.file {
            match file.write_all(bytes) {
                Ok(()) => self.dirty = true,
                Err(err) => self.fail(err),
            }
        }
    }

    /// Writes out what the buffer holds (the live view of a running slice).
    pub(crate) fn flush(&mut self) {
        if std::mem::take(&mut self.dirty)
            && let Some(file) = &mut self.file
            && let Err(err) = file.flush()
        {
            self.fail(err);
        }
    }

    /// A full disk must not stop the slice: stop logging, keep counting, report it.
    fn fail(&mut self, err: std::io::Error) {
        tracing::warn!(error = %err, "slice log write failed; logging stopped");
        self.error = Some(err);
        self.file = None;
    }

    /// Writes the marker and the tail, flushes, and returns the counts, the tail bytes (for
    /// the text view) and the first write error, if any.
    pub(crate) fn finish(mut self) -> (LogCounts, Vec<u8>, Option<std::io::Error>) {
        let dropped = self.dropped();
        if dropped > 0 {
            let marker = format!(
                "\n[loopx: {dropped} bytes dropped here; {} bytes total, first {} and last {} kept]\n",
                self.total,
                self.head_len,
                self.tail.len()
            );
            self.write_file(marker.as_bytes());
        }
        let tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        self.write_file(&tail);
        if let Some(mut file) = self.file.take() {
            match file.flush() {
                // Give back what the reservation held beyond the end.
                Ok(()) => {
                    let file = file.get_ref();
                    if let Ok(meta) = file.metadata() {
                        let _ = file.set_len(meta.len());
                    }
                }
                Err(err) => {
                    self.error.get_or_insert(err);
                }
            }
        }
        let mut counts = LogCounts {
            bytes_total: self.total,
            bytes_logged: self.head_len as u64 + tail.len() as u64,
            bytes_dropped: dropped,
        };
        if let Some(err) = &self.error {
            let logged = cut_short(&self.path, err, self.total);
            counts.bytes_logged = logged.min(self.total);
            counts.bytes_dropped = self.total - counts.bytes_logged;
        }
        (counts, tail, self.error)
    }
}

/// Room for the marker line between head and tail, and a note.
const MARKER_ROOM: usize = 4096;

/// Reserves `len` bytes of disk for `file` without changing its size. Best effort: a disk
/// that is full already, or a filesystem that cannot reserve, leaves the log as it was.
fn reserve(file: &File, len: usize) {
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    if let Err(e) = loopx_os::reserve(file, len) {
        tracing::debug!(error = %e, "cannot reserve room for the slice log");
    }
}

/// Ends a log whose writing failed with a line saying so; returns how many bytes of output
/// the file keeps. When the line itself does not fit (the disk is still full), the log's last
/// block is given back to make room for it.
fn cut_short(path: &Path, err: &std::io::Error, total: u64) -> u64 {
    const BLOCK: u64 = 4096;
    let opened = std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::OpenOptions::new().append(true),
        nix::libc::O_NOFOLLOW,
    )
    .open(path);
    let Ok(mut file) = opened else {
        return 0;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return 0;
    };
    let note = |kept: u64| {
        format!(
            "\n[loopx: the log was cut short here: {err}; {} of {total} bytes of output were not logged]\n",
            total.saturating_sub(kept)
        )
    };
    if file
        .write_all(note(len).as_bytes())
        .and_then(|()| file.flush())
        .is_ok()
    {
        return len;
    }
    // The note may have been written in part: cut back to a block boundary below both.
    let kept = len.saturating_sub(BLOCK) / BLOCK * BLOCK;
    if file.set_len(kept).is_err() {
        return len;
    }
    let _ = file.write_all(note(kept).as_bytes());
    kept
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn run(chunks: &[Vec<u8>], head: usize, tail: usize) -> (LogCounts, Vec<u8>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("slice.log");
        let mut log = CappedLog::create(&path, head, tail).expect("create log");
        for chunk in chunks {
            log.write(chunk);
        }
        let (counts, _, error) = log.finish();
        assert!(error.is_none());
        (counts, std::fs::read(&path).expect("read log"))
    }

    #[test]
    fn keeps_everything_under_the_caps() {
        let (counts, file) = run(&[b"hello ".to_vec(), b"world".to_vec()], 4, 16);
        assert_eq!(file, b"hello world");
        assert_eq!(counts.bytes_dropped, 0);
        assert_eq!(counts.bytes_logged, 11);
    }

    #[test]
    fn marks_the_dropped_middle() {
        let (counts, file) = run(&[b"0123456789".to_vec(), b"abcdef".to_vec()], 3, 4);
        assert_eq!(
            counts,
            LogCounts {
                bytes_total: 16,
                bytes_logged: 7,
                bytes_dropped: 9
            }
        );
        let text = String::from_utf8(file).expect("ascii");
        assert_eq!(
            text,
            "012\n[loopx: 9 bytes dropped here; 16 bytes total, first 3 and last 4 kept]\ncdef"
        );
    }

    #[test]
    fn a_log_cut_short_by_a_full_disk_says_so() {
        // `/dev/full` fails every write with ENOSPC, as a full disk does.
        let mut log = CappedLog {
            path: PathBuf::from("/dev/full"),
            file: Some(BufWriter::with_capacity(
                8,
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .expect("/dev/full"),
            )),
            head_cap: 100,
            head_len: 0,
            tail: VecDeque::new(),
            tail_cap: 10,
            total: 0,
            error: None,
            dirty: false,
        };
        log.write(b"0123456789abcdef");
        let (counts, _, error) = log.finish();
        let error = error.expect("the write failed");
        assert_eq!(error.raw_os_error(), Some(nix::libc::ENOSPC));
        assert_eq!(counts.bytes_total, 16);
        assert_eq!(counts.bytes_logged + counts.bytes_dropped, 16);

        // A real file: the note follows what was written.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s1.log");
        std::fs::write(&path, b"0123456789").expect("write");
        let kept = cut_short(
            &path,
            &std::io::Error::from_raw_os_error(nix::libc::ENOSPC),
            30,
        );
        assert_eq!(kept, 10);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(
            text.starts_with(
                "0123456789\n[loopx: the log was cut short here: No space left on device"
            ) && text.ends_with("20 of 30 bytes of output were not logged]\n"),
            "{text}"
        );
    }

    proptest! {
        #[test]
        fn head_and_tail_are_exact(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32),
            head in 0usize..100,
            tail in 0usize..100,
        ) {
            let all: Vec<u8> = chunks.concat();
            let (counts, file) = run(&chunks, head, tail);
            prop_assert_eq!(counts.bytes_total, all.len() as u64);
            prop_assert_eq!(counts.bytes_logged + counts.bytes_dropped, counts.bytes_total);
            let kept_head = &all[..head.min(all.len())];
            let kept_tail = &all[all.len() - (all.len() - kept_head.len()).min(tail)..];
            prop_assert!(file.starts_with(kept_head));
            prop_assert!(file.ends_with(kept_tail));
            if counts.bytes_dropped == 0 {
                prop_assert_eq!(&file, &all);
            }
        }
    }
}
