//! The account book: one quota ledger per account, shared by every project of this user.
//!
//! Two projects on one subscription would each think they have the whole window, so what an
//! account spent, and the holds on it, are kept in a per-user redb file (the surface names it,
//! [`crate::project::StoreSettings::account_book`]; `docs/quota.md`, "One ledger per account").
//! It is the kernel's quota table and meta table in a file of their own, opened the way the
//! store is (`open.rs`: multi-writer redb, per operation, busy waits with a bound, panics of a
//! damaged file contained), with its own format version. A spend runs its account's rules in
//! the book's write transaction, begun inside the project's: the project is always locked
//! first, so two projects never wait on each other in a circle. The book commits first; a
//! project commit that fails after it leaves the account charged for a spend not recorded,
//! which errs on the side of spending less.
//!
//! The book is soft state (windows roll, holds end) but never silently reset: a file that is
//! not a regular file, is too large, is not redb, or is of a newer format is an error naming
//! it, with a hint.

use std::cell::OnceCell;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{Database, DatabaseError, ReadOnlyDatabase, ReadableDatabase};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::codec::{decode, encode};
use super::kv::{Key, KvRead, KvReadExt, KvWrite, meta_bytes};
use super::open::{OpenOptions, Store, begin_redb_write, builder, open_retrying, shielded};
use super::redb_kv::{RedbKv, Txn};
use super::tables;
use crate::errors::{KernelError, StoreError};
use crate::model::QuotaHold;
use crate::time::Timestamp;

/// The book's format: its keys (`window/…`, `hold/…`, `spender/…`) and their records.
pub const BOOK_VERSION: u64 = 1;
const BOOK_VERSION_KEY: &str = "account_book_version";
/// Far more than an account book grows to (a few records per account); a larger file is
/// refused rather than read.
const MAX_BOOK_LEN: u64 = 1 << 30;

/// A project spending on an account, as the book records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spender {
    pub account: String,
    /// The project's root directory.
    pub project: String,
    pub spends: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    pub last_at: Timestamp,
}

/// One account of the book: the projects spending on it, its holds and its windows' state
/// (`W`, the rules' own record, by the window's period in milliseconds).
#[derive(Debug, Clone)]
pub struct BookAccount<W> {
    pub account: String,
    pub projects: Vec<Spender>,
    pub holds: Vec<QuotaHold>,
    pub windows: Vec<(u64, W)>,
}

/// The book's handle: read-write for a change, read-only (which never modifies the file) for a
/// read, as the store's (`open.rs`).
enum BookDb {
    Write(Database),
    Read(ReadOnlyDatabase),
    /// Only while the book is dropped.
    Closed,
}

impl Drop for AccountBook {
    fn drop(&mut self) {
        // A batch's writes not finished (a panic in the batch) are dropped, before the file.
        if let Some(txn) = self.pending.get_mut().take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(txn)));
        }
        // As the store's: redb can panic closing a damaged file, which is going away anyway.
        let db = std::mem::replace(&mut self.db, BookDb::Closed);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(db)));
    }
}

/// An open account book.
pub struct AccountBook {
    db: BookDb,
    path: PathBuf,
    wait: Duration,
    /// The project this process spends for (its root), recorded with each spend.
    project: String,
    /// The write transaction of the project's batch under way: every write of the batch goes
    /// into it, and it commits just before the project's own, or not at all
    /// ([`AccountBook::finish`]), so a refused or retried batch leaves nothing in the book.
    pending: std::cell::RefCell<Option<redb::WriteTransaction>>,
}

impl std::fmt::Debug for AccountBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountBook")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl AccountBook {
    /// The project this handle writes for (its root, as the book names spenders).
    pub(crate) fn project(&self) -> &str {
        &self.project
    }

    /// Opens the book at `path`; when it does not exist it is created if `create`, else
    /// `None` (a read never creates it).
    pub fn open(
        path: &Path,
        wait: Duration,
        project: &str,
        create: bool,
    ) -> Result<Option<AccountBook>, KernelError> {
        shielded(path, || {
            if !checked_place(path, create)? {
                return Ok(None);
            }
            let options = OpenOptions { wait };
            let mut book = AccountBook {
                db: open_to_read(path, &options)?,
                path: path.to_path_buf(),
                wait,
                project: project.to_owned(),
                pending: std::cell::RefCell::new(None),
            };
            // Checked read-only first: a file that is not a book is never opened read-write
            // (which would rewrite redb's own state in it).
            book.check_version()?;
            if create {
                book.db = BookDb::Write(open_retrying(path, &options, |p| builder().open(p))?);
            }
            Ok(Some(book))
        })
    }

    /// The book's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every account the book keeps, by name.
    pub fn accounts<W: DeserializeOwned>(&self) -> Result<Vec<BookAccount<W>>, KernelError> {
        self.read(|kv| {
            let mut out = std::collections::BTreeMap::new();
            for (_, spender) in values::<Spender>(kv, "spender/")? {
                slot(&mut out, &spender.account.clone())
                    .projects
                    .push(spender);
            }
            for (_, hold) in values::<QuotaHold>(kv, "hold/")? {
                slot(&mut out, &hold.key.clone()).holds.push(hold);
            }
            for (key, window) in values::<W>(kv, "window/")? {
                let Some((account, period)) = key["window/".len()..].rsplit_once('/') else {
                    continue;
                };
                if let Ok(period) = period.parse::<u64>() {
                    slot(&mut out, account).windows.push((period, window));
                }
            }
            Ok(out.into_values().collect())
        })
    }

    /// Runs `f` on a snapshot of the book.
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&dyn KvRead) -> Result<T, KernelError>,
    ) -> Result<T, KernelError> {
        shielded(&self.path, || {
            let txn = match &self.db {
                BookDb::Write(db) => db.begin_read(),
                BookDb::Read(db) => db.begin_read(),
                BookDb::Closed => return Err(super::open::read_only(&self.path)),
            }
            .map_err(|e| self.redb(e))?;
            f(&RedbKv {
                txn: Txn::Read(txn),
                path: &self.path,
            })
        })
    }

    /// Runs `f` in a write transaction of the book, committed when `f` succeeds.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&dyn KvWrite) -> Result<T, KernelError>,
    ) -> Result<T, KernelError> {
        shielded(&self.path, || {
            let BookDb::Write(db) = &self.db else {
                return Err(super::open::read_only(&self.path));
            };
            let mut pending = self.pending.borrow_mut();
            if pending.is_none() {
                *pending = Some(begin_redb_write(db, &self.path, self.wait)?);
            }
            let Some(txn) = pending.as_ref() else {
                unreachable!("begun above")
            };
            f(&RedbKv {
                txn: Txn::Write(txn),
                path: &self.path,
            })
        })
    }

    /// Ends the batch's writes: commits them (`commit`, the project's batch about to commit)
    /// or drops them (the batch refused). A book never written in the batch has nothing to do.
    pub(crate) fn finish(&self, commit: bool) -> Result<(), KernelError> {
        let Some(txn) = self.pending.borrow_mut().take() else {
            return Ok(());
        };
        shielded(&self.path, || match commit {
            true => txn.commit().map_err(|e| self.redb(e)),
            false => txn.abort().map_err(|e| self.redb(e)),
        })
    }

    /// Records that this project spent on `account`.
    pub(crate) fn record_spender(
        &self,
        kv: &dyn KvWrite,
        account: &str,
        tokens: u64,
        cost_usd: f64,
        at: Timestamp,
    ) -> Result<(), KernelError> {
        let key = format!("spender/{account}/{}", self.project);
        let mut spender = get::<Spender>(kv, &key)?.unwrap_or(Spender {
            account: account.to_owned(),
            project: self.project.clone(),
            spends: 0,
            tokens: 0,
            cost_usd: 0.0,
            last_at: at,
        });
        spender.spends = spender.spends.saturating_add(1);
        spender.tokens = spender.tokens.saturating_add(tokens);
        spender.cost_usd += cost_usd;
        spender.last_at = at;
        put(kv, &key, &spender)
    }

    fn redb(&self, e: impl Into<redb::Error>) -> KernelError {
        super::open::redb_error(&self.path, e.into()).into()
    }

    /// Refuses a book of a newer loopx, a project's store, and any other redb file: a book is
    /// made whole, its version in it, before it is linked into place (`create_whole`), so a
    /// file without one is not loopx's and is never written.
    fn check_version(&self) -> Result<(), KernelError> {
        let refuse = |why: String| -> KernelError {
            StoreError::Book {
                path: self.path.clone(),
                why,
            }
            .into()
        };
        let (found, project) =
            self.read(|kv| Ok((kv.meta(BOOK_VERSION_KEY)?, kv.meta(tables::SCHEMA_KEY)?)))?;
        match found {
            Some(BOOK_VERSION) => Ok(()),
            Some(found) if found > BOOK_VERSION => Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                supported: BOOK_VERSION,
            }
            .into()),
            Some(found) => Err(refuse(format!("unknown account book version {found}"))),
            None if project.is_some() => Err(refuse(
                "it is a project's store, not the account book".to_owned(),
            )),
            None => Err(refuse(
                "it is a redb file without an account book version (not loopx's)".to_owned(),
            )),
        }
    }
}

/// Opens the book to read it, never modifying the file; one that needs recovery after a crash
/// is opened read-write, which repairs it (as the store's `open_read`).
fn open_to_read(path: &Path, options: &OpenOptions) -> Result<BookDb, StoreError> {
    match open_retrying(path, options, |p| builder().open_read_only(p)) {
        Ok(db) => Ok(BookDb::Read(db)),
        Err(StoreError::Open { source, .. }) if matches!(*source, DatabaseError::RepairAborted) => {
            Ok(BookDb::Write(open_retrying(path, options, |p| {
                builder().open(p)
            })?))
        }
        Err(e) => Err(e),
    }
}

fn slot<'m, W>(
    accounts: &'m mut std::collections::BTreeMap<String, BookAccount<W>>,
    account: &str,
) -> &'m mut BookAccount<W> {
    accounts
        .entry(account.to_owned())
        .or_insert_with(|| BookAccount {
            account: account.to_owned(),
            projects: Vec::new(),
            holds: Vec::new(),
            windows: Vec::new(),
        })
}

/// Whether the book's place holds a file to open (`false`: none, and `create` is not asked).
/// Only a regular file of reasonable size that starts as redb does is opened: a symbolic
/// link, a FIFO (which would block the open for ever) or a foreign file is an error.
fn checked_place(path: &Path, create: bool) -> Result<bool, StoreError> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_whole(path)?;
            return checked_place(path, false);
        }
        Err(e) => return Err(StoreError::io(path, e)),
        Ok(meta) => meta,
    };
    let refuse = |why: String| StoreError::Book {
        path: path.to_path_buf(),
        why,
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link, not a file".to_owned()));
    }
    if !meta.is_file() {
        return Err(refuse(
            "it is not a regular file (a FIFO, a device or a directory)".to_owned(),
        ));
    }
    if meta.len() > MAX_BOOK_LEN {
        return Err(refuse(format!(
            "it is {} bytes, far more than an account book",
            meta.len()
        )));
    }
    match super::open::precheck_header(path) {
        Ok(_) => Ok(true),
        Err(StoreError::Corrupt { why, .. }) => Err(refuse(why)),
        Err(StoreError::Empty { .. }) => Err(refuse("it is empty".to_owned())),
        Err(e) => Err(e),
    }
}

/// Creates the book whole: made and versioned under a name of its own, private, then linked
/// into place, so that a peer never opens a half-made file (nor creates a second one: the link
/// of the slower is refused, and it opens the first's).
fn create_whole(path: &Path) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    crate::project::ensure_private_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    let name = format!(
        ".accounts.{}.{:x}.new",
        std::process::id(),
        fastrand::u64(..)
    );
    let fresh = dir.join(name);
    let made = (|| -> Result<(), KernelError> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&fresh)
            .map_err(|e| StoreError::io(&fresh, e))?;
        let db = builder().create(&fresh).map_err(|e| StoreError::Open {
            path: fresh.clone(),
            source: Box::new(e),
        })?;
        let txn = db
            .begin_write()
            .map_err(|e| super::open::redb_error(&fresh, e.into()))?;
        {
            let kv = RedbKv {
                txn: Txn::Write(&txn),
                path: &fresh,
            };
            kv.put(
                tables::META,
                &Key::text(BOOK_VERSION_KEY),
                &meta_bytes(BOOK_VERSION),
            )?;
        }
        txn.commit()
            .map_err(|e| super::open::redb_error(&fresh, e.into()))?;
        Ok(())
    })();
    let linked = made.and_then(|()| match std::fs::hard_link(&fresh, path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(StoreError::io(path, e).into())
        }
        _ => Ok(()),
    });
    let _ = std::fs::remove_file(&fresh);
    linked.map_err(|e| match e {
        KernelError::Store(e) => e,
        other => StoreError::Book {
            path: path.to_path_buf(),
            why: other.to_string(),
        },
    })
}

/// The record under `key` of the quota table of `kv`.
pub(crate) fn get<T: DeserializeOwned>(
    kv: &(impl KvRead + ?Sized),
    key: &str,
) -> Result<Option<T>, KernelError> {
    kv.get(tables::QUOTA, &Key::text(key))?
        .map(|bytes| decode("quota", &bytes))
        .transpose()
        .map_err(KernelError::from)
}

/// Writes `value` under `key` in the quota table of `kv`.
pub(crate) fn put<T: Serialize>(kv: &dyn KvWrite, key: &str, value: &T) -> Result<(), KernelError> {
    kv.put(tables::QUOTA, &Key::text(key), &encode(value))
}

/// The records whose keys start with `prefix` (which ends in `/`), with their keys.
fn values<T: DeserializeOwned>(
    kv: &dyn KvRead,
    prefix: &str,
) -> Result<Vec<(String, T)>, KernelError> {
    let end = format!("{}0", &prefix[..prefix.len() - 1]);
    let range = (
        std::ops::Bound::Included(Key::text(prefix)),
        std::ops::Bound::Excluded(Key::text(&end)),
    );
    let mut out = Vec::new();
    kv.scan(tables::QUOTA, range, false, &mut |key, bytes| {
        let Key::Text(key) = key else { return Ok(true) };
        out.push((key, decode("quota", bytes)?));
        Ok(true)
    })?;
    Ok(out)
}

/// The book of one store's operation or snapshot, opened when first needed: a project whose
/// ledger is its own (or whose surface keeps no book) never reads `loopx.toml` for it.
pub(crate) struct BookCell<'a> {
    store: &'a Store,
    opened: OnceCell<AccountBook>,
}

impl<'a> BookCell<'a> {
    pub(crate) fn new(store: &'a Store) -> BookCell<'a> {
        BookCell {
            store,
            opened: OnceCell::new(),
        }
    }

    /// Ends the batch's writes to the book, if it was opened: commits them, or drops them.
    pub(crate) fn finish(&self, commit: bool) -> Result<(), KernelError> {
        match self.opened.get() {
            Some(book) => book.finish(commit),
            None => Ok(()),
        }
    }

    /// The book, if the project's ledger is shared (opened, and created when `create`).
    pub(crate) fn get(&self, create: bool) -> Result<Option<&AccountBook>, KernelError> {
        if let Some(book) = self.opened.get() {
            return Ok(Some(book));
        }
        let Some(path) = book_path(self.store)? else {
            return Ok(None);
        };
        let project = self.store.project().root().display().to_string();
        let wait = self.store.project().store_settings().wait;
        match AccountBook::open(&path, wait, &project, create)? {
            Some(book) => Ok(Some(self.opened.get_or_init(|| book))),
            None => Ok(None),
        }
    }
}

/// Where the project's account ledger is shared: the surface's book, unless the store is a
/// database (whose hosts do not share this user's file) or `loopx.toml` keeps the project's
/// own ledger (`[quota] ledger = "project"`).
fn book_path(store: &Store) -> Result<Option<PathBuf>, KernelError> {
    let Some(path) = &store.project().store_settings().account_book else {
        return Ok(None);
    };
    if store.is_postgres() {
        return Ok(None);
    }
    match super::settings::configured_ledger(store.project())? {
        Ledger::Account => Ok(Some(path.clone())),
        Ledger::Project => Ok(None),
    }
}

/// Where a project keeps its accounts' quota state (`[quota] ledger` in `loopx.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ledger {
    /// The per-user account book, shared by every project of this user (the default).
    Account,
    /// The project's own store, as before the book.
    Project,
}

impl Ledger {
    /// The setting as written: `"account"` or `"project"`.
    pub fn parse(text: &str) -> Option<Ledger> {
        match text {
            "account" => Some(Ledger::Account),
            "project" => Some(Ledger::Project),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(2);

    fn open(path: &Path, create: bool) -> Result<Option<AccountBook>, KernelError> {
        AccountBook::open(path, WAIT, "/p", create)
    }

    fn refusal(path: &Path) -> String {
        open(path, true).expect_err("refused").to_string()
    }

    #[test]
    fn a_read_never_creates_the_book_and_a_write_does_privately() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("loopx/accounts.redb");
        assert!(open(&path, false).expect("read").is_none());
        assert!(!path.exists());
        open(&path, true).expect("create").expect("a book");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        let book = open(&path, false).expect("read").expect("a book");
        assert!(book.accounts::<u64>().expect("accounts").is_empty());
    }

    #[test]
    fn a_book_of_a_newer_loopx_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("accounts.redb");
        let book = open(&path, true).expect("create").expect("a book");
        book.write(|kv| kv.put(tables::META, &Key::text(BOOK_VERSION_KEY), &meta_bytes(99)))
            .expect("write");
        book.finish(true).expect("commit");
        drop(book);
        let why = refusal(&path);
        assert!(why.contains("newer than this loopx"), "{why}");
    }

    #[test]
    fn a_redb_file_that_is_not_a_book_is_refused_and_never_written() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("accounts.redb");
        drop(builder().create(&path).expect("a foreign redb file"));
        let before = std::fs::read(&path).expect("read");
        let why = refusal(&path);
        assert!(why.contains("without an account book version"), "{why}");
        assert!(
            std::fs::read(&path).expect("read") == before,
            "the file changed"
        );
    }

    #[test]
    fn what_is_not_a_book_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("accounts.redb");
        std::fs::write(&path, b"hello").expect("write");
        assert!(refusal(&path).contains("redb header"));
        assert_eq!(std::fs::read(&path).expect("read"), b"hello");

        std::fs::remove_file(&path).expect("rm");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("fifo");
        assert!(refusal(&path).contains("not a regular file"));

        std::fs::remove_file(&path).expect("rm");
        let huge = std::fs::File::create(&path).expect("create");
        huge.set_len(MAX_BOOK_LEN + 1).expect("sparse");
        assert!(refusal(&path).contains("far more than an account book"));

        std::fs::remove_file(&path).expect("rm");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, b"").expect("write");
        std::os::unix::fs::symlink(&elsewhere, &path).expect("link");
        assert!(refusal(&path).contains("symbolic link"));
        assert!(std::fs::read(&elsewhere).expect("read").is_empty());
    }
}
