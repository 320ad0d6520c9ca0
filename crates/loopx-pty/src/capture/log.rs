//! The raw output log: the first `head` bytes written as they arrive, the last `tail` bytes
//! held in a ring and written at the end after a marker line naming how many bytes were dropped
//! in between. Memory stays at `tail` bytes whatever the agent prints.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

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
    file: Option<BufWriter<File>>,
    head_cap: usize,
    head_len: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
    error: Option<std::io::Error>,
}

impl CappedLog {
    /// Creates (or truncates) the log file.
    pub(crate) fn create(path: &Path, head_cap: usize, tail_cap: usize) -> std::io::Result<Self> {
        let file = File::create(path)?;
        Ok(Self {
            file: Some(BufWriter::with_capacity(64 << 10, file)),
            head_cap,
            head_len: 0,
            tail: VecDeque::new(),
            tail_cap,
            total: 0,
            error: None,
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
        if let Some(file) = &mut self.file
            && let Err(err) = file.write_all(bytes)
        {
            // A full disk must not stop the slice: stop logging, keep counting, report it.
            tracing::warn!(error = %err, "slice log write failed; logging stopped");
            self.error = Some(err);
            self.file = None;
        }
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
        if let Some(mut file) = self.file.take()
            && let Err(err) = file.flush()
        {
            self.error.get_or_insert(err);
        }
        let counts = LogCounts {
            bytes_total: self.total,
            bytes_logged: self.head_len as u64 + tail.len() as u64,
            bytes_dropped: dropped,
        };
        (counts, tail, self.error)
    }
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
