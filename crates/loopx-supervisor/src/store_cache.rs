//! The supervisor's own read-write handle on the store, opened once and shared by its workers.
//!
//! Opening redb read-write and closing it again costs four `fdatasync`s of its own (a header
//! at the open; the allocator state's commit and a shutdown header at the close), on top of the
//! two of each commit. Opened per operation, that was most of loopx's cost per slice on a busy
//! disk. A supervisor therefore opens one handle per project at its first write and keeps it
//! for as long as it runs: a slice's writes cost their commits alone, and decisions read
//! through it without opening anything (before the first write, a decision opens read-only,
//! which syncs nothing either). Other processes (a person's commands, another supervisor) share the file as
//! before: redb's multi-writer mode serialises write transactions, not handles.
//!
//! A handle that met an I/O failure is dropped ([`StoreCache::with`]), and the next operation
//! opens a fresh one: redb latches such a failure until the file is opened again.
//!
//! The simulation makes its supervisor's cache with [`StoreCache::with_faults`]: every handle
//! it opens carries the simulated process's faults (`loopx_kernel::fault`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use loopx_kernel::errors::StoreError;
use loopx_kernel::fault::Faults;
use loopx_kernel::{KernelError, Project, Store};

/// Read-write handles by store file; cloning shares them.
#[derive(Clone, Default)]
pub struct StoreCache {
    handles: Arc<Mutex<HashMap<PathBuf, Arc<Store>>>>,
    faults: Option<Faults>,
}

impl std::fmt::Debug for StoreCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreCache")
    }
}

impl StoreCache {
    /// A cache whose handles inject `faults` into their writes (the simulation).
    pub fn with_faults(faults: Faults) -> StoreCache {
        StoreCache {
            handles: Arc::default(),
            faults: Some(faults),
        }
    }

    /// Whether the (simulated) process these handles belong to has crashed: it writes nothing
    /// more, not even a slice's end from a destructor. Never true in production.
    pub fn dying(&self) -> bool {
        self.faults.as_ref().is_some_and(Faults::dying)
    }

    /// The handle on `project`'s store, opened now if this supervisor has none yet.
    pub fn get(&self, project: &Project) -> Result<Arc<Store>, KernelError> {
        let path = project.store_path();
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(store) = handles.get(&path) {
            return Ok(store.clone());
        }
        // Opened under the lock: two workers starting at once open one handle, not two.
        let store = match &self.faults {
            Some(faults) => Store::open(project)?.with_faults(faults.clone()),
            None => Store::open(project)?,
        };
        let store = Arc::new(store);
        handles.insert(path, store.clone());
        Ok(store)
    }

    /// The handle on `project`'s store if this supervisor has opened one, without opening.
    pub fn cached(&self, project: &Project) -> Option<Arc<Store>> {
        let handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.get(&project.store_path()).cloned()
    }

    /// Runs `f` on the handle; a store failure other than a busy store (a full disk, a damaged
    /// file) drops the handle so that the next call opens afresh.
    pub fn with<T>(
        &self,
        project: &Project,
        f: impl FnOnce(&Store) -> Result<T, KernelError>,
    ) -> Result<T, KernelError> {
        let store = self.get(project)?;
        let result = f(&store);
        if let Err(KernelError::Store(e)) = &result
            && !matches!(e, StoreError::Busy { .. })
        {
            self.forget(project);
        }
        result
    }

    /// Drops every handle (each closes once no operation uses it). Dropped while a panic
    /// unwinds, redb closes without writing, as a killed process would.
    pub fn clear(&self) {
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.clear();
    }

    /// Drops the handle on `project`'s store (it closes once no operation uses it).
    pub fn forget(&self, project: &Project) {
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.remove(&project.store_path());
    }
}
