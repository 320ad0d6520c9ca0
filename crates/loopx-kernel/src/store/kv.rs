//! The storage interface: the kernel's tables as ordered maps of keys to bytes, read in one
//! snapshot or written in one transaction. Two backends implement it: redb (`redb_kv.rs`, the
//! embedded default) and PostgreSQL (`pg.rs`). Everything above it (the operations, the
//! indexes, the snapshot's accessors, the consistency check) is written once against it, so
//! both backends run the same kernel.
//!
//! Keys come in the few shapes the tables need ([`Key`]); values are bytes (a `meta` counter is
//! 8 big-endian bytes, an index row is empty). A backend keeps each table in key order: redb by
//! its typed tables, PostgreSQL by [`Key::ordered_bytes`], whose byte order is the key order.

use std::ops::Bound;

use crate::errors::KernelError;

/// A key of one of the kernel's tables.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    /// A record's number, or an index of numbers.
    Num(u64),
    /// A `meta`, `quota` or `agents` key.
    Text(String),
    /// `(goal, todo)` in `waiting_todos`, `(dependency, todo)` in `todo_dependents`.
    Pair(u64, u64),
    /// `(goal, role or "", needs, -priority, id)` in `ready_todos`.
    Ready(u64, String, u8, i64, u64),
}

impl Key {
    pub(crate) fn text(s: &str) -> Key {
        Key::Text(s.to_owned())
    }

    pub(crate) fn num(&self) -> u64 {
        match self {
            Key::Num(n) => *n,
            Key::Pair(_, n) | Key::Ready(_, _, _, _, n) => *n,
            Key::Text(_) => 0,
        }
    }

    /// Bytes whose lexicographic order is the key's order within its table (a table's keys all
    /// have one shape): numbers big-endian, a signed number with its sign bit flipped, a string
    /// inside a tuple escaped (`00` as `00 FF`) and ended by `00 01`.
    pub(crate) fn ordered_bytes(&self) -> Vec<u8> {
        match self {
            Key::Num(n) => n.to_be_bytes().to_vec(),
            Key::Text(s) => s.as_bytes().to_vec(),
            Key::Pair(a, b) => [a.to_be_bytes(), b.to_be_bytes()].concat(),
            Key::Ready(goal, role, needs, priority, id) => {
                let mut out = Vec::with_capacity(8 + role.len() + 2 + 1 + 16);
                out.extend_from_slice(&goal.to_be_bytes());
                for &b in role.as_bytes() {
                    out.push(b);
                    if b == 0 {
                        out.push(0xFF);
                    }
                }
                out.extend_from_slice(&[0, 1, *needs]);
                out.extend_from_slice(&((*priority as u64) ^ (1 << 63)).to_be_bytes());
                out.extend_from_slice(&id.to_be_bytes());
                out
            }
        }
    }

    /// The key [`Key::ordered_bytes`] made, for a table of `shape`; `None` for bytes no key
    /// makes.
    pub(crate) fn from_ordered_bytes(shape: Shape, bytes: &[u8]) -> Option<Key> {
        let be = |b: &[u8]| -> Option<u64> { Some(u64::from_be_bytes(b.try_into().ok()?)) };
        match shape {
            Shape::Numbered | Shape::Set => Some(Key::Num(be(bytes)?)),
            Shape::Meta | Shape::Named => Some(Key::Text(String::from_utf8(bytes.to_vec()).ok()?)),
            Shape::Pair if bytes.len() == 16 => Some(Key::Pair(be(&bytes[..8])?, be(&bytes[8..])?)),
            Shape::Pair => None,
            Shape::Ready => {
                let goal = be(bytes.get(..8)?)?;
                let mut role = Vec::new();
                let mut i = 8;
                loop {
                    match (bytes.get(i)?, bytes.get(i + 1)) {
                        (0, Some(1)) => break,
                        (0, Some(0xFF)) => role.push(0),
                        (0, _) => return None,
                        (&b, _) => {
                            role.push(b);
                            i += 1;
                            continue;
                        }
                    }
                    i += 2;
                }
                let rest = bytes.get(i + 2..)?;
                if rest.len() != 17 {
                    return None;
                }
                let priority = (be(&rest[1..9])? ^ (1 << 63)) as i64;
                Some(Key::Ready(
                    goal,
                    String::from_utf8(role).ok()?,
                    rest[0],
                    priority,
                    be(&rest[9..])?,
                ))
            }
        }
    }
}

/// What a table's keys and values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Number → record.
    Numbered,
    /// Text → number (`meta`).
    Meta,
    /// Text → record (`quota`, `agents`).
    Named,
    /// Numbers, no values.
    Set,
    /// `(u64, u64)`, no values.
    Pair,
    /// `ready_todos` keys, no values.
    Ready,
}

/// Declares [`Table`]: each table once, with its number, its name and its shape.
macro_rules! tables {
    ($($table:ident = $number:literal, $name:literal, $shape:ident;)*) => {
        /// The kernel's tables (see `tables.rs` for what each holds).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Table {
            $($table,)*
        }

        impl Table {
            /// Every table, in the order `loopx store copy` copies them.
            pub(crate) const ALL: &[Table] = &[$(Table::$table,)*];

            /// The table's name (redb's, and the one errors give).
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Table::$table => $name,)*
                }
            }

            /// A small stable number for the table (PostgreSQL's `tbl` column). Never reuse one.
            pub(crate) fn number(self) -> i16 {
                match self {
                    $(Table::$table => $number,)*
                }
            }

            /// What its keys and values are.
            pub(crate) fn shape(self) -> Shape {
                match self {
                    $(Table::$table => Shape::$shape,)*
                }
            }
        }
    };
}

// The numbers and names are on disk (PostgreSQL's `tbl`, redb's table names): never change or
// reuse one; a new table takes the next number.
tables! {
    Meta = 1, "meta", Meta;
    Goals = 2, "goals", Numbered;
    Todos = 3, "todos", Numbered;
    Gates = 4, "gates", Numbered;
    Evidence = 5, "evidence", Numbered;
    Handoffs = 6, "handoffs", Numbered;
    Slices = 7, "slices", Numbered;
    SliceOwners = 8, "slice_owners", Numbered;
    Events = 9, "events", Numbered;
    Spends = 10, "spends", Numbered;
    Quota = 11, "quota", Named;
    Agents = 12, "agents", Named;
    Running = 13, "running_slices", Set;
    ActiveTodos = 14, "active_todos", Set;
    ClaimedTodos = 15, "claimed_todos", Set;
    ReadyTodos = 16, "ready_todos", Ready;
    WaitingTodos = 17, "waiting_todos", Pair;
    Dependents = 18, "todo_dependents", Pair;
    MonitorTodos = 19, "monitor_todos", Pair;
    GoalRevisions = 20, "goal_revisions", Numbered;
}

/// A range of keys.
pub(crate) type Range = (Bound<Key>, Bound<Key>);

/// Every key.
pub(crate) const ALL_KEYS: Range = (Bound::Unbounded, Bound::Unbounded);

/// Called with each row of a scan; `Ok(false)` stops it.
pub(crate) type Visit<'v> = dyn FnMut(Key, &[u8]) -> Result<bool, KernelError> + 'v;

/// Reads inside one snapshot (or one write transaction, which sees its own writes).
pub(crate) trait KvRead {
    fn get(&self, table: Table, key: &Key) -> Result<Option<Vec<u8>>, KernelError>;

    /// Several keys of one table at once (one round trip for a database server).
    fn get_many(&self, table: Table, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>, KernelError> {
        keys.iter().map(|key| self.get(table, key)).collect()
    }

    /// The rows of `range` in key order (`newest_first`: descending) until `visit` says stop.
    fn scan(
        &self,
        table: Table,
        range: Range,
        newest_first: bool,
        visit: &mut Visit<'_>,
    ) -> Result<(), KernelError>;

    /// How many rows `table` has.
    fn len(&self, table: Table) -> Result<u64, KernelError>;
}

/// Writes inside one transaction.
pub(crate) trait KvWrite: KvRead {
    fn put(&self, table: Table, key: &Key, value: &[u8]) -> Result<(), KernelError>;
    /// Whether there was a row.
    fn remove(&self, table: Table, key: &Key) -> Result<bool, KernelError>;
    /// Removes every row of `table`.
    fn clear(&self, table: Table) -> Result<(), KernelError>;
}

/// A `meta` value as stored.
pub(crate) fn meta_bytes(value: u64) -> [u8; 8] {
    value.to_be_bytes()
}

/// A `meta` value from its bytes.
pub(crate) fn meta_value(bytes: &[u8]) -> Result<u64, KernelError> {
    bytes.try_into().map(u64::from_be_bytes).map_err(|_| {
        crate::errors::StoreError::Decode {
            table: "meta".to_owned(),
            why: format!("a counter of {} bytes", bytes.len()),
        }
        .into()
    })
}

/// Helpers every reader has.
pub(crate) trait KvReadExt: KvRead {
    fn meta(&self, key: &str) -> Result<Option<u64>, KernelError> {
        self.get(Table::Meta, &Key::text(key))?
            .map(|b| meta_value(&b))
            .transpose()
    }

    /// The keys of `range`, in order, at most `limit`.
    fn keys(&self, table: Table, range: Range, limit: usize) -> Result<Vec<Key>, KernelError> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.scan(table, range, false, &mut |key, _| {
            out.push(key);
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }

    /// The highest key of `table`.
    fn last_key(&self, table: Table) -> Result<Option<Key>, KernelError> {
        let mut last = None;
        self.scan(table, ALL_KEYS, true, &mut |key, _| {
            last = Some(key);
            Ok(false)
        })?;
        Ok(last)
    }
}

impl<T: KvRead + ?Sized> KvReadExt for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ready() -> impl Strategy<Value = Key> {
        (
            any::<u64>(),
            "[a-z\\x00]{0,4}",
            0u8..2,
            any::<i64>(),
            any::<u64>(),
        )
            .prop_map(|(g, r, n, p, id)| Key::Ready(g, r, n, p, id))
    }

    #[test]
    fn no_two_tables_share_a_number_or_a_name() {
        let numbers: std::collections::BTreeSet<i16> =
            Table::ALL.iter().map(|t| t.number()).collect();
        let names: std::collections::BTreeSet<&str> = Table::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(numbers.len(), Table::ALL.len());
        assert_eq!(names.len(), Table::ALL.len());
        assert_eq!(
            numbers.last(),
            Some(&(Table::ALL.len() as i16)),
            "numbered 1 to N"
        );
    }

    proptest! {
        #[test]
        fn ordered_bytes_sort_like_keys(a in ready(), b in ready()) {
            prop_assert_eq!(a.cmp(&b), a.ordered_bytes().cmp(&b.ordered_bytes()));
            prop_assert_eq!(Key::from_ordered_bytes(Shape::Ready, &a.ordered_bytes()), Some(a));
        }

        #[test]
        fn pairs_sort_like_keys(a in any::<(u64, u64)>(), b in any::<(u64, u64)>()) {
            let (ka, kb) = (Key::Pair(a.0, a.1), Key::Pair(b.0, b.1));
            prop_assert_eq!(ka.cmp(&kb), ka.ordered_bytes().cmp(&kb.ordered_bytes()));
            prop_assert_eq!(Key::from_ordered_bytes(Shape::Pair, &ka.ordered_bytes()), Some(ka));
        }
    }
}
