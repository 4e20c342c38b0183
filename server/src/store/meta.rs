//! The metadata database behind a handle the store can replace, and whether the store can
//! write ([`Writability`]).
//!
//! redb refuses every write after a commit failed on an I/O error (a full disk, typically)
//! until the database is closed and opened again ("Previous I/O error occurred"), while reads
//! still work. The store does that itself: the failure marks it
//! [`Writability::MetadataFailed`], and the next write, or a recovery thread every
//! [`RECOVERY_INTERVAL`], reopens the database once the disk has [`ROOM_TO_RECOVER`] free.
//! Reopening waits until no transaction of the old database is open (every reader holds the
//! handle it reads through, [`Snapshot`]), so a reader in flight keeps its snapshot and no
//! write ever sees two databases. A commit that failed may still have reached the disk: the
//! reopened database says whether it did, and the data file of one that did not is deleted.
//!
//! A data file that meets a full disk fails its write cleanly (the temp file goes); the store
//! then says [`Writability::DiskFull`] until the disk has room again, and refuses new uploads
//! before their body. Either way the client gets `InsufficientStorage` (507) while the disk is
//! full, or `ServiceUnavailable` (503) when the metadata store failed for another reason and is
//! being reopened; the node's readiness reports both.

use std::fmt;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use ferry_core::s3::{S3Error, S3ErrorCode, S3Result};
use redb::{Database, ReadTransaction, ReadableDatabase};

use super::files::{self, FileId};
use super::{Inner, Store, db_err, io_err, referenced_files, stats};

/// Free space the store waits for before it takes writes again after a full disk (1 MiB).
pub const ROOM_TO_RECOVER: u64 = 1 << 20;
/// How often a failed metadata store tries to reopen.
const RECOVERY_INTERVAL: Duration = Duration::from_millis(200);
/// How long a reopen waits for the old database's transactions to end before giving up (the
/// next attempt tries again).
const QUIESCE_WAIT: Duration = Duration::from_secs(2);

/// Whether the store takes writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writability {
    /// It does.
    Writable,
    /// A data file met a full disk: uploads are refused until [`ROOM_TO_RECOVER`] is free.
    DiskFull,
    /// A metadata commit failed (on a full disk, or another I/O error): the database refuses
    /// writes until it is reopened, which the store does once the disk has room.
    MetadataFailed {
        /// The commit met a full disk.
        disk_full: bool,
    },
}

impl fmt::Display for Writability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Writable => f.write_str("writable"),
            Self::DiskFull => write!(
                f,
                "the disk is full (writes answer 507 InsufficientStorage until {} MiB is free)",
                ROOM_TO_RECOVER >> 20
            ),
            Self::MetadataFailed { disk_full: true } => write!(
                f,
                "a metadata commit failed on a full disk (writes answer 507 InsufficientStorage; \
                 the metadata store reopens once {} MiB is free)",
                ROOM_TO_RECOVER >> 20
            ),
            Self::MetadataFailed { disk_full: false } => f.write_str(
                "a metadata commit failed on an I/O error (writes answer 503; the metadata store \
                 is being reopened)",
            ),
        }
    }
}

/// The metadata database and the store's writability.
pub(crate) struct MetaDb {
    path: PathBuf,
    /// `None` only while a reopen failed to open the file again (reads fail too then).
    slot: RwLock<Option<Arc<Database>>>,
    state: Mutex<Writability>,
    /// One reopen at a time.
    reopening: Mutex<()>,
    /// A recovery thread runs.
    recovering: AtomicBool,
    /// Data files whose metadata commit failed: kept or deleted once the reopened database says
    /// whether the commit landed.
    uncertain: Mutex<Vec<FileId>>,
}

impl MetaDb {
    /// The handle of `db`, opened from `path`.
    pub(crate) fn new(path: PathBuf, db: Database) -> Self {
        Self {
            path,
            slot: RwLock::new(Some(Arc::new(db))),
            state: Mutex::new(Writability::Writable),
            reopening: Mutex::new(()),
            recovering: AtomicBool::new(false),
            uncertain: Mutex::new(Vec::new()),
        }
    }

    /// The database now. Holding it keeps a reopen waiting, so hold it for one transaction.
    fn handle(&self) -> S3Result<Arc<Database>> {
        self.slot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(reopening)
    }

    /// redb's page cache counters, unless the database is being reopened.
    pub(crate) fn page_cache(&self) -> Option<super::stats::PageCache> {
        let c = self.handle().ok()?.cache_stats();
        Some(super::stats::PageCache {
            read_hits: c.read_hits(),
            read_misses: c.read_misses(),
            write_hits: c.write_hits(),
            write_misses: c.write_misses(),
            evictions: c.evictions(),
            used_bytes: c.used_bytes() as u64,
        })
    }

    fn state(&self) -> Writability {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A data file met a full disk (a failed metadata store stays failed: it needs a reopen).
    fn disk_full(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *s == Writability::Writable {
            *s = Writability::DiskFull;
            tracing::warn!(store = %self.path.display(), "disk full: writes refused until space is freed");
        }
    }

    /// The data file `id` was staged for a commit that failed.
    pub(crate) fn commit_unknown(&self, id: FileId) {
        self.uncertain
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(id);
    }
}

/// A read transaction and the database it reads: a reopen waits until it is dropped.
pub(crate) struct Snapshot {
    // Declared first: dropped before the handle.
    txn: ReadTransaction,
    _db: Arc<Database>,
}

impl Deref for Snapshot {
    type Target = ReadTransaction;

    fn deref(&self) -> &ReadTransaction {
        &self.txn
    }
}

/// Whether `e` says the disk (or the quota) is full.
pub(crate) fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

/// The answer to a write while the disk is full.
pub(crate) fn insufficient_storage() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::InsufficientStorage,
        "The node's disk is full; retry once space is freed.",
    )
}

/// The answer to a write while the metadata store waits to be reopened.
fn reopening() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::ServiceUnavailable,
        "The metadata store is being reopened after an I/O error; please retry.",
    )
}

impl Inner {
    /// A data file operation failed with `e`: a full disk is `InsufficientStorage` and marks
    /// the store [`Writability::DiskFull`]; anything else is an internal error.
    pub(crate) fn io_failed(&self, e: io::Error) -> S3Error {
        if is_disk_full(&e) {
            self.meta.disk_full();
            return insufficient_storage();
        }
        io_err(e)
    }

    fn has_room(&self) -> bool {
        has_room(&self.root)
    }
}

fn has_room(dir: &Path) -> bool {
    stats::disk_space(dir).is_some_and(|(free, _)| free >= ROOM_TO_RECOVER)
}

impl Store {
    /// Whether the store takes writes now (a full disk is looked at again here).
    pub fn writability(&self) -> Writability {
        let meta = &self.inner.meta;
        let mut s = meta.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *s == Writability::DiskFull && self.inner.has_room() {
            *s = Writability::Writable;
            tracing::info!(store = %meta.path.display(), "disk has room again: writes accepted");
        }
        *s
    }

    /// Whether the store takes writes now.
    pub fn is_writable(&self) -> bool {
        self.writability() == Writability::Writable
    }

    /// A read transaction on the current database.
    pub(crate) fn read_txn(&self) -> S3Result<Snapshot> {
        let db = self.inner.meta.handle()?;
        let txn = db.begin_read().map_err(|e| self.meta_failed(e.into()))?;
        Ok(Snapshot { txn, _db: db })
    }

    /// The database to write in: reopened first if a commit failed (and the disk has room).
    pub(crate) fn write_db(&self) -> S3Result<Arc<Database>> {
        if let Writability::MetadataFailed { .. } = self.inner.meta.state() {
            self.recover()?;
        }
        self.inner.meta.handle()
    }

    /// Before an upload takes its body: `InsufficientStorage` while the disk is full, and a
    /// failed metadata store is reopened if it can be.
    pub(crate) fn check_room(&self) -> S3Result<()> {
        match self.writability() {
            Writability::Writable => Ok(()),
            Writability::DiskFull => Err(insufficient_storage()),
            Writability::MetadataFailed { .. } => self.recover(),
        }
    }

    /// The metadata store failed with `e` (call it while holding the database handle). An I/O
    /// error, or redb's refusal after one, marks the store failed and starts its recovery; the
    /// answer is `InsufficientStorage` on a full disk, else `ServiceUnavailable`.
    pub(crate) fn meta_failed(&self, e: redb::Error) -> S3Error {
        let full = match &e {
            redb::Error::Io(io) => is_disk_full(io),
            redb::Error::PreviousIo => false,
            _ => return db_err(e),
        };
        let meta = &self.inner.meta;
        let state = {
            let mut s = meta.state.lock().unwrap_or_else(PoisonError::into_inner);
            let was_full = matches!(*s, Writability::MetadataFailed { disk_full: true });
            if !matches!(*s, Writability::MetadataFailed { .. }) {
                tracing::warn!(
                    store = %meta.path.display(), error = %e,
                    "metadata commit failed: writes refused until the metadata store is reopened"
                );
            }
            *s = Writability::MetadataFailed {
                disk_full: full || was_full,
            };
            *s
        };
        self.start_recovery();
        match state {
            Writability::MetadataFailed { disk_full: true } => insufficient_storage(),
            _ => reopening(),
        }
    }

    /// Reopen a failed metadata store, if the disk has room; `Ok` if the store is not failed
    /// (any more).
    fn recover(&self) -> S3Result<()> {
        let meta = &self.inner.meta;
        let _one = meta
            .reopening
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let disk_full = match meta.state() {
            Writability::MetadataFailed { disk_full } => disk_full,
            _ => return Ok(()),
        };
        if !self.inner.has_room() {
            return Err(if disk_full {
                insufficient_storage()
            } else {
                reopening()
            });
        }
        // Wait for the transactions of the old database to end: a reader keeps its snapshot,
        // and no handle of the old database is left to write with. New ones wait meanwhile
        // (the slot is locked), so the wait ends.
        let deadline = Instant::now() + QUIESCE_WAIT;
        let mut slot = meta.slot.write().unwrap_or_else(PoisonError::into_inner);
        while slot.as_ref().is_some_and(|db| Arc::strong_count(db) > 1) {
            if Instant::now() >= deadline {
                return Err(reopening());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // The last handle: dropping it closes the database and releases its file lock.
        drop(slot.take());
        let db = Database::create(&meta.path).map_err(|e| {
            tracing::warn!(store = %meta.path.display(), error = %e, "metadata store did not reopen");
            reopening()
        })?;
        // Scanned before anything can write to it, so that the counters match (readers wait
        // for the scan: a reopen is rare, and one pass over the metadata).
        let scanned = referenced_files(&db);
        *slot = Some(Arc::new(db));
        let (referenced, objects, bytes) = scanned.map_err(|e| {
            tracing::warn!(store = %meta.path.display(), error = %e, "reopened metadata store unreadable");
            reopening()
        })?;
        // The commits that failed and did not land leave their data files unreferenced.
        let uncertain = std::mem::take(
            &mut *meta
                .uncertain
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let lost: Vec<FileId> = uncertain
            .into_iter()
            .filter(|id| !referenced.contains(id))
            .collect();
        files::remove_files(&self.inner.data, &lost);
        // A failed commit may have landed after all: count what is there.
        self.inner.counters.reset(objects, bytes);
        self.inner.counters.reopened();
        *meta.state.lock().unwrap_or_else(PoisonError::into_inner) = Writability::Writable;
        drop(slot);
        tracing::info!(store = %meta.path.display(), "metadata store reopened: writes accepted");
        Ok(())
    }

    /// Keep trying to reopen a failed metadata store in the background, so that it recovers
    /// without a write to trigger it (a proxy sends none to a node that is not ready).
    fn start_recovery(&self) {
        let meta = &self.inner.meta;
        if meta.recovering.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("ferry-store-recover".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(RECOVERY_INTERVAL);
                    // The store is gone: nothing to recover.
                    let Some(inner) = weak.upgrade() else { return };
                    let store = Store { inner };
                    let failed = |s: &Store| {
                        matches!(s.inner.meta.state(), Writability::MetadataFailed { .. })
                    };
                    if failed(&store) && store.recover().is_err() {
                        continue;
                    }
                    // Done, unless a failure came meanwhile and found this thread still running.
                    store.inner.meta.recovering.store(false, Ordering::Release);
                    if !failed(&store) || store.inner.meta.recovering.swap(true, Ordering::AcqRel) {
                        return;
                    }
                }
            });
        if spawned.is_err() {
            // The next write tries the reopen itself.
            meta.recovering.store(false, Ordering::Release);
        }
    }
}
