//! The redb file under the store: waiting with backoff while another process holds it,
//! shielding the caller from a panic inside redb (a damaged file), and checking a file's
//! header before redb opens it, so that a file that is not a store is never modified.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use redb::{Database, DatabaseError, TransactionError, WriteTransaction};

use super::open::OpenOptions;
use crate::errors::{KernelError, StoreError};

/// redb's file signature (`tree_store/page_store/header.rs` in redb 4.6).
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// Begins a write transaction on `db` (the file `path`), waiting with jittered backoff while
/// another process writes, at most `wait`.
pub(crate) fn begin_redb_write(
    db: &Database,
    path: &Path,
    wait: Duration,
) -> Result<WriteTransaction, KernelError> {
    let started = Instant::now();
    let mut backoff = Backoff::new();
    loop {
        match db.try_begin_write() {
            Ok(txn) => return Ok(txn),
            Err(TransactionError::WouldBlock) if started.elapsed() < wait => backoff.sleep(),
            Err(TransactionError::WouldBlock) => return Err(busy(path, started).into()),
            Err(e) => return Err(redb_error(path, e.into()).into()),
        }
    }
}

/// A redb error as the store reports it: an I/O failure (a full disk) by name.
pub(crate) fn redb_error(path: &Path, e: redb::Error) -> StoreError {
    match e {
        redb::Error::Io(source) => StoreError::io(path, source),
        redb::Error::PreviousIo => StoreError::Reopen {
            path: path.to_path_buf(),
        },
        // After a failed commit redb discards the handle's allocator state until a reopen
        // rebuilds it (redb 4.6, `db.rs`); the file itself is intact.
        redb::Error::Corrupted(why) if why.contains("reopen the database") => StoreError::Reopen {
            path: path.to_path_buf(),
        },
        source => StoreError::Redb {
            path: path.to_path_buf(),
            source: Box::new(source),
        },
    }
}

pub(crate) fn read_only(path: &Path) -> KernelError {
    StoreError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other("this store handle was opened read-only (a bug in loopx)"),
    }
    .into()
}

/// Opens with `open`, retrying while another process has the file exclusively, and gives up
/// after the wait. The open runs on its own thread: redb's open blocks (without a timeout) while
/// another process is inside a write transaction, and a stuck peer must become a clear error
/// rather than a hung command.
pub(crate) fn open_retrying<T: Send + 'static>(
    path: &Path,
    options: &OpenOptions,
    open: impl Fn(&Path) -> Result<T, DatabaseError> + Send + 'static,
) -> Result<T, StoreError> {
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let owned = path.to_path_buf();
    let wait = options.wait;
    std::thread::Builder::new()
        .name("store-open".to_owned())
        .spawn(move || {
            let mut backoff = Backoff::new();
            // redb panics on some damage; that is an answer too, not a busy store.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                loop {
                    match open(&owned) {
                        Err(DatabaseError::DatabaseAlreadyOpen) if started.elapsed() < wait => {
                            backoff.sleep()
                        }
                        other => break other,
                    }
                }
            }))
            .map_err(|payload| {
                // Opening runs redb's code alone: a panic here is the file's, not a bug.
                let _ = crate::panic_site::take();
                panic_message(payload.as_ref())
            });
            let _ = tx.send(result);
        })
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let result = match rx.recv_timeout(options.wait + Duration::from_millis(50)) {
        Ok(Ok(result)) => result,
        Ok(Err(panicked)) => return Err(damaged_by_panic(path, &panicked)),
        Err(_) => return Err(busy(path, started)),
    };
    result.map_err(|e| match e {
        DatabaseError::DatabaseAlreadyOpen => busy(path, started),
        DatabaseError::Storage(redb::StorageError::Io(source)) => StoreError::io(path, source),
        DatabaseError::Storage(redb::StorageError::Corrupted(why)) => StoreError::Damaged {
            path: path.to_path_buf(),
            why,
        },
        DatabaseError::UpgradeRequired(version) => StoreError::Corrupt {
            path: path.to_path_buf(),
            why: format!("redb file format {version} needs an upgrade"),
        },
        source => StoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(source),
        },
    })
}

/// Runs `f`, turning a panic inside redb (which panics on some damage instead of returning an
/// error) into a `Damaged` error naming the file, and a panic in loopx's own code into a `Bug`
/// naming its location (`panic_site`). A simulated crash (`fault`) unwinds on.
pub(crate) fn shielded<T>(
    path: &Path,
    f: impl FnOnce() -> Result<T, KernelError>,
) -> Result<T, KernelError> {
    shield(path, f).unwrap_or_else(|damaged| Err(damaged.into()))
}

/// [`shielded`] for any result: `Err` only when `f` panicked.
pub(crate) fn shield<T>(path: &Path, f: impl FnOnce() -> T) -> Result<T, StoreError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => Ok(result),
        Err(payload) if payload.is::<crate::fault::Crashed>() => std::panic::resume_unwind(payload),
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            Err(match crate::panic_site::take() {
                Some(site) if !site.in_engine() => StoreError::Bug {
                    path: path.to_path_buf(),
                    location: site.to_string(),
                    message,
                },
                _ => damaged_by_panic(path, &message),
            })
        }
    }
}

fn damaged_by_panic(path: &Path, message: &str) -> StoreError {
    StoreError::Damaged {
        path: path.to_path_buf(),
        why: format!("its database engine gave up reading it ({message})"),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

/// Refuses files redb would misread or silently rewrite, without writing a byte.
pub(crate) fn precheck(path: &Path) -> Result<(), StoreError> {
    let len = precheck_header(path)?;
    // redb's smallest valid file holds the header page plus at least one region; anything
    // shorter was cut off, and opening it read-write would "repair" it into something else.
    if len < MIN_STORE_LEN {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            why: format!("it is truncated ({len} bytes)"),
        });
    }
    Ok(())
}

/// Refuses what is not a regular, non-empty file that starts as redb does; its length.
pub(crate) fn precheck_header(path: &Path) -> Result<u64, StoreError> {
    // A FIFO in the store's place would block the open for ever (and a device never end):
    // only a regular file is a store.
    let mut file = match crate::toml_file::open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let len = file
        .metadata()
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    if len == 0 {
        return Err(StoreError::Empty {
            path: path.to_path_buf(),
        });
    }
    let mut head = [0u8; REDB_MAGIC.len()];
    if len < head.len() as u64 || file.read_exact(&mut head).is_err() || head != REDB_MAGIC {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            why: "it does not start with a redb header".to_owned(),
        });
    }
    Ok(len)
}

/// Measured: a fresh loopx store is about 1.6 MiB; anything under a few pages is cut off.
const MIN_STORE_LEN: u64 = 16 * 1024;

fn busy(path: &Path, started: Instant) -> StoreError {
    let holders = holders_of(path);
    let holders = if holders.is_empty() {
        String::new()
    } else {
        format!(" (open in {})", holders.join(", "))
    };
    StoreError::Busy {
        path: path.to_path_buf(),
        waited_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        holders,
    }
}

/// The other processes that have `path` open: `pid 4242 (loopx run)`.
pub(crate) fn holders_of(path: &Path) -> Vec<String> {
    let me = std::process::id();
    let Ok(target) = fs::canonicalize(path) else {
        return Vec::new();
    };
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| fs::read_link(fd.path()).is_ok_and(|link| link == target))
        {
            let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmd: Vec<String> = cmdline
                .split(|b| *b == 0)
                .filter(|part| !part.is_empty())
                .take(3)
                .map(|part| String::from_utf8_lossy(part).into_owned())
                .collect();
            found.push(format!("pid {pid} ({})", cmd.join(" ")));
        }
    }
    found
}

/// Exponential backoff with full jitter, so that racing processes spread out.
struct Backoff {
    ceiling: Duration,
}

impl Backoff {
    fn new() -> Self {
        Backoff {
            ceiling: Duration::from_micros(500),
        }
    }

    fn sleep(&mut self) {
        let nanos = u64::try_from(self.ceiling.as_nanos()).unwrap_or(u64::MAX);
        std::thread::sleep(Duration::from_nanos(fastrand::u64(nanos / 4..=nanos)));
        self.ceiling = (self.ceiling * 2).min(Duration::from_millis(25));
    }
}
