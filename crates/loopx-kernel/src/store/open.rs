//! Opening the store: checks that never modify a bad file, and waiting for a busy one.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use redb::{
    Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadableDatabase,
    WriteTransaction,
};

use super::kv::{KvRead, KvReadExt, KvWrite};
use super::pg::PgStore;
pub(crate) use super::redb_file::{
    begin_redb_write, open_retrying, precheck, precheck_header, read_only, redb_error, shield,
    shielded,
};
use super::redb_kv::{RedbKv, Txn};
use super::settings::store_url;
use super::snapshot::Snapshot;
use super::tables::{self, SCHEMA_KEY};
use crate::errors::{KernelError, StoreError};
use crate::project::Project;

/// The layout of tables and records this loopx reads and writes. Version 2 added the todo
/// indexes (`store/todo_index.rs`): a version-1 store is upgraded at its first open, and a
/// loopx that knows only version 1 then refuses the store instead of writing todos without
/// keeping the indexes. Version 3 added `monitor_todos` (open monitors, which are never
/// ready): a version-2 store gets it, with every index rebuilt, at its first read-write open,
/// and a loopx that knows only version 2 then refuses the store instead of taking a monitor for
/// work.
pub const SCHEMA_VERSION: u64 = 3;
/// The oldest layout this loopx opens (and upgrades).
const OLDEST_SCHEMA: u64 = 1;

/// How long to wait for a busy store.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Give up on a write (or an open) after this long.
    pub wait: Duration,
}

/// How long to wait for a busy store unless the surface said otherwise: a few
/// seconds, long enough to queue behind a burst of peers, short enough that a person is told
/// what holds the store instead of staring at a hung command.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(5);

impl OpenOptions {
    /// As the project's store settings say ([`crate::project::StoreSettings`]).
    pub fn for_project(project: &Project) -> OpenOptions {
        OpenOptions {
            wait: project.store_settings().wait,
        }
    }
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { wait: DEFAULT_WAIT }
    }
}

/// The backend: a redb handle (read-write for changes, read-only, which never modifies the
/// file, for reads), or a PostgreSQL database.
pub(crate) enum Handle {
    Write(Database),
    Read(ReadOnlyDatabase),
    Pg(PgStore),
    /// Only while the store is dropped (see `Drop for Store`).
    Closed,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Handle::Write(_) => "Handle::Write",
            Handle::Read(_) => "Handle::Read",
            Handle::Pg(_) => "Handle::Pg",
            Handle::Closed => "Handle::Closed",
        })
    }
}

/// An open state store. Open it per operation; do not hold it while waiting on anything else.
#[derive(Debug)]
pub struct Store {
    pub(crate) db: Handle,
    pub(crate) project: Project,
    pub(crate) path: PathBuf,
    pub(crate) options: OpenOptions,
    pub(crate) redactor: crate::redact::Redactor,
    /// The faults a simulation or a test injects into this handle's writes; `None` in
    /// production.
    pub(crate) faults: Option<crate::fault::Faults>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // Closing a read-write database commits redb's allocator state, and on a damaged file
        // redb can panic there: the store is going away either way, so the panic is contained
        // here (not with `shield`, which lets a simulated crash's unwinding through).
        let db = std::mem::replace(&mut self.db, Handle::Closed);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(db)));
    }
}

/// The store's write lock, held (see [`Store::lock_writes`]); released when dropped.
pub struct WriteLock {
    /// Held, never committed: dropping it aborts and releases the lock.
    _txn: WriteTxn,
}

/// A write transaction on either backend: rolled back unless committed.
#[allow(
    clippy::large_enum_variant,
    reason = "one lives on the stack for one write; boxing would cost every write an allocation"
)]
pub(crate) enum WriteTxn {
    Redb {
        txn: WriteTransaction,
        path: PathBuf,
    },
    Pg(super::pg::PgTxn),
}

impl WriteTxn {
    /// Runs `f` on the transaction's tables.
    pub(crate) fn with_kv<T>(&self, f: impl FnOnce(&dyn KvWrite) -> T) -> T {
        match self {
            WriteTxn::Redb { txn, path } => f(&RedbKv {
                txn: Txn::Write(txn),
                path,
            }),
            WriteTxn::Pg(txn) => f(txn),
        }
    }

    pub(crate) fn commit(self) -> Result<(), KernelError> {
        match self {
            WriteTxn::Redb { txn, path } => {
                txn.commit().map_err(|e| redb_error(&path, e.into()).into())
            }
            WriteTxn::Pg(txn) => txn.commit(),
        }
    }

    pub(crate) fn abort(self) -> Result<(), KernelError> {
        match self {
            WriteTxn::Redb { txn, path } => {
                txn.abort().map_err(|e| redb_error(&path, e.into()).into())
            }
            WriteTxn::Pg(txn) => txn.abort(),
        }
    }

    /// `now`, never ahead of the database's clock by more than [`super::pg::TRUSTED_SKEW`]:
    /// a host whose clock runs fast would otherwise stamp leases that outlive what every other
    /// host sees. (A process puts its own clock on the database's when it opens the store,
    /// `PgStore::open`; this catches a time read before that.) A time behind is taken as it is:
    /// a caller reads the clock before it queues for the lock, and simulations replay the past.
    /// redb has one host: its times stand.
    /// The database's clock when this write took the writer lock (PostgreSQL).
    pub(crate) fn db_now(&self) -> Option<crate::time::Timestamp> {
        match self {
            WriteTxn::Pg(txn) => txn.db_now(),
            WriteTxn::Redb { .. } => None,
        }
    }

    pub(crate) fn corrected(&self, now: crate::time::Timestamp) -> crate::time::Timestamp {
        let WriteTxn::Pg(txn) = self else {
            return now;
        };
        match txn.db_now() {
            Some(db) if now.since(db) > super::pg::TRUSTED_SKEW => db,
            _ => now,
        }
    }
}

impl std::fmt::Debug for WriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteLock")
    }
}

pub(crate) fn builder() -> Builder {
    let mut builder = Builder::new();
    // Every process opens read-write: redb serialises write transactions across processes with
    // a byte-range lock, and readers never wait.
    builder.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    // The kernel is small; a bounded cache keeps every loopx process's memory small too.
    builder.set_cache_size(16 * 1024 * 1024);
    builder
}

impl Store {
    /// Creates the store of a freshly created project (`loopx init`).
    pub fn create(
        project: &Project,
        now: crate::time::Timestamp,
        actor: &str,
    ) -> Result<Store, KernelError> {
        if let Some(url) = store_url(project)? {
            return Store::create_pg(project, &url, now, actor);
        }
        let path = project.store_path();
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
        let backend =
            redb::backends::FileBackend::new(file).map_err(|source| StoreError::Open {
                path: path.clone(),
                source: Box::new(source),
            })?;
        let db = builder()
            .create_with_backend(backend)
            .map_err(|source| StoreError::Open {
                path: path.clone(),
                source: Box::new(source),
            })?;
        let store = Store {
            db: Handle::Write(db),
            project: project.clone(),
            path,
            options: OpenOptions::for_project(project),
            redactor: crate::redact::Redactor::for_process_env(&[]),
            faults: None,
        };
        store.initialise(now, actor)?;
        Ok(store)
    }

    /// The project's store on PostgreSQL: created when the database holds none yet, joined
    /// when it does (a second host's `loopx init`).
    fn create_pg(
        project: &Project,
        url: &str,
        now: crate::time::Timestamp,
        actor: &str,
    ) -> Result<Store, KernelError> {
        let store = Store::on_pg(project, url, OpenOptions::for_project(project))?;
        // Checked and created in one transaction: two hosts running `init` at once make one
        // project, never two halves of one.
        let txn = store.begin_write()?;
        if txn.with_kv(|kv| kv.meta(SCHEMA_KEY))?.is_some() {
            txn.abort()?;
            store.check_schema()?;
            return Ok(store);
        }
        store.initialise_in(txn, now, actor)?;
        Ok(store)
    }

    /// Whether this store is on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self.db, Handle::Pg(_))
    }

    /// The layout version of a PostgreSQL store and the one this loopx writes (`loopx
    /// doctor`); `None` for redb.
    pub fn database_layout(&self) -> Result<Option<(i64, i64)>, KernelError> {
        match &self.db {
            Handle::Pg(pg) => Ok(Some((pg.layout_version()?, super::pg::LAYOUT_VERSION))),
            _ => Ok(None),
        }
    }

    /// The time on the database's clock (PostgreSQL); `None` for redb, whose clock is this
    /// machine's.
    pub fn database_now(&self) -> Result<Option<crate::time::Timestamp>, KernelError> {
        match &self.db {
            Handle::Pg(pg) => pg.now().map(Some),
            _ => Ok(None),
        }
    }

    /// A handle on the PostgreSQL store at `url`, its layout brought up to date.
    fn on_pg(project: &Project, url: &str, options: OpenOptions) -> Result<Store, KernelError> {
        let pg = PgStore::open(url, options.wait, project.store_settings())?;
        // The URL's password is a secret like any other: no text the store keeps holds it.
        let mut redactor = crate::redact::Redactor::for_process_env(&[]);
        if let Some(password) = loopx_vocab::url_password(url) {
            redactor = redactor.with_value(password);
        }
        Ok(Store {
            path: pg.shown(),
            db: Handle::Pg(pg),
            project: project.clone(),
            options,
            redactor,
            faults: None,
        })
    }

    /// Opens a PostgreSQL store and checks its schema.
    fn open_pg(project: &Project, url: &str, options: OpenOptions) -> Result<Store, KernelError> {
        let store = Store::on_pg(project, url, options)?;
        if store.check_schema()? < SCHEMA_VERSION {
            store.upgrade()?;
        }
        Ok(store)
    }

    /// This handle, with `faults` injected into its writes (the simulation and tests).
    #[must_use]
    pub fn with_faults(mut self, faults: crate::fault::Faults) -> Store {
        self.faults = Some(faults);
        self
    }

    /// Opens the store of an existing project.
    pub fn open(project: &Project) -> Result<Store, KernelError> {
        Store::open_with(project, OpenOptions::for_project(project))
    }

    /// Opens with explicit options.
    pub fn open_with(project: &Project, options: OpenOptions) -> Result<Store, KernelError> {
        let path = project.store_path();
        shielded(&path, || Store::open_with_unshielded(project, options))
    }

    fn open_with_unshielded(project: &Project, options: OpenOptions) -> Result<Store, KernelError> {
        if let Some(url) = store_url(project)? {
            return Store::open_pg(project, &url, options);
        }
        let path = project.store_path();
        precheck(&path)?;
        let db = open_retrying(&path, &options, |path| builder().open(path))?;
        let (store, schema) = Store::checked(Handle::Write(db), project, path, options)?;
        if schema < SCHEMA_VERSION {
            store.upgrade()?;
        }
        Ok(store)
    }

    /// Rebuilds the todo indexes and counts from the todos (`loopx doctor --repair`, when the
    /// consistency check finds them out of step).
    pub fn rebuild_todo_index(&self) -> Result<(), KernelError> {
        shielded(&self.path, || {
            let txn = self.begin_write()?;
            txn.with_kv(super::todo_index::build)?;
            txn.commit()
        })
    }

    /// Brings a version-1 or -2 store to this layout: builds its todo indexes and records the version,
    /// in one transaction (a peer that upgraded it meanwhile leaves nothing to do).
    fn upgrade(&self) -> Result<(), KernelError> {
        let txn = self.begin_write()?;
        let done = txn.with_kv(|kv| -> Result<bool, KernelError> {
            if kv.meta(SCHEMA_KEY)? == Some(SCHEMA_VERSION) {
                return Ok(true);
            }
            super::todo_index::build(kv)?;
            kv.put(
                tables::META,
                &super::kv::Key::text(SCHEMA_KEY),
                &super::kv::meta_bytes(SCHEMA_VERSION),
            )?;
            Ok(false)
        })?;
        if done {
            return txn.abort();
        }
        txn.commit()
    }

    /// Opens an existing project's store for reading only: never waits for writers and never
    /// modifies the file. A file that needs recovery after a crash is opened read-write instead,
    /// which repairs it.
    pub fn open_read(project: &Project) -> Result<Store, KernelError> {
        shielded(&project.store_path(), || {
            Store::open_read_unshielded(project)
        })
    }

    fn open_read_unshielded(project: &Project) -> Result<Store, KernelError> {
        let options = OpenOptions::for_project(project);
        if let Some(url) = store_url(project)? {
            return Store::open_pg(project, &url, options);
        }
        let path = project.store_path();
        precheck(&path)?;
        let db = match open_retrying(&path, &options, |path| builder().open_read_only(path)) {
            Ok(db) => Handle::Read(db),
            Err(StoreError::Open { source, .. })
                if matches!(*source, DatabaseError::RepairAborted) =>
            {
                Handle::Write(open_retrying(&path, &options, |path| builder().open(path))?)
            }
            Err(e) => return Err(e.into()),
        };
        let (store, schema) = Store::checked(db, project, path, options)?;
        if schema < SCHEMA_VERSION {
            // Written by an older loopx: built once, by a read-write open, then read as usual.
            drop(store);
            return Store::open_with_unshielded(project, OpenOptions::for_project(project));
        }
        Ok(store)
    }

    /// Opens for inspection (`loopx doctor`): read-only, and never repaired: a file that needs
    /// recovery after a crash is reported (`StoreError::NeedsRepair`), not rewritten.
    pub fn open_inspect(project: &Project) -> Result<Store, KernelError> {
        if let Some(url) = store_url(project)? {
            return Store::open_pg(project, &url, OpenOptions::for_project(project));
        }
        let path = project.store_path();
        shielded(&path.clone(), || {
            precheck(&path)?;
            let options = OpenOptions::for_project(project);
            let db = match open_retrying(&path, &options, |path| builder().open_read_only(path)) {
                Ok(db) => db,
                Err(StoreError::Open { source, .. })
                    if matches!(*source, DatabaseError::RepairAborted) =>
                {
                    return Err(StoreError::NeedsRepair { path: path.clone() }.into());
                }
                Err(e) => return Err(e.into()),
            };
            Store::checked(Handle::Read(db), project, path, options).map(|(store, _)| store)
        })
    }

    /// The store on an opened database, once its schema is one this loopx reads, and that
    /// schema version.
    fn checked(
        db: Handle,
        project: &Project,
        path: PathBuf,
        options: OpenOptions,
    ) -> Result<(Store, u64), KernelError> {
        let store = Store {
            db,
            project: project.clone(),
            path,
            options,
            redactor: crate::redact::Redactor::for_process_env(&[]),
            faults: None,
        };
        let schema = store.check_schema()?;
        Ok((store, schema))
    }

    /// Runs redb's integrity check on a private copy of the store file, so that the store
    /// itself is only read. `Ok(false)`: the check would repair the allocator state (an
    /// interrupted write), which `loopx doctor --repair` does on the store itself.
    pub fn check_integrity_of_copy(&self) -> Result<bool, KernelError> {
        if self.is_postgres() {
            // PostgreSQL keeps its own pages whole; its layout version is checked instead.
            return Ok(true);
        }
        let io = |source| StoreError::io(&self.path, source);
        let copy = tempfile::Builder::new()
            .prefix("loopx-doctor-")
            .suffix(".redb")
            .tempfile()
            .map_err(io)?;
        std::fs::copy(&self.path, copy.path()).map_err(io)?;
        shielded(&self.path, || {
            let mut db = builder()
                .open(copy.path())
                .map_err(|source| StoreError::Open {
                    path: self.path.clone(),
                    source: Box::new(source),
                })?;
            db.check_integrity().map_err(|source| {
                StoreError::Open {
                    path: self.path.clone(),
                    source: Box::new(source),
                }
                .into()
            })
        })
    }

    /// Replaces the redactor (e.g. with one that also knows a profile's secret names).
    pub fn set_redactor(&mut self, redactor: crate::redact::Redactor) {
        self.redactor = redactor;
    }

    /// The project this store belongs to.
    pub fn project(&self) -> &Project {
        &self.project
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on a consistent snapshot. Never waits for writers.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&Snapshot<'_>) -> Result<T, KernelError>,
    ) -> Result<T, KernelError> {
        shielded(&self.path, || {
            let book = super::account_book::BookCell::new(self);
            let snapshot = Snapshot::new(self.begin_read()?, &self.path).with_book(&book);
            f(&snapshot)
        })
    }

    /// Holds the store's write lock until the returned guard is dropped: every other writer
    /// queues meanwhile, and fails as busy past its wait. For a tool that needs the store to
    /// stand still (a consistent copy), and for tests of a busy store. Nothing is written.
    pub fn lock_writes(&self) -> Result<WriteLock, KernelError> {
        Ok(WriteLock {
            _txn: self.begin_write()?,
        })
    }

    /// Checks redb's own integrity (checksums and allocator state). Needs a read-write store.
    pub fn check_integrity(&mut self) -> Result<bool, KernelError> {
        let path = self.path.clone();
        shielded(&path.clone(), || match &mut self.db {
            Handle::Write(db) => db.check_integrity().map_err(|source| {
                StoreError::Open {
                    path,
                    source: Box::new(source),
                }
                .into()
            }),
            Handle::Pg(_) => Ok(true),
            Handle::Read(_) | Handle::Closed => Err(read_only(&path)),
        })
    }

    fn begin_read(&self) -> Result<Box<dyn KvRead + '_>, KernelError> {
        let txn = match &self.db {
            Handle::Write(db) => db.begin_read(),
            Handle::Read(db) => db.begin_read(),
            Handle::Pg(pg) => return Ok(Box::new(pg.begin_read()?)),
            Handle::Closed => return Err(read_only(&self.path)),
        }
        .map_err(|e| self.redb(e))?;
        Ok(Box::new(RedbKv {
            txn: Txn::Read(txn),
            path: &self.path,
        }))
    }

    pub(crate) fn redb(&self, e: impl Into<redb::Error>) -> KernelError {
        redb_error(&self.path, e.into()).into()
    }

    /// Begins a write transaction, waiting with jittered backoff while another process writes.
    pub(crate) fn begin_write(&self) -> Result<WriteTxn, KernelError> {
        let db = match &self.db {
            Handle::Write(db) => db,
            Handle::Pg(pg) => return pg.begin_write().map(WriteTxn::Pg),
            Handle::Read(_) | Handle::Closed => return Err(read_only(&self.path)),
        };
        Ok(WriteTxn::Redb {
            txn: begin_redb_write(db, &self.path, self.options.wait)?,
            path: self.path.clone(),
        })
    }

    fn initialise(&self, now: crate::time::Timestamp, actor: &str) -> Result<(), KernelError> {
        self.initialise_in(self.begin_write()?, now, actor)
    }

    /// Writes a new store's tables, counters and first event in `txn`, and commits it.
    fn initialise_in(
        &self,
        txn: WriteTxn,
        now: crate::time::Timestamp,
        actor: &str,
    ) -> Result<(), KernelError> {
        let now = txn.corrected(now);
        txn.with_kv(|kv| -> Result<(), KernelError> {
            // Create every table now, so that readers never meet a missing one.
            if let WriteTxn::Redb { txn, path } = &txn {
                super::redb_kv::create_tables(&RedbKv {
                    txn: Txn::Write(txn),
                    path,
                })?;
            }
            let set = |key: &str, value: u64| {
                kv.put(
                    tables::META,
                    &super::kv::Key::text(key),
                    &super::kv::meta_bytes(value),
                )
            };
            set(SCHEMA_KEY, SCHEMA_VERSION)?;
            set("created_at", now.0)?;
            for counter in [
                tables::counter::GOAL,
                tables::counter::TODO,
                tables::counter::GATE,
                tables::counter::EVIDENCE,
                tables::counter::HANDOFF,
                tables::counter::SLICE,
                tables::counter::EVENT,
                tables::counter::SPEND,
            ] {
                set(counter, 1)?;
            }
            set(tables::DROPPED_KEY, 0)?;
            super::todo_index::build(kv)?;
            let writer = super::writer::Writer::new(kv, now, actor)?;
            writer.event(crate::model::EventKind::ProjectCreated)?;
            Ok(())
        })?;
        txn.commit()
    }

    fn check_schema(&self) -> Result<u64, KernelError> {
        let found = self.begin_read()?.meta(SCHEMA_KEY)?;
        match found {
            Some(found @ OLDEST_SCHEMA..=SCHEMA_VERSION) => Ok(found),
            Some(found) if found > SCHEMA_VERSION => {
                Err(StoreError::TooNew { path: self.path.clone(), found, supported: SCHEMA_VERSION }.into())
            }
            Some(found) => Err(StoreError::Corrupt { path: self.path.clone(), why: format!("unknown schema version {found}") }.into()),
            None if self.is_postgres() => Err(StoreError::Missing { path: self.path.clone() }.into()),
            None => Err(StoreError::Corrupt {
                path: self.path.clone(),
                why: "it is a redb file without a loopx schema version (an interrupted `loopx init`?)".to_owned(),
            }
            .into()),
        }
    }
}
