//! Opening the store: checks that never modify a bad file, and waiting for a busy one.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use redb::{
    Builder, ConcurrencyMode, Database, DatabaseError, ReadOnlyDatabase, ReadableDatabase,
    TransactionError, WriteTransaction,
};

use super::kv::{KvRead, KvReadExt, KvWrite};
use super::pg::PgStore;
use super::redb_kv::{RedbKv, Txn};
use super::snapshot::Snapshot;
use super::tables::{self, SCHEMA_KEY};
use crate::errors::{KernelError, StoreError};
use crate::project::Project;
use crate::toml_file::{self, TomlFileError};

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

/// redb's file signature (`tree_store/page_store/header.rs` in redb 4.6).
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

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

/// Where a project's store is: the URL this process was given ([`set_url_override`], the
/// surface's `LOOPX_STORE_URL`), else `[store] url` in `.loopx/loopx.toml`; `None` is the redb
/// file in `.loopx/`.
pub fn store_url(project: &Project) -> Result<Option<String>, KernelError> {
    if project.store_settings().local_only {
        return match configured_url(project)? {
            None => Ok(None),
            Some(url) => Err(StoreError::Config {
                path: project.state_dir().join("loopx.toml"),
                why: format!(
                    "its store is the database {}, which this command does not open (`loopx status` in the project does)",
                    super::pg::redact_url(&url)
                ),
            }
            .into()),
        };
    }
    if let Some(url) = &project.store_settings().url {
        if loopx_vocab::is_postgres_url(url) {
            return Ok(Some(url.clone()));
        }
        return Err(StoreError::Config {
            path: PathBuf::from(super::pg::redact_url(url)),
            why: "the environment variable LOOPX_STORE_URL is not a PostgreSQL URL (postgres://user@host:port/database); unset it to keep the store in .loopx/state.redb".to_owned(),
        }
        .into());
    }
    configured_url(project)
}

/// The `[store] url` of the project's `loopx.toml`, checked; `None` when it names none.
pub fn configured_url(project: &Project) -> Result<Option<String>, KernelError> {
    // A file that does not parse is an error: guessing "no [store]" would quietly use a stale
    // `.loopx/state.redb` of a project that moved to a database.
    read_setting(project, "where the store is", file_url).map(Option::flatten)
}

/// Where the project keeps its accounts' quota state: `[quota] ledger` of its `loopx.toml`
/// (`"account"`, the per-user book, when it says nothing).
pub fn configured_ledger(project: &Project) -> Result<super::account_book::Ledger, KernelError> {
    let found = read_setting(project, "where its quota ledger is", file_ledger)?;
    Ok(found
        .flatten()
        .unwrap_or(super::account_book::Ledger::Account))
}

/// One setting of the project's `loopx.toml`, read by `setting` from the parsed file (`None`
/// when there is no file); an error names the file, the line and `what` cannot be told.
fn read_setting<T>(
    project: &Project,
    what: &str,
    setting: impl FnOnce(&str, &Spanned<DeTable<'_>>) -> Result<T, (usize, String)>,
) -> Result<Option<T>, KernelError> {
    let path = project.state_dir().join("loopx.toml");
    let at_line = |line: usize, why: String| -> KernelError {
        let path = PathBuf::from(format!("{}:{line}", path.display()));
        StoreError::Config { path, why }.into()
    };
    // The one reader of configuration files, so that a FIFO or a huge file is refused here as
    // everywhere.
    match toml_file::read_toml(&path, |text, doc| setting(text, &doc)) {
        Ok(None) => Ok(None),
        Ok(Some(found)) => found.map(Some).map_err(|(line, why)| at_line(line, why)),
        Err(TomlFileError::Read { source, .. }) => Err(StoreError::io(&path, source).into()),
        Err(TomlFileError::Syntax { line, message, .. }) => Err(at_line(
            line,
            format!("it does not parse, so {what} cannot be told ({message})"),
        )),
    }
}

/// The checked `[quota] ledger` of a parsed `loopx.toml`.
fn file_ledger(
    text: &str,
    doc: &Spanned<DeTable<'_>>,
) -> Result<Option<super::account_book::Ledger>, (usize, String)> {
    let line = |value: &Spanned<DeValue<'_>>| toml_file::line_column(text, value.span().start).0;
    let Some(quota) = doc.get_ref().get("quota") else {
        return Ok(None);
    };
    let DeValue::Table(table) = quota.get_ref() else {
        let why = "`quota` must be a table: [quota] with ledger = \"account\" or \"project\"";
        return Err((line(quota), why.to_owned()));
    };
    let Some(ledger) = table.get("ledger") else {
        return Ok(None);
    };
    match ledger.get_ref() {
        DeValue::String(written) => match super::account_book::Ledger::parse(written.trim()) {
            Some(found) => Ok(Some(found)),
            None => Err((
                line(ledger),
                format!(
                    "`[quota] ledger` is \"{written}\"\n(hint: \"account\" shares each account's ledger with this user's other projects; \"project\" keeps it in this project)"
                ),
            )),
        },
        _ => Err((
            line(ledger),
            "`[quota] ledger` must be the string \"account\" or \"project\"".to_owned(),
        )),
    }
}

/// The checked `[store] url` of a parsed `loopx.toml` (only `[store]` is read: the rest is
/// checked where it is used); an error is its line and what is wrong.
fn file_url(text: &str, doc: &Spanned<DeTable<'_>>) -> Result<Option<String>, (usize, String)> {
    let line = |value: &Spanned<DeValue<'_>>| toml_file::line_column(text, value.span().start).0;
    let Some(store) = doc.get_ref().get("store") else {
        return Ok(None);
    };
    let DeValue::Table(table) = store.get_ref() else {
        let why = "`store` must be a table: [store] with url = \"postgres://…\"";
        return Err((line(store), why.to_owned()));
    };
    let Some(url) = table.get("url") else {
        return Ok(None);
    };
    let DeValue::String(written) = url.get_ref() else {
        let why = "`[store] url` must be a string such as \"postgres://loopx@db.internal/loopx\"";
        return Err((line(url), why.to_owned()));
    };
    let written = written.trim();
    match loopx_vocab::store_url_problem(written) {
        None => Ok(Some(written.to_owned())),
        Some(problem) => {
            let (what, hint) = problem.words();
            Err((line(url), format!("`[store] url` {what}\n(hint: {hint})")))
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
fn precheck(path: &Path) -> Result<(), StoreError> {
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
