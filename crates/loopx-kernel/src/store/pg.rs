//! The storage interface on PostgreSQL: the kernel of a project shared by supervisors on several
//! hosts (`[store] url = "postgres://…"`, `docs/design/multi-host.md`).
//!
//! - Every kernel table is a range of one table, `loopx_rows (tbl, key, value)`, with keys as
//!   [`Key::ordered_bytes`], so a PostgreSQL B-tree keeps each table in the kernel's key order
//!   and ranges (the ready index, the event log) are index scans.
//! - A write transaction first locks the project's one row in `loopx_writer`: writers of a
//!   project run one at a time, as they do on redb, so every operation is validated against
//!   everything committed before it (the epoch check included) and events get one gap-free
//!   order. Waiting for that lock is bounded by `lock_timeout` (the store's wait), after which
//!   the store is busy.
//! - The same statement reads the database's clock: a host whose clock is off by more than
//!   [`TRUSTED_SKEW`] has its times moved onto the database's (`Store::apply`), so leases,
//!   holds and windows mean the same on every host.
//! - A read is one `REPEATABLE READ READ ONLY` transaction: one consistent snapshot.
//! - A commit sends `NOTIFY` on the project's channel: the doorbell of every host.
//! - The layout has a version (`loopx_migrations`); each process brings it up to date once,
//!   under an advisory lock, and refuses a layout newer than it knows.
//!
//! Connections are pooled per URL in the [`Pools`] the project's store settings carry (a loopx
//! command opens the store several times).
//! The URL's password never leaves this module: errors and `Store::path` show the URL without
//! it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::types::Type;
use postgres::{Client, NoTls};

use super::kv::{Key, KvRead, KvWrite, Range, Table, Visit};
use crate::errors::{KernelError, StoreError};
use crate::project::StoreSettings;
use crate::time::{Timestamp, WallClock};

/// The layout migrations, in order; the layout's version is how many have been applied. Never
/// change one that shipped: add another.
const MIGRATIONS: &[&str] = &[
    // 1: the kernel's tables, and the row writers lock.
    "CREATE TABLE loopx_rows (
         tbl smallint NOT NULL,
         key bytea NOT NULL,
         value bytea NOT NULL,
         PRIMARY KEY (tbl, key)
     );
     CREATE TABLE loopx_writer (id integer PRIMARY KEY CHECK (id = 1));
     INSERT INTO loopx_writer VALUES (1);",
];

/// The layout version this loopx writes.
pub const LAYOUT_VERSION: i64 = MIGRATIONS.len() as i64;

/// A host whose clock is this close to the database's keeps its own (tests and a single host
/// see exact times); beyond it, the database's clock wins.
pub(crate) const TRUSTED_SKEW: Duration = Duration::from_secs(1);

/// `url` as shown in messages and `Store::path`: rebuilt from what the URL parses into (user,
/// hosts, ports, database, options), so that no way of writing a password in it (`:` in the
/// user part, `?password=`, percent-encoded, `/` or `@` inside it) survives.
pub fn redact_url(url: &str) -> String {
    let Ok(config) = url.parse::<postgres::Config>() else {
        return "postgres://(a URL that does not parse)".to_owned();
    };
    let user = config.get_user().unwrap_or("");
    let at = if user.is_empty() { "" } else { "@" };
    let password = if loopx_vocab::url_password(url).is_some() {
        ":***"
    } else {
        ""
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
        .map(|(host, port)| match host {
            postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
            postgres::config::Host::Unix(path) => format!("[{}]:{port}", path.display()),
        })
        .collect();
    let db = config.get_dbname().unwrap_or("");
    let options = config
        .get_options()
        .map(|o| format!("?options={}", o.replace(' ', "%20").replace('=', "%3D")))
        .unwrap_or_default();
    format!(
        "postgres://{user}{password}{at}{}/{db}{options}",
        hosts.join(",")
    )
}

/// A connection of its own to the store at `url` and the project's notification channel, for a
/// doorbell listener.
pub fn listen(url: &str, settings: &StoreSettings) -> Result<(Client, String), KernelError> {
    let store = PgStore::open(url, Duration::from_secs(5), settings)?;
    Ok((store.connect_alone()?, store.channel()))
}

/// One connection. Statements go with their parameters' types (`query_typed`): one round trip
/// each, with nothing prepared that a short-lived command would use once.
struct Conn {
    client: Client,
}

/// The connections of one URL in this process.
struct Pool {
    config: postgres::Config,
    shown: PathBuf,
    idle: Mutex<Vec<Conn>>,
    /// The project's notification channel, once the layout is known to be current.
    channel: OnceLock<String>,
}

const MAX_IDLE: usize = 8;

/// The connection pools of whoever opens stores, one per URL; clones share them, so two
/// stores on one URL share its connections.
#[derive(Clone, Default)]
pub struct Pools(Arc<Mutex<HashMap<String, Arc<Pool>>>>);

impl std::fmt::Debug for Pools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pools")
    }
}

impl Pool {
    fn take(&self, wait: Duration) -> Result<Conn, KernelError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(conn) = idle.filter(|c| !c.client.is_closed()) {
            return Ok(conn);
        }
        self.fresh(wait)
    }

    /// A new connection, never a pooled one.
    fn fresh(&self, wait: Duration) -> Result<Conn, KernelError> {
        let mut config = self.config.clone();
        config.connect_timeout(wait.max(Duration::from_secs(1)));
        let client = config
            .connect(NoTls)
            .map_err(|e| error(&self.shown, e, None))?;
        Ok(Conn { client })
    }

    fn give(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

/// A PostgreSQL error as the store reports it: a lost or refused connection is the database
/// being unavailable (transient), a lock wait past the store's wait is a busy store.
fn error(shown: &std::path::Path, e: postgres::Error, waited: Option<Instant>) -> KernelError {
    let path = shown.to_path_buf();
    let code = e.code().cloned();
    let busy = matches!(
        code,
        Some(SqlState::LOCK_NOT_AVAILABLE) | Some(SqlState::QUERY_CANCELED)
    );
    if busy {
        let waited_ms = waited.map_or(0, |w| w.elapsed().as_millis() as u64);
        return StoreError::Busy {
            path,
            waited_ms,
            holders: " (another supervisor or command is writing)".to_owned(),
        }
        .into();
    }
    let unavailable = e.is_closed()
        || e.as_db_error().is_none()
        || code.as_ref().is_some_and(|c| {
            c.code().starts_with("08") || c.code().starts_with("57P") || c.code() == "53300"
        });
    let why = match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string()),
    };
    if unavailable {
        StoreError::Unavailable { path, why }.into()
    } else {
        StoreError::Database { path, why }.into()
    }
}

/// The project's notification channel: a digest of its schema's name, so that it is short
/// (PostgreSQL limits channel names to 63 bytes) and needs no quoting.
fn channel_of(schema: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(schema.as_bytes());
    format!("loopx_{}", hex::encode(&digest[..8]))
}

/// A project's store on PostgreSQL: where it is and how to reach it.
#[derive(Clone)]
pub(crate) struct PgStore {
    pool: Arc<Pool>,
    wait: Duration,
    /// The clock this store moves onto the database's.
    clock: WallClock,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgStore({})", self.pool.shown.display())
    }
}

impl PgStore {
    /// Connects (through the settings' pool) and brings the layout up to date.
    pub(crate) fn open(
        url: &str,
        wait: Duration,
        settings: &StoreSettings,
    ) -> Result<PgStore, KernelError> {
        let shown = PathBuf::from(redact_url(url));
        let pool = {
            let mut pools = settings.pools.0.lock().unwrap_or_else(|e| e.into_inner());
            match pools.get(url) {
                Some(pool) => pool.clone(),
                None => {
                    let mut config: postgres::Config =
                        url.parse()
                            .map_err(|e: postgres::Error| StoreError::Config {
                                path: shown.clone(),
                                why: format!("not a PostgreSQL URL ({e})"),
                            })?;
                    if config.get_password().is_none()
                        && let Ok(password) = std::env::var("PGPASSWORD")
                    {
                        config.password(password);
                    }
                    config.application_name("loopx");
                    // A silent network (a partition, a laptop asleep) must fail a call within
                    // seconds, not after the kernel's retransmissions (~15 min): a blocked
                    // renewal could otherwise outlive its claim, and a held writer lock would
                    // stall every host.
                    config
                        .tcp_user_timeout(Duration::from_secs(10))
                        .keepalives(true)
                        .keepalives_idle(Duration::from_secs(5))
                        .keepalives_interval(Duration::from_secs(2))
                        .keepalives_retries(3);
                    let pool = Arc::new(Pool {
                        config,
                        shown: shown.clone(),
                        idle: Mutex::default(),
                        channel: OnceLock::new(),
                    });
                    pools.insert(url.to_owned(), pool.clone());
                    pool
                }
            }
        };
        let store = PgStore {
            pool,
            wait,
            clock: settings.clock.clone(),
        };
        if store.pool.channel.get().is_none() {
            let channel = store.migrate()?;
            store.follow_database_clock()?;
            let _ = store.pool.channel.set(channel);
        }
        Ok(store)
    }

    pub(crate) fn shown(&self) -> PathBuf {
        self.pool.shown.clone()
    }

    fn err(&self, e: postgres::Error) -> KernelError {
        error(&self.pool.shown, e, None)
    }

    /// Applies the migrations this database lacks, one process at a time; returns the
    /// project's notification channel.
    fn migrate(&self) -> Result<String, KernelError> {
        let mut conn = self.pool.take(self.wait)?;
        // Almost always the layout is current: one statement says so.
        let current = conn.client.query_typed_opt(
            "SELECT current_schema()::text FROM loopx_migrations \
             HAVING coalesce(max(version), 0) = $1",
            &[(&(LAYOUT_VERSION as i32), Type::INT4)],
        );
        match current {
            Ok(Some(row)) => {
                self.pool.give(conn);
                return Ok(channel_of(&row.get::<_, String>(0)));
            }
            // No table yet (a new database), or another version: the careful way below.
            Ok(None) | Err(_) => {
                if conn.client.is_closed() {
                    return Err(StoreError::Unavailable {
                        path: self.pool.shown.clone(),
                        why: "the connection closed".to_owned(),
                    }
                    .into());
                }
            }
        }
        let result = self.migrate_under_lock(&mut conn.client);
        self.pool.give(conn);
        result
    }

    /// Brings the layout up to date under the schema's advisory lock, one process at a time;
    /// the project's notification channel.
    fn migrate_under_lock(&self, client: &mut Client) -> Result<String, KernelError> {
        let mut txn = client.transaction().map_err(|e| self.err(e))?;
        // Per schema, so that projects sharing a database do not wait on each other.
        txn.execute(
            "SELECT pg_advisory_xact_lock(hashtext('loopx:' || current_schema()))",
            &[],
        )
        .map_err(|e| self.err(e))?;
        txn.batch_execute(
            "CREATE TABLE IF NOT EXISTS loopx_migrations (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .map_err(|e| self.err(e))?;
        let found: i64 = txn
            .query_one(
                "SELECT coalesce(max(version), 0)::bigint FROM loopx_migrations",
                &[],
            )
            .map_err(|e| self.err(e))?
            .get(0);
        if found > LAYOUT_VERSION {
            return Err(StoreError::TooNew {
                path: self.pool.shown.clone(),
                found: found as u64,
                supported: LAYOUT_VERSION as u64,
            }
            .into());
        }
        for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            txn.batch_execute(sql).map_err(|e| self.err(e))?;
            txn.execute(
                "INSERT INTO loopx_migrations (version) VALUES ($1)",
                &[&(index as i32 + 1)],
            )
            .map_err(|e| self.err(e))?;
        }
        let schema: String = txn
            .query_one("SELECT current_schema()::text", &[])
            .map_err(|e| self.err(e))?
            .get(0);
        txn.commit().map_err(|e| self.err(e))?;
        Ok(channel_of(&schema))
    }

    /// Puts the settings' clock on the database's when they differ by more than
    /// [`TRUSTED_SKEW`]: every host then judges leases, holds and windows by one clock.
    fn follow_database_clock(&self) -> Result<(), KernelError> {
        // Against this host's own clock (not one already moved): measuring twice, from two
        // threads, sets the same offset instead of adding it twice.
        let before = self.clock.host_now();
        let db = self.now()?;
        let after = self.clock.host_now();
        let local = i128::from(before.0) + (i128::from(after.0) - i128::from(before.0)) / 2;
        let offset = i128::from(db.0) - local;
        if offset.unsigned_abs() > TRUSTED_SKEW.as_millis() {
            self.clock.follow(i64::try_from(offset).unwrap_or(0));
        }
        Ok(())
    }

    /// The layout version the database records (`loopx doctor`).
    pub(crate) fn layout_version(&self) -> Result<i64, KernelError> {
        let mut conn = self.pool.take(self.wait)?;
        let result = conn
            .client
            .query_one(
                "SELECT coalesce(max(version), 0)::bigint FROM loopx_migrations",
                &[],
            )
            .map(|row| row.get(0))
            .map_err(|e| self.err(e));
        self.pool.give(conn);
        result
    }

    /// The project's notification channel (`LISTEN` takes it quoted).
    pub(crate) fn channel(&self) -> String {
        self.pool.channel.get().cloned().unwrap_or_default()
    }

    /// A new connection of its own (not pooled): a doorbell listener holds one.
    pub(crate) fn connect_alone(&self) -> Result<Client, KernelError> {
        let mut config = self.pool.config.clone();
        config.connect_timeout(Duration::from_secs(5));
        config.connect(NoTls).map_err(|e| self.err(e))
    }

    /// The database's clock now.
    pub(crate) fn now(&self) -> Result<Timestamp, KernelError> {
        let mut conn = self.pool.take(self.wait)?;
        let result = conn
            .client
            .query_one(NOW_SQL, &[])
            .map(|row| Timestamp(row.get::<_, i64>(0).max(0) as u64))
            .map_err(|e| self.err(e));
        self.pool.give(conn);
        result
    }

    /// A consistent snapshot.
    pub(crate) fn begin_read(&self) -> Result<PgTxn, KernelError> {
        const BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
        let mut conn = self.pool.take(self.wait)?;
        if conn.client.batch_execute(BEGIN).is_err() {
            // A pooled connection the server closed meanwhile: once more on a new one.
            conn = self.pool.fresh(self.wait)?;
            conn.client.batch_execute(BEGIN).map_err(|e| self.err(e))?;
        }
        Ok(PgTxn {
            conn: RefCell::new(Some(conn)),
            store: self.clone(),
            db_now: None,
        })
    }

    /// A write transaction, holding the project's writer lock (waiting at most the store's
    /// wait for it).
    pub(crate) fn begin_write(&self) -> Result<PgTxn, KernelError> {
        let started = Instant::now();
        let wait_ms = self.wait.as_millis().max(1);
        // The server ends a writer that goes quiet inside its transaction (its host died with
        // the lock held): the other hosts wait at most that long.
        let idle_ms = (wait_ms * 2).max(10_000);
        let begin = format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = {wait_ms}; \
             SET LOCAL idle_in_transaction_session_timeout = {idle_ms}"
        );
        let mut conn = self.pool.take(self.wait)?;
        if conn.client.batch_execute(&begin).is_err() {
            // A pooled connection the server closed meanwhile (a restart): nothing was sent
            // that counts, so once more on a new one.
            conn = self.pool.fresh(self.wait)?;
            conn.client
                .batch_execute(&begin)
                .map_err(|e| error(&self.pool.shown, e, Some(started)))?;
        }
        let begun = conn.client.query_typed_one(LOCK_SQL, &[]);
        match begun {
            Ok(row) => Ok(PgTxn {
                conn: RefCell::new(Some(conn)),
                store: self.clone(),
                db_now: Some(Timestamp(row.get::<_, i64>(0).max(0) as u64)),
            }),
            Err(e) => {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.pool.give(conn);
                Err(error(&self.pool.shown, e, Some(started)))
            }
        }
    }
}

const NOW_SQL: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
const LOCK_SQL: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint \
                        FROM loopx_writer WHERE id = 1 FOR UPDATE";

/// One PostgreSQL transaction: a snapshot, or a write that is rolled back unless committed.
pub(crate) struct PgTxn {
    /// `None` once committed or rolled back.
    conn: RefCell<Option<Conn>>,
    store: PgStore,
    /// For a write: the database's clock when the writer lock was taken.
    db_now: Option<Timestamp>,
}

impl std::fmt::Debug for PgTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgTxn({})", self.store.pool.shown.display())
    }
}

impl PgTxn {
    /// The database's clock at the start of this write.
    pub(crate) fn db_now(&self) -> Option<Timestamp> {
        self.db_now
    }

    /// Runs `f` on the connection; a broken connection is not given back to the pool.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut Conn) -> Result<T, postgres::Error>,
    ) -> Result<T, KernelError> {
        let mut slot = self.conn.borrow_mut();
        let Some(conn) = slot.as_mut() else {
            return Err(StoreError::Unavailable {
                path: self.store.pool.shown.clone(),
                why: "the transaction already ended".to_owned(),
            }
            .into());
        };
        f(conn).map_err(|e| self.store.err(e))
    }

    /// Commits, ringing every listener of the project.
    pub(crate) fn commit(self) -> Result<(), KernelError> {
        // One round trip: the notification goes out when (and only if) the commit does.
        let end = match self.db_now {
            Some(_) => format!(
                "SELECT pg_notify('{}', ''); COMMIT",
                self.store.channel().replace('\'', "''")
            ),
            None => "COMMIT".to_owned(),
        };
        let result = self.with(|conn| conn.client.batch_execute(&end));
        self.finish(result.is_ok());
        match result {
            // The connection went away during the commit: it may have been recorded or not, so
            // this is not an error to retry (a retry could apply the change twice).
            Err(KernelError::Store(StoreError::Unavailable { path, why }))
                if self.db_now.is_some() =>
            {
                Err(StoreError::CommitUnknown { path, why }.into())
            }
            other => other,
        }
    }

    /// Rolls back.
    pub(crate) fn abort(self) -> Result<(), KernelError> {
        let result = self.with(|conn| conn.client.batch_execute("ROLLBACK"));
        self.finish(result.is_ok());
        result
    }

    fn finish(&self, clean: bool) {
        if let Some(conn) = self.conn.borrow_mut().take()
            && clean
        {
            self.store.pool.give(conn);
        }
    }

    fn query(
        &self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<postgres::Row>, KernelError> {
        self.with(|conn| conn.client.query_typed(sql, params))
    }

    fn execute(
        &self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<u64, KernelError> {
        self.with(|conn| conn.client.execute_typed(sql, params))
    }

    fn decode_key(&self, table: Table, bytes: &[u8]) -> Result<Key, KernelError> {
        Key::from_ordered_bytes(table.shape(), bytes).ok_or_else(|| {
            StoreError::Decode {
                table: table.name().to_owned(),
                why: format!("a key of {} bytes that no loopx wrote", bytes.len()),
            }
            .into()
        })
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.get_mut().take() {
            // A snapshot ends with a commit; an abandoned write is rolled back.
            let end = if self.db_now.is_some() {
                "ROLLBACK"
            } else {
                "COMMIT"
            };
            if conn.client.batch_execute(end).is_ok() {
                self.store.pool.give(conn);
            }
        }
    }
}

fn bound_sql(bound: &Bound<Vec<u8>>, lower: bool, param: usize) -> Option<String> {
    let op = match (bound, lower) {
        (Bound::Unbounded, _) => return None,
        (Bound::Included(_), true) => ">=",
        (Bound::Excluded(_), true) => ">",
        (Bound::Included(_), false) => "<=",
        (Bound::Excluded(_), false) => "<",
    };
    Some(format!(" AND key {op} ${param}"))
}

fn bound_bytes(bound: Bound<Key>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(k) => Bound::Included(k.ordered_bytes()),
        Bound::Excluded(k) => Bound::Excluded(k.ordered_bytes()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn bound_value(bound: &Bound<Vec<u8>>) -> Option<&Vec<u8>> {
    match bound {
        Bound::Included(v) | Bound::Excluded(v) => Some(v),
        Bound::Unbounded => None,
    }
}

impl KvRead for PgTxn {
    fn get(&self, table: Table, key: &Key) -> Result<Option<Vec<u8>>, KernelError> {
        let rows = self.query(
            "SELECT value FROM loopx_rows WHERE tbl = $1 AND key = $2",
            &[
                (&table.number(), Type::INT2),
                (&key.ordered_bytes(), Type::BYTEA),
            ],
        )?;
        Ok(rows.first().map(|row| row.get::<_, Vec<u8>>(0)))
    }

    fn get_many(&self, table: Table, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, KernelError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: Vec<Vec<u8>> = keys.iter().map(Key::ordered_bytes).collect();
        let rows = self.query(
            "SELECT key, value FROM loopx_rows WHERE tbl = $1 AND key = ANY($2)",
            &[(&table.number(), Type::INT2), (&wanted, Type::BYTEA_ARRAY)],
        )?;
        let mut found: HashMap<Vec<u8>, Vec<u8>> = rows
            .into_iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        Ok(wanted.iter().map(|key| found.remove(key)).collect())
    }

    fn scan(
        &self,
        table: Table,
        range: Range,
        newest_first: bool,
        visit: &mut Visit<'_>,
    ) -> Result<(), KernelError> {
        let (mut lo, mut hi) = (bound_bytes(range.0), bound_bytes(range.1));
        // Small first pages: most scans stop after a few rows (the newest handoff, a page of
        // the ready index); long ones read ever larger pages.
        let mut page: i64 = 32;
        loop {
            let mut sql = "SELECT key, value FROM loopx_rows WHERE tbl = $1".to_owned();
            let mut params: Vec<(&(dyn ToSql + Sync), Type)> = Vec::with_capacity(4);
            let number = table.number();
            params.push((&number, Type::INT2));
            if let Some(clause) = bound_sql(&lo, true, params.len() + 1) {
                sql.push_str(&clause);
                params.push((bound_value(&lo).expect("bounded"), Type::BYTEA));
            }
            if let Some(clause) = bound_sql(&hi, false, params.len() + 1) {
                sql.push_str(&clause);
                params.push((bound_value(&hi).expect("bounded"), Type::BYTEA));
            }
            sql.push_str(if newest_first {
                " ORDER BY key DESC"
            } else {
                " ORDER BY key"
            });
            sql.push_str(&format!(" LIMIT ${}", params.len() + 1));
            params.push((&page, Type::INT8));
            let rows = self.query(&sql, &params)?;
            let full = rows.len() as i64 == page;
            let mut last = None;
            for row in rows {
                let key: Vec<u8> = row.get(0);
                let value: Vec<u8> = row.get(1);
                if !visit(self.decode_key(table, &key)?, &value)? {
                    return Ok(());
                }
                last = Some(key);
            }
            let Some(last) = last.filter(|_| full) else {
                return Ok(());
            };
            if newest_first {
                hi = Bound::Excluded(last);
            } else {
                lo = Bound::Excluded(last);
            }
            page = (page * 8).min(4096);
        }
    }

    fn len(&self, table: Table) -> Result<u64, KernelError> {
        let rows = self.query(
            "SELECT count(*) FROM loopx_rows WHERE tbl = $1",
            &[(&table.number(), Type::INT2)],
        )?;
        Ok(rows
            .first()
            .map_or(0, |row| row.get::<_, i64>(0).max(0) as u64))
    }
}

impl KvWrite for PgTxn {
    fn put(&self, table: Table, key: &Key, value: &[u8]) -> Result<(), KernelError> {
        self.execute(
            "INSERT INTO loopx_rows (tbl, key, value) VALUES ($1, $2, $3) \
             ON CONFLICT (tbl, key) DO UPDATE SET value = excluded.value",
            &[
                (&table.number(), Type::INT2),
                (&key.ordered_bytes(), Type::BYTEA),
                (&value, Type::BYTEA),
            ],
        )
        .map(drop)
    }

    fn remove(&self, table: Table, key: &Key) -> Result<bool, KernelError> {
        Ok(self.execute(
            "DELETE FROM loopx_rows WHERE tbl = $1 AND key = $2",
            &[
                (&table.number(), Type::INT2),
                (&key.ordered_bytes(), Type::BYTEA),
            ],
        )? > 0)
    }

    fn clear(&self, table: Table) -> Result<(), KernelError> {
        self.execute(
            "DELETE FROM loopx_rows WHERE tbl = $1",
            &[(&table.number(), Type::INT2)],
        )
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redact_url("postgres://loopx:s3cr3t-pass@db.example:5432/loopx"),
            "postgres://loopx:***@db.example:5432/loopx"
        );
        assert_eq!(
            redact_url("postgresql://ann@127.0.0.1/p?password=hunter22&sslmode=disable"),
            "postgres://ann:***@127.0.0.1:5432/p"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h:5432/db");
        // However the password is written, it never shows.
        for url in [
            "postgres://loopx:ab/cd@db/loopx",
            "postgres://loopx:a%40b@db/loopx",
            "postgres://loopx@db/loopx?pass%77ord=hunter22",
            "postgres://loopx:x?y@db/loopx",
        ] {
            let shown = redact_url(url);
            for secret in ["ab/cd", "a@b", "a%40b", "hunter22", "x?y"] {
                assert!(!shown.contains(secret), "{url} shown as {shown}");
            }
        }
        assert_eq!(
            redact_url("postgres://u@h/db?options=-csearch_path%3Dproj"),
            "postgres://u@h:5432/db?options=-csearch_path%3Dproj"
        );
    }

    /// The one rule (`loopx_vocab::url_password`) reads a password where the client does.
    #[test]
    fn the_password_rule_agrees_with_the_client() {
        for url in [
            "postgres://loopx:s3cr3t-pass@db.example:5432/loopx",
            "postgres://u:@h/db",
            "postgres://u@h/db",
            "postgres://u%3Ax@h/db",
            "postgres://u:p%40ss%3Aword@h/db",
            "postgres://loopx:ab/cd@db/loopx",
            "postgres://loopx:x?y@db/loopx",
            "postgresql://ann@127.0.0.1/p?password=hunter22&sslmode=disable",
            "postgres://u:one@h/db?sslmode=disable&pass%77ord=two",
            "postgres://h/db",
        ] {
            let config: postgres::Config = url.parse().expect(url);
            let client = config.get_password().map(String::from_utf8_lossy);
            assert_eq!(
                loopx_vocab::url_password(url).as_deref(),
                client.as_deref(),
                "{url}"
            );
        }
    }
}
