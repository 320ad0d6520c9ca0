//! The storage interface on redb: each kernel table is a typed redb table of the same name, so
//! the file layout is the one `docs/design/store-format.md` describes (stores written before
//! the interface existed read unchanged).

use std::ops::Bound;
use std::path::Path;

use redb::{
    ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition, TableError,
    WriteTransaction,
};

use super::kv::{Key, KvRead, KvWrite, Range, Shape, Table, Visit, meta_bytes, meta_value};
use crate::errors::KernelError;

type Numbered = TableDefinition<'static, u64, &'static [u8]>;
type Meta = TableDefinition<'static, &'static str, u64>;
type Named = TableDefinition<'static, &'static str, &'static [u8]>;
type Set = TableDefinition<'static, u64, ()>;
type Pair = TableDefinition<'static, (u64, u64), ()>;
type ReadyKey = (u64, &'static str, u8, i64, u64);
type Ready = TableDefinition<'static, ReadyKey, ()>;

/// A redb transaction: a snapshot it owns, or a write transaction its caller commits.
pub(crate) enum Txn<'a> {
    Read(ReadTransaction),
    Write(&'a WriteTransaction),
}

/// The kernel's tables inside one redb transaction.
pub(crate) struct RedbKv<'a> {
    pub(crate) txn: Txn<'a>,
    pub(crate) path: &'a Path,
}

impl RedbKv<'_> {
    fn err(&self, e: impl Into<redb::Error>) -> KernelError {
        super::open::redb_error(self.path, e.into()).into()
    }

    fn writable(&self) -> Result<&WriteTransaction, KernelError> {
        match &self.txn {
            Txn::Write(txn) => Ok(txn),
            Txn::Read(_) => Err(super::open::read_only(self.path)),
        }
    }
}

fn text(key: &Key) -> &str {
    match key {
        Key::Text(s) => s,
        _ => "",
    }
}

fn pair(key: &Key) -> (u64, u64) {
    match key {
        Key::Pair(a, b) => (*a, *b),
        other => (0, other.num()),
    }
}

fn ready(key: &Key) -> (u64, &str, u8, i64, u64) {
    match key {
        Key::Ready(g, r, n, p, id) => (*g, r.as_str(), *n, *p, *id),
        other => (0, "", 0, 0, other.num()),
    }
}

fn bounds<'k, K>(range: &'k Range, typed: impl Fn(&'k Key) -> K) -> (Bound<K>, Bound<K>) {
    let one = |b: &'k Bound<Key>| match b {
        Bound::Included(k) => Bound::Included(typed(k)),
        Bound::Excluded(k) => Bound::Excluded(typed(k)),
        Bound::Unbounded => Bound::Unbounded,
    };
    (one(&range.0), one(&range.1))
}

/// Opens `$def` in the transaction as `$t` and evaluates `$body`; a table a snapshot does not
/// have yet (a store written before it existed) is `$missing`.
macro_rules! with_table {
    ($kv:expr, $def:expr, $t:ident => $body:expr, missing => $missing:expr) => {
        match &$kv.txn {
            Txn::Read(txn) => match txn.open_table($def) {
                Ok($t) => $body,
                Err(TableError::TableDoesNotExist(_)) => $missing,
                Err(e) => Err($kv.err(e)),
            },
            Txn::Write(txn) => {
                let $t = txn.open_table($def).map_err(|e| $kv.err(e))?;
                $body
            }
        }
    };
}

/// Runs `$body` with `$t` bound to the typed definition of `$table`, whatever its shape.
macro_rules! by_shape {
    ($table:expr, $kv:expr, |$t:ident, $shape:ident| $body:tt) => {{
        let name = $table.name();
        match $table.shape() {
            Shape::Numbered => { let $t: Numbered = TableDefinition::new(name); let $shape = Shape::Numbered; by_shape!(@ $kv, $t, $body) }
            Shape::Meta => { let $t: Meta = TableDefinition::new(name); let $shape = Shape::Meta; by_shape!(@ $kv, $t, $body) }
            Shape::Named => { let $t: Named = TableDefinition::new(name); let $shape = Shape::Named; by_shape!(@ $kv, $t, $body) }
            Shape::Set => { let $t: Set = TableDefinition::new(name); let $shape = Shape::Set; by_shape!(@ $kv, $t, $body) }
            Shape::Pair => { let $t: Pair = TableDefinition::new(name); let $shape = Shape::Pair; by_shape!(@ $kv, $t, $body) }
            Shape::Ready => { let $t: Ready = TableDefinition::new(name); let $shape = Shape::Ready; by_shape!(@ $kv, $t, $body) }
        }
    }};
    (@ $kv:expr, $t:ident, $body:tt) => { #[allow(unused_braces)] $body };
}

/// Walks a redb range forwards or backwards, handing each row to `row`.
fn drive<K: redb::Key + 'static, V: redb::Value + 'static>(
    kv: &RedbKv<'_>,
    iter: redb::Range<'_, K, V>,
    newest_first: bool,
    mut row: impl FnMut(redb::AccessGuard<'_, K>, redb::AccessGuard<'_, V>) -> Result<bool, KernelError>,
) -> Result<(), KernelError> {
    let iter: Box<dyn Iterator<Item = _>> = if newest_first {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    for item in iter {
        let (k, v) = item.map_err(|e| kv.err(e))?;
        if !row(k, v)? {
            break;
        }
    }
    Ok(())
}

impl KvRead for RedbKv<'_> {
    fn get(&self, table: Table, key: &Key) -> Result<Option<Vec<u8>>, KernelError> {
        let name = table.name();
        match table.shape() {
            Shape::Numbered => {
                let def: Numbered = TableDefinition::new(name);
                with_table!(self, def, t => Ok(t.get(key.num()).map_err(|e| self.err(e))?.map(|v| v.value().to_vec())), missing => Ok(None))
            }
            Shape::Meta => {
                let def: Meta = TableDefinition::new(name);
                with_table!(self, def, t => Ok(t.get(text(key)).map_err(|e| self.err(e))?.map(|v| meta_bytes(v.value()).to_vec())), missing => Ok(None))
            }
            Shape::Named => {
                let def: Named = TableDefinition::new(name);
                with_table!(self, def, t => Ok(t.get(text(key)).map_err(|e| self.err(e))?.map(|v| v.value().to_vec())), missing => Ok(None))
            }
            Shape::Set => {
                let def: Set = TableDefinition::new(name);
                with_table!(self, def, t => Ok(t.get(key.num()).map_err(|e| self.err(e))?.map(|_| Vec::new())), missing => Ok(None))
            }
            Shape::Pair => {
                let def: Pair = TableDefinition::new(name);
                with_table!(self, def, t => Ok(t.get(pair(key)).map_err(|e| self.err(e))?.map(|_| Vec::new())), missing => Ok(None))
            }
            Shape::Ready => {
                let def: Ready = TableDefinition::new(name);
                with_table!(self, def, t => Ok(t.get(ready(key)).map_err(|e| self.err(e))?.map(|_| Vec::new())), missing => Ok(None))
            }
        }
    }

    fn get_many(&self, table: Table, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, KernelError> {
        if table.shape() != Shape::Numbered {
            return keys.iter().map(|key| self.get(table, key)).collect();
        }
        // One table open for all of them (the decision reads a page of todos this way).
        let def: Numbered = TableDefinition::new(table.name());
        with_table!(self, def, t => {
            let mut out = Vec::with_capacity(keys.len());
            for key in keys {
                out.push(t.get(key.num()).map_err(|e| self.err(e))?.map(|v| v.value().to_vec()));
            }
            Ok(out)
        }, missing => Ok(vec![None; keys.len()]))
    }

    fn scan(
        &self,
        table: Table,
        range: Range,
        newest_first: bool,
        visit: &mut Visit<'_>,
    ) -> Result<(), KernelError> {
        let name = table.name();
        match table.shape() {
            Shape::Numbered => {
                let def: Numbered = TableDefinition::new(name);
                with_table!(self, def, t => {
                    let iter = t.range(bounds(&range, Key::num)).map_err(|e| self.err(e))?;
                    drive(self, iter, newest_first, |k, v| visit(Key::Num(k.value()), v.value()))
                }, missing => Ok(()))
            }
            Shape::Meta => {
                let def: Meta = TableDefinition::new(name);
                with_table!(self, def, t => {
                    let iter = t.range::<&str>(bounds(&range, text)).map_err(|e| self.err(e))?;
                    drive(self, iter, newest_first, |k, v| visit(Key::text(k.value()), &meta_bytes(v.value())))
                }, missing => Ok(()))
            }
            Shape::Named => {
                let def: Named = TableDefinition::new(name);
                with_table!(self, def, t => {
                    let iter = t.range::<&str>(bounds(&range, text)).map_err(|e| self.err(e))?;
                    drive(self, iter, newest_first, |k, v| visit(Key::text(k.value()), v.value()))
                }, missing => Ok(()))
            }
            Shape::Set => {
                let def: Set = TableDefinition::new(name);
                with_table!(self, def, t => {
                    let iter = t.range(bounds(&range, Key::num)).map_err(|e| self.err(e))?;
                    drive(self, iter, newest_first, |k, _| visit(Key::Num(k.value()), &[]))
                }, missing => Ok(()))
            }
            Shape::Pair => {
                let def: Pair = TableDefinition::new(name);
                with_table!(self, def, t => {
                    let iter = t.range(bounds(&range, pair)).map_err(|e| self.err(e))?;
                    drive(self, iter, newest_first, |k, _| {
                        let (a, b) = k.value();
                        visit(Key::Pair(a, b), &[])
                    })
                }, missing => Ok(()))
            }
            Shape::Ready => {
                let def: Ready = TableDefinition::new(name);
                with_table!(self, def, t => {
                    let iter = t.range(bounds(&range, ready)).map_err(|e| self.err(e))?;
                    drive(self, iter, newest_first, |k, _| {
                        let (g, r, n, p, id) = k.value();
                        visit(Key::Ready(g, r.to_owned(), n, p, id), &[])
                    })
                }, missing => Ok(()))
            }
        }
    }

    fn len(&self, table: Table) -> Result<u64, KernelError> {
        by_shape!(table, self, |def, _shape| {
            with_table!(self, def, t => t.len().map_err(|e| self.err(e)), missing => Ok(0))
        })
    }
}

impl KvWrite for RedbKv<'_> {
    fn put(&self, table: Table, key: &Key, value: &[u8]) -> Result<(), KernelError> {
        let txn = self.writable()?;
        let name = table.name();
        let e = |e: redb::StorageError| self.err(e);
        let open = |e: TableError| self.err(e);
        match table.shape() {
            Shape::Numbered => {
                let def: Numbered = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .insert(key.num(), value)
                    .map_err(e)?;
            }
            Shape::Meta => {
                let def: Meta = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .insert(text(key), meta_value(value)?)
                    .map_err(e)?;
            }
            Shape::Named => {
                let def: Named = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .insert(text(key), value)
                    .map_err(e)?;
            }
            Shape::Set => {
                let def: Set = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .insert(key.num(), ())
                    .map_err(e)?;
            }
            Shape::Pair => {
                let def: Pair = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .insert(pair(key), ())
                    .map_err(e)?;
            }
            Shape::Ready => {
                let def: Ready = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .insert(ready(key), ())
                    .map_err(e)?;
            }
        }
        Ok(())
    }

    fn remove(&self, table: Table, key: &Key) -> Result<bool, KernelError> {
        let txn = self.writable()?;
        let name = table.name();
        let e = |e: redb::StorageError| self.err(e);
        let open = |e: TableError| self.err(e);
        Ok(match table.shape() {
            Shape::Numbered => {
                let def: Numbered = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .remove(key.num())
                    .map_err(e)?
                    .is_some()
            }
            Shape::Meta => {
                let def: Meta = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .remove(text(key))
                    .map_err(e)?
                    .is_some()
            }
            Shape::Named => {
                let def: Named = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .remove(text(key))
                    .map_err(e)?
                    .is_some()
            }
            Shape::Set => {
                let def: Set = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .remove(key.num())
                    .map_err(e)?
                    .is_some()
            }
            Shape::Pair => {
                let def: Pair = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .remove(pair(key))
                    .map_err(e)?
                    .is_some()
            }
            Shape::Ready => {
                let def: Ready = TableDefinition::new(name);
                txn.open_table(def)
                    .map_err(open)?
                    .remove(ready(key))
                    .map_err(e)?
                    .is_some()
            }
        })
    }

    fn clear(&self, table: Table) -> Result<(), KernelError> {
        let txn = self.writable()?;
        by_shape!(table, self, |def, _shape| {
            {
                txn.delete_table(def).map_err(|e| self.err(e))?;
                // Recreated at once: a reader (a read-only open) cannot create a table.
                txn.open_table(def).map_err(|e| self.err(e))?;
                Ok(())
            }
        })
    }
}

/// Creates every table of the kernel in a new store, so that readers never meet a missing one.
pub(crate) fn create_tables(kv: &RedbKv<'_>) -> Result<(), KernelError> {
    let txn = kv.writable()?;
    for &table in Table::ALL {
        by_shape!(table, kv, |def, _shape| {
            {
                txn.open_table(def).map_err(|e| kv.err(e))?;
            }
        });
    }
    Ok(())
}
